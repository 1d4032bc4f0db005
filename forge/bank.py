"""Tuning bank: the best known config per (op, shape, dtype, attrs, target), shared across runs.

A SQLite file (default ~/.cache/forge/bank.sqlite, or $FORGE_BANK). An entry is replaced only by a
result that beats it: a measured time beats any modeled one, a modeled time never replaces a
measured one, and within one kind the lower median wins. The banked config timed again takes its
latest time, whichever way it moved: a run offers the time its leaderboard ranks by (the final
re-measure where there is one), and keeping the lowest time ever seen would keep the luckiest draw.
`forge tune` asks `bank_lookup` first and offers its records to `bank_offer` at the end. A hit
skips the search only when the entry stands for at least the search the run asks for: each entry
records `searched`, the most variants a search of the whole space that banked or confirmed it
evaluated (the whole space's valid count where a search covered it). A run asking for more trials,
or an entry found in a restricted space (`--space`, searched 0), makes the banked config the first
one measured and the search runs. The key includes the
problem's attrs (causal, eps, ...) because they change the kernel.

Each entry records the fingerprint of the code that made it (the target's backend, model and
generators: forge.backends.code_fingerprint). An entry made by other code is stale: a changed
generator may make other configs valid or faster, and a changed model other modeled times. A stale
entry is never a hit (the search runs) and any entry of the current code replaces it.
"""
from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from forge.backends import target_code
from forge.problem import Problem

KIND_RANK = {"measured": 1, "modeled": 0}
EXPORT_VERSION = 1      # `forge bank export` files: {"forge_bank": 1, "entries": [...]}
# the fields of an exported entry, those an import requires first (the time's kind too: taken as
# measured when left out, a modeled time would outrank every measured one)
ENTRY_REQUIRED = ("op", "shape", "dtype", "target", "config", "median", "time_kind")
ENTRY_FIELDS = (*ENTRY_REQUIRED, "attrs", "source", "updated", "code", "searched")
COUNTERS = ("hits", "misses", "added", "updated", "retimed", "kept")


def bank_path() -> Path:
    env = os.environ.get("FORGE_BANK")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "forge" / "bank.sqlite"


class Bank:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else bank_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, op TEXT, target TEXT, "
                          "shape TEXT, dtype TEXT, attrs TEXT, config TEXT, median REAL, time_kind TEXT, "
                          "source TEXT, updated REAL)")
        self.conn.execute("CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER)")
        columns = {r["name"] for r in self.conn.execute("PRAGMA table_info(entries)")}
        if "code" not in columns:                 # a bank written before entries recorded their code
            self.conn.execute("ALTER TABLE entries ADD COLUMN code TEXT NOT NULL DEFAULT ''")
        if "searched" not in columns:             # ... or the search behind them: none is assumed
            self.conn.execute("ALTER TABLE entries ADD COLUMN searched INTEGER NOT NULL DEFAULT 0")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Bank":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @staticmethod
    def key(op: str, shape: dict, dtype: str, attrs: dict, target: str) -> str:
        return json.dumps({"op": op, "shape": shape, "dtype": dtype, "attrs": attrs, "target": target}, sort_keys=True)

    def bump(self, name: str, n: int = 1) -> None:
        self.conn.execute("INSERT INTO counters VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + ?",
                          (name, n, n))

    def counters(self) -> dict[str, int]:
        got = {r["name"]: r["value"] for r in self.conn.execute("SELECT * FROM counters")}
        return {c: got.get(c, 0) for c in COUNTERS}

    def get(self, key: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT * FROM entries WHERE key = ?", (key,)).fetchone()
        return _decode(row) if row else None

    def entries(self) -> list[dict[str, Any]]:
        return [_decode(r) for r in self.conn.execute("SELECT * FROM entries ORDER BY op, target, key")]

    def offer(self, entry: dict[str, Any], retime: bool = False) -> str:
        """Store `entry` if it beats the bank's or (`retime`: a run's fresh time) re-times its config;
        returns "added", "updated", "retimed", "kept" or "outranked" (kept: a modeled time offered
        against a measured entry)."""
        key = self.key(entry["op"], entry["shape"], entry["dtype"], entry.get("attrs") or {}, entry["target"])
        old = self.get(key)
        retimed = (retime and old is not None and entry["config"] == old["config"] and same_standing(entry, old)
                   and float(entry["median"]) != float(old["median"]))
        # two searches of one standing together stand for at least the deeper one; a stale or
        # other-kind entry's search says nothing of what this code finds, so it adds no depth, and
        # neither does it to an unconfirmed time (no final re-measure) of another config, which may
        # only look faster
        lends = old is not None and same_standing(entry, old) and (entry.get("confirmed", True)
                                                                    or entry["config"] == old["config"])
        searched = max(int(entry.get("searched") or 0), int(old.get("searched") or 0) if lends else 0)
        if old is not None and not retimed and not replaces(entry, old):
            # a deeper search of the same standing found nothing faster
            if same_standing(entry, old) and searched > int(old.get("searched") or 0):
                self.conn.execute("UPDATE entries SET searched = ? WHERE key = ?", (searched, key))
            # a modeled time is not set against a measured one, however small it is
            return "outranked" if _kind_rank(entry) < _kind_rank(old) else "kept"
        # the banked config itself, now measured (it was modeled) or made by this forge's code: its time
        # is replaced, not beaten by a faster config
        retimed = retimed or (old is not None and entry["config"] == old["config"])
        self.conn.execute("INSERT OR REPLACE INTO entries (key, op, target, shape, dtype, attrs, config, median, "
                          "time_kind, source, updated, code, searched) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                          (key, entry["op"], entry["target"], json.dumps(entry["shape"], sort_keys=True),
                           entry["dtype"], json.dumps(entry.get("attrs") or {}, sort_keys=True),
                           json.dumps(entry["config"], sort_keys=True), float(entry["median"]),
                           entry.get("time_kind", "measured"), entry.get("source", ""),
                           entry.get("updated") or time.time(),
                           entry.get("code", ""), searched))
        return "added" if old is None else "retimed" if retimed else "updated"


def is_current(entry: dict[str, Any]) -> bool:
    """Made by the code this forge runs for the entry's target."""
    return entry.get("code", "") == target_code(entry["target"])


def replaces(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """An entry of the current code replaces a stale one (and is never replaced by one); between
    entries of the same standing, the better result wins."""
    if is_current(new) != is_current(old):
        return is_current(new)
    return beats(new, old)


def same_standing(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Made by the same code, times of the same kind: the two times compare."""
    return is_current(new) == is_current(old) and new.get("time_kind", "measured") == old.get("time_kind", "measured")


def _kind_rank(entry: dict[str, Any]) -> int:
    return KIND_RANK.get(entry.get("time_kind", "measured"), 0)


def beats(new: dict[str, Any], old: dict[str, Any]) -> bool:
    rn, ro = _kind_rank(new), _kind_rank(old)
    if rn != ro:
        return rn > ro
    return float(new["median"]) < float(old["median"])


def _decode(row: sqlite3.Row) -> dict[str, Any]:
    d = dict(row)
    for k in ("shape", "attrs", "config"):
        d[k] = json.loads(d[k])
    return d


BANK_ERRORS = (OSError, sqlite3.Error)   # unwritable folder, not a database, locked past the timeout


def bank_unusable(path: str | Path | None = None) -> str | None:
    """Why the bank cannot be opened, or None. The bank only saves searches: a run goes on without
    it rather than stop over it."""
    try:
        Bank(path).close()
    except BANK_ERRORS as exc:
        return f"{path or bank_path()}: {getattr(exc, 'strerror', None) or exc}"
    return None


def bank_lookup(problem: Problem, target: str,
                path: str | Path | None = None) -> tuple[dict, float, str, int] | None:
    """(config, median seconds, time_kind, searched) of the best known variant, or None (nothing
    banked, or a stale entry: see bank_stale). Whether it answers the run is the tuner's call, which
    counts it (`bank_count`)."""
    with Bank(path) as bank:
        e = _entry(bank, problem, target)
        if e is not None and not is_current(e):
            e = None
        return (e["config"], e["median"], e["time_kind"], int(e.get("searched") or 0)) if e else None


def bank_count(name: str, path: str | Path | None = None) -> None:
    """Count a lookup: "hits" (a run was served) or "misses" (it searched)."""
    with Bank(path) as bank:
        bank.bump(name)


def bank_stale(problem: Problem, target: str, path: str | Path | None = None) -> bool:
    """True when the bank holds an entry for the problem made by other code than this forge's."""
    if path is None and not bank_path().exists():
        return False
    with Bank(path) as bank:
        e = _entry(bank, problem, target)
    return e is not None and not is_current(e)


def _entry(bank: Bank, problem: Problem, target: str) -> dict[str, Any] | None:
    return bank.get(Bank.key(problem.op, problem.shape, problem.dtype, problem.attrs, target))


def bank_neighbours(problem: Problem, target: str, k: int = 3, path: str | Path | None = None,
                    accept: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
    """Best configs of the same op, target, dtype and attributes on the `k` nearest other shapes
    (distance: sum over dimensions of |log2(a / b)|) — the warm start of a new search. With
    `accept`, the `k` nearest whose config it accepts (one valid for the new shape: a nearer
    shape's config that is not would otherwise take a place); a config banked for several shapes
    counts once."""
    if not bank_path().exists() and path is None:
        return []
    with Bank(path) as bank:
        near = []
        for e in bank.entries():
            if (e["op"], e["target"], e["dtype"], e["attrs"]) != (problem.op, target, problem.dtype, problem.attrs):
                continue
            if e["shape"] == problem.shape or set(e["shape"]) != set(problem.shape):
                continue
            dist = sum(abs(math.log2(e["shape"][d] / problem.shape[d])) for d in problem.shape)
            near.append((dist, e["config"]))
    out: list[dict[str, Any]] = []
    for _, cfg in sorted(near, key=lambda x: x[0]):
        if len(out) == k:
            break
        if cfg not in out and (accept is None or accept(cfg)):
            out.append(cfg)
    return out


def bank_offer(records: Iterable[Any], path: str | Path | None = None, searched: int = 0,
               confirmed: bool = True) -> dict[str, int]:
    """Offer ok records (forge.results.Record): per problem the one its leaderboard ranks first (the
    best final re-measure, where the run has one; else the best search time), kept if it beats the
    bank or re-times the banked config. `searched`: the depth of the run's search (see the module
    docstring); `confirmed` False: a measured best that no final re-measure timed again, the
    luckiest of its draws, which takes no depth from the entry it replaces."""
    ok = [r for r in records
          if getattr(r, "status", None) == "ok" and r.median is not None and r.phase in ("search", "final")]
    remeasured = {Bank.key(r.op, r.shape, r.dtype, r.attrs or {}, r.target) for r in ok if r.phase == "final"}
    best: dict[str, Any] = {}
    latest: dict[tuple[str, str], dict[str, Any]] = {}     # the run's last time of each config
    for r in sorted(ok, key=lambda r: r.phase == "final"):  # a config's final time after its search time
        k = Bank.key(r.op, r.shape, r.dtype, r.attrs or {}, r.target)
        cand = {"op": r.op, "shape": r.shape, "dtype": r.dtype, "attrs": r.attrs or {}, "target": r.target,
                "config": r.config, "median": r.median, "time_kind": r.time_kind, "source": r.run_id,
                "code": target_code(r.target), "searched": searched, "confirmed": confirmed}
        latest[(k, json.dumps(r.config, sort_keys=True))] = cand
        if r.phase == "search" and k in remeasured:
            continue
        if k not in best or beats(cand, best[k]):
            best[k] = cand
    # The banked config timed again by the run but not its best: the entry takes that time first, so
    # the run's best is judged against a time the config reproduced, not a lucky earlier one.
    again = []
    with Bank(path) as bank:
        for k, cand in best.items():
            old = bank.get(k)
            mine = latest.get((k, json.dumps(old["config"], sort_keys=True))) if old else None
            if mine is not None and mine["config"] != cand["config"]:
                again.append(mine)
    return offer_entries([*again, *best.values()], path, retime=True)


OFFER_WORDS = {"added": ("new entry added", "new entries added"),
               "updated": ("entry replaced by a better config", "entries replaced by better configs"),
               "retimed": ("entry's config timed again: its time updated", "entries' configs timed again: their "
                                                                            "times updated"),
               "kept": ("entry kept (nothing faster found)", "entries kept (nothing faster found)"),
               "outranked": ("entry kept: it is measured and the time offered is modeled",
                             "entries kept: they are measured and the times offered are modeled")}


def offer_summary(counts: dict[str, int]) -> str:
    """One line for what an offer did, e.g. "entry replaced by a better config" or "3 new entries added"."""
    parts = [OFFER_WORDS[k][0] if n == 1 else f"{n} {OFFER_WORDS[k][1]}" for k, n in counts.items() if n]
    return "; ".join(parts) or "nothing offered"


def offer_entries(entries: Iterable[dict[str, Any]], path: str | Path | None = None,
                  retime: bool = False) -> dict[str, int]:
    """`retime`: the entries are a run's fresh times (an imported bank's are not: its entry for the
    same config is kept unless faster)."""
    counts = {k: 0 for k in OFFER_WORDS}
    with Bank(path) as bank:
        for e in entries:
            counts[bank.offer(e, retime)] += 1
        for k, n in counts.items():
            if n:
                bank.bump("kept" if k == "outranked" else k, n)
    return counts


def export_bank(dest: str | Path, path: str | Path | None = None) -> int:
    with Bank(path) as bank:
        entries = bank.entries()
    for e in entries:
        e.pop("key", None)
    from forge.errors import writing

    with writing("file", dest):
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        Path(dest).write_text(json.dumps({"forge_bank": EXPORT_VERSION, "entries": entries}, indent=1))
    return len(entries)


def import_bank(src: str | Path, path: str | Path | None = None) -> dict[str, int]:
    from forge.errors import ForgeInputError

    try:
        data = json.loads(Path(src).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ForgeInputError("file", f"cannot read bank export {src}: {exc}") from None
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ForgeInputError("file", f"{src} is not a forge bank export (no `entries` list)")
    if data.get("forge_bank") != EXPORT_VERSION:
        raise ForgeInputError("file", f"{src} is a bank export of version {data.get('forge_bank')!r}; this forge "
                                      f"reads version {EXPORT_VERSION}")
    for i, e in enumerate(entries):     # every entry checked before any is offered: all or nothing
        check_entry(e, f"{src}: entries[{i}]")
    return offer_entries(entries, path)


def check_entry(e: Any, where: str) -> None:
    """An imported entry is refused (naming it and the field) unless it could have been banked by a
    run: a known op, target and dtype, the op's own dimensions, a positive finite time of a known
    kind and, when made by this forge's code for the target, a config valid in the problem's space.
    A bad entry would otherwise be served as a hit, or keep every real result out of the bank."""
    from forge.backends import get_backend
    from forge.errors import ForgeInputError
    from forge.ops import get_op
    from forge.targets import get_target

    if not isinstance(e, dict):
        raise ForgeInputError(where, "not an entry (a JSON object)")
    missing = [k for k in ENTRY_REQUIRED if k not in e]
    if missing:
        raise ForgeInputError(where, f"missing {', '.join(missing)}")
    unknown = sorted(set(e) - set(ENTRY_FIELDS))
    if unknown:        # a misspelt field would otherwise be dropped and its default taken
        raise ForgeInputError(f"{where}.{unknown[0]}", f"unknown field; an entry has {', '.join(ENTRY_FIELDS)}")
    for name in ("source", "code"):
        if not isinstance(e.get(name, ""), str):
            raise ForgeInputError(f"{where}.{name}", f"must be a string, got {e[name]!r}")
    updated = e.get("updated", 1.0)
    if isinstance(updated, bool) or not isinstance(updated, (int, float)) or not math.isfinite(updated) or updated <= 0:
        raise ForgeInputError(f"{where}.updated", f"must be a time in seconds since the epoch, got {updated!r}")
    try:
        op = get_op(e["op"])
        get_target(e["target"])
        if not isinstance(e["shape"], dict) or not isinstance(e.get("attrs") or {}, dict):
            raise ForgeInputError("shape", "must be a mapping of dimension to size")
        problem = op.problem(e["shape"], e["dtype"], e.get("attrs") or {})
    except ForgeInputError as exc:
        raise ForgeInputError(f"{where}.{exc.field}", str(exc).removeprefix(f"{exc.field}: ")) from None
    if set(e["shape"]) != set(op.dims):
        raise ForgeInputError(f"{where}.shape", f"{sorted(e['shape'])}: {e['op']} has dimensions {', '.join(op.dims)}")
    median = e["median"]
    if isinstance(median, bool) or not isinstance(median, (int, float)) or not math.isfinite(median) or median <= 0:
        raise ForgeInputError(f"{where}.median", f"must be a positive number of seconds, got {median!r}")
    searched = e.get("searched", 0)
    if isinstance(searched, bool) or not isinstance(searched, int) or searched < 0:
        raise ForgeInputError(f"{where}.searched", f"must be a whole number of variants >= 0, got {searched!r}")
    if e.get("time_kind", "measured") not in KIND_RANK:
        raise ForgeInputError(f"{where}.time_kind", f"{e.get('time_kind')!r}; allowed: {', '.join(KIND_RANK)}")
    if not isinstance(e["config"], dict):
        raise ForgeInputError(f"{where}.config", "must be a mapping of parameter to value")
    if is_current(e):
        try:                 # a problem the target does not take (float32 attention on a GPU)
            space = get_backend(e["target"], measure="model").space(problem)
        except ForgeInputError as exc:
            raise ForgeInputError(f"{where}.{exc.field}", str(exc).removeprefix(f"{exc.field}: ")) from None
        try:
            space.indices(e["config"])
            why = space.check(e["config"])
        except (ForgeInputError, KeyError, TypeError) as exc:
            why = [str(exc)]
        if set(e["config"]) != set(space.names) or why:
            raise ForgeInputError(f"{where}.config", f"not a valid config of {problem.short()} on {e['target']}: "
                                                     f"{'; '.join(why) or 'parameters ' + ', '.join(space.names)}")
