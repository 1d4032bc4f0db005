"""SQLite store of records and run metadata. Append-only: a record is never updated or deleted.

Each record is committed as soon as it is added, so a killed process loses nothing that finished.
A final re-measure is the exception: its records are committed together (`add_final`), so no
leaderboard stars some finalists of a re-measure that did not finish. A later final re-measure
(a finished run extended with more trials) supersedes an earlier one: the earlier records stay in
the database and `records(..., superseded=True)` reads them, but the run's results are the latest.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterator

from forge.errors import ForgeInputError
from forge.results.record import Record

STORE_NAME = "forge.sqlite"
RUN_FILE = "run.json"      # the run's settings, problem and state, written by forge.tuner
FINAL_FROM = "final_from_id"     # meta: the first record of the final re-measure that counts
_COLS = [f.name for f in fields(Record) if f.name != "id"]
_TYPES = {"median": "REAL", "spread": "REAL", "speedup_unfused": "REAL", "speedup_vendor": "REAL",
          "timestamp": "REAL", "trial": "INTEGER"}


class Store:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
        self.conn.row_factory = sqlite3.Row
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError:   # locked or busy: not damage, reported as sqlite says
            raise
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise ForgeInputError("run", f"{self.path} is not a readable forge store ({exc}); "
                                         "the run folder is damaged") from None
        cols = ", ".join(f"{c} {_TYPES.get(c, 'TEXT')}" for c in _COLS)
        self.conn.execute(f"CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY AUTOINCREMENT, {cols})")
        self.conn.execute("CREATE INDEX IF NOT EXISTS records_key ON records(variant_key)")
        self.conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        # Append-only by construction: the database itself refuses updates and deletes of records.
        self.conn.execute("CREATE TRIGGER IF NOT EXISTS records_no_update BEFORE UPDATE ON records "
                          "BEGIN SELECT RAISE(ABORT, 'records are append-only'); END")
        self.conn.execute("CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records "
                          "BEGIN SELECT RAISE(ABORT, 'records are append-only'); END")

    @classmethod
    def for_run(cls, run_dir: str | Path) -> "Store":
        return cls(Path(run_dir) / STORE_NAME)

    def add(self, rec: Record) -> int:
        row = rec.to_row()
        row.pop("id", None)
        cur = self.conn.execute(
            f"INSERT INTO records ({', '.join(_COLS)}) VALUES ({', '.join('?' for _ in _COLS)})",
            [row[c] for c in _COLS])
        rec.id = int(cur.lastrowid)
        return rec.id

    def add_final(self, recs: list[Record]) -> None:
        """One final re-measure, committed whole; it supersedes any earlier one."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            ids = [self.add(r) for r in recs]
            if ids:
                self.set_meta(FINAL_FROM, min(ids))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def records(self, superseded: bool = False, **where: Any) -> list[Record]:
        return list(self.iter_records(superseded, **where))

    def iter_records(self, superseded: bool = False, **where: Any) -> Iterator[Record]:
        clauses, args = [f"{k} = ?" for k in where], list(where.values())
        final_from = None if superseded else self.get_meta(FINAL_FROM)
        if final_from is not None:
            clauses.append("(phase != 'final' OR id >= ?)")
            args.append(final_from)
        sql = "SELECT * FROM records" + (" WHERE " + " AND ".join(clauses) if clauses else "")
        for row in self.conn.execute(sql + " ORDER BY id", args):
            yield Record.from_row(dict(row))

    def keys(self, phase: str = "search") -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT DISTINCT variant_key FROM records WHERE phase = ?", (phase,))}

    def count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0])

    def set_meta(self, key: str, value: Any) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def close(self) -> None:
        self.conn.close()
