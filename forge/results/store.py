"""SQLite store of records and run metadata. Append-only: a record is never updated or deleted.

Each record is committed as soon as it is added, so a killed process loses nothing that finished.
A final re-measure is the exception: its records are committed together (`add_final`), so no
leaderboard stars some finalists of a re-measure that did not finish. A later final re-measure
(a finished run extended with more trials) supersedes an earlier one: the earlier records stay in
the database and `records(..., superseded=True)` reads them, but the run's results are the latest.

The database keeps SQLite's rollback journal, not its write-ahead log: every committed record is
then in `forge.sqlite` itself (a copy of that one file after a SIGKILL between commits holds them
all; with the log they stayed in `forge.sqlite-wal` until the next open), and a run folder on read-only storage reads
without the log's shared-memory file, which cannot be created there. A store that still has the
log (written by an earlier forge) is turned back where it can be written, and read as it is
with its log where it cannot (read-only storage; a log SQLite cannot replay there is said). Damage,
a lock another program holds past the busy timeout and a full disk are a `StoreError` naming the
file, never an SQLite traceback.
"""
from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
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


BUSY_TIMEOUT_S = 30


class StoreError(ForgeInputError):
    """A store that cannot be read or written: damaged, locked by another program, or on a full or
    read-only disk. Everything committed before it is kept."""


class Store:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._sql("open"):
            self.conn = self._connect()
        try:
            self._create()
        except BaseException:
            self.conn.close()
            raise

    def _create(self) -> None:
        """The tables and the triggers that keep records append-only, where they are missing."""
        with self._sql("write"):
            cols = ", ".join(f"{c} {_TYPES.get(c, 'TEXT')}" for c in _COLS)
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY AUTOINCREMENT, {cols})")
            self.conn.execute("CREATE INDEX IF NOT EXISTS records_key ON records(variant_key)")
            self.conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            # Append-only by construction: the database itself refuses updates and deletes of records.
            self.conn.execute("CREATE TRIGGER IF NOT EXISTS records_no_update BEFORE UPDATE ON records "
                              "BEGIN SELECT RAISE(ABORT, 'records are append-only'); END")
            self.conn.execute("CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records "
                              "BEGIN SELECT RAISE(ABORT, 'records are append-only'); END")

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("PRAGMA journal_mode=DELETE")
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "locked" in text or "busy" in text:
                # a write-ahead-log store another connection holds open cannot be turned back now:
                # used as it is (the log mode reads and writes as well), turned back by a later open
                return conn
            if "readonly" not in text and "unable to open" not in text:
                conn.close()
                raise
            conn.close()
            conn = self._read_only()
        return conn

    def _read_only(self) -> sqlite3.Connection:
        """A write-ahead-log store (an earlier forge's) where it cannot be turned back: read-only
        storage. Read with its log where SQLite can; a log it cannot replay is said, not skipped
        (an `immutable` read would show the store without the records still in it)."""
        uri = self.path.resolve().as_uri()
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            log = self.path.with_name(self.path.name + "-wal")
            if log.is_file() and log.stat().st_size:
                raise StoreError("run", f"{self.path} was written by an earlier forge and still has records in "
                                        f"{log.name}, which SQLite cannot read where the folder cannot be written; "
                                        "copy the run folder somewhere writable to read it") from None
            conn = sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)
        conn.row_factory = sqlite3.Row
        return conn

    @contextmanager
    def _sql(self, doing: str) -> Iterator[None]:
        """SQLite's errors as the store's: what is wrong with which file, and what to do. Misuse of
        SQLite by forge itself (a closed connection, a value it cannot bind) stays a traceback."""
        try:
            yield
        except sqlite3.ProgrammingError:
            raise
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "database is locked" in text or "busy" in text:
                raise StoreError("run", f"{self.path} is locked by another program (forge waits up to "
                                        f"{BUSY_TIMEOUT_S} s; a forge run of this folder would have been named); "
                                        "close it and run the command again") from None
            raise StoreError("run", f"cannot {doing} {self.path}: {text}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreError("run", f"{self.path} is not a readable forge store ({exc}); "
                                    "the run folder is damaged") from None

    @contextmanager
    def _decoding(self) -> Iterator[None]:
        """A stored value that does not decode (a hand edit, damage inside a record)."""
        try:
            yield
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError("run", f"{self.path} holds a record that does not read ({type(exc).__name__}: "
                                    f"{exc}); the run folder is damaged") from None

    @classmethod
    def for_run(cls, run_dir: str | Path) -> "Store":
        return cls(Path(run_dir) / STORE_NAME)

    def add(self, rec: Record) -> int:
        row = rec.to_row()
        row.pop("id", None)
        with self._sql("write"):
            cur = self.conn.execute(
                f"INSERT INTO records ({', '.join(_COLS)}) VALUES ({', '.join('?' for _ in _COLS)})",
                [row[c] for c in _COLS])
        rec.id = int(cur.lastrowid)
        return rec.id

    def add_final(self, recs: list[Record]) -> None:
        """One final re-measure, committed whole; it supersedes any earlier one."""
        self.add_all(recs, final=True)

    def add_all(self, recs: list[Record], final: bool = False) -> None:
        """`recs` committed together or not at all (a run's baselines, a final re-measure)."""
        with self._sql("write"):
            self.conn.execute("BEGIN IMMEDIATE")
        try:
            ids = [self.add(r) for r in recs]
            if ids and final:
                self.set_meta(FINAL_FROM, min(ids))
            with self._sql("write"):
                self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
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
        with self._sql("read"):
            rows = self.conn.execute(sql + " ORDER BY id", args)
            while (row := rows.fetchone()) is not None:
                with self._decoding():
                    rec = Record.from_row(dict(row))
                yield rec

    def keys(self, phase: str = "search") -> set[str]:
        with self._sql("read"):
            return {r[0] for r in self.conn.execute("SELECT DISTINCT variant_key FROM records WHERE phase = ?",
                                                    (phase,))}

    def count(self) -> int:
        with self._sql("read"):
            return int(self.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0])

    def set_meta(self, key: str, value: Any) -> None:
        with self._sql("write"):
            self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        with self._sql("read"):
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        with self._decoding():
            return json.loads(row[0]) if row else default

    def close(self) -> None:
        self.conn.close()
