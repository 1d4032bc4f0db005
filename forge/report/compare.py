"""Two bench folders (case by case) or two runs of one problem side by side: which found the
faster kernel.

The question a change to forge (a sampler, a budget, a generator) or to the hardware raises is
"did it get faster, where, and by how much". A case is compared on the best time of each bench
(the board's `time`), a run on its leaderboard's first row; the ratio is B's time over A's, so
above 1 means A is faster. Two times closer than the larger of their spreads are a tie
(ARCHITECTURE.md, measurement rules); modeled times have no spread, so they tie only when equal.
A case is timed against the other only when it passed in both; a case that passed in one bench
only is listed as such, with the other's status (and, in the JSON, its reason).
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

from forge.bench.board import UNSUPPORTED, build_board
from forge.bench.runner import BENCH_FILE, effective_options
from forge.errors import ForgeInputError
from forge.problem import Problem
from forge.report import scores


# a case's verdict: the faster bench, a tie, or which bench alone has a correct kernel
KINDS_DIFFER = "kinds differ"     # one time measured, the other modeled: not compared
VERDICTS = ("A", "B", "tie", "A only", "B only", "neither", KINDS_DIFFER)


def _board(path: Path, field: str) -> dict[str, Any]:
    if not Path(path).exists():
        raise ForgeInputError(field, f"{path}: no such folder")
    if not (Path(path) / BENCH_FILE).is_file():
        raise ForgeInputError(field, f"{path} is not a forge bench folder (no {BENCH_FILE})")
    return build_board(path)


# Two modeled times closer than this share of the larger are a tie: a model has no spread, and a
# difference of a few parts in ten thousand between two configs' modeled times ranks nothing.
MODEL_TIE = 1e-3


def verdict(a: dict[str, Any], b: dict[str, Any]) -> str:
    """'A', 'B' or 'tie' for two results with a `time` and a `spread`."""
    spread = max(a.get("spread") or 0.0, b.get("spread") or 0.0)
    if a.get("time_kind") == b.get("time_kind") == "modeled":
        spread = max(spread, MODEL_TIE * max(a["time"], b["time"]))
    if abs(a["time"] - b["time"]) <= spread:
        return "tie"
    return "A" if a["time"] < b["time"] else "B"


def _outcome(a: dict[str, Any], b: dict[str, Any], a_ok: bool, b_ok: bool) -> dict[str, Any]:
    """Ratio B/A and verdict. A measured time is not set against a modeled one (ARCHITECTURE.md,
    measurement rules): such a pair has no ratio and the verdict "kinds differ"."""
    if a_ok and b_ok:
        if a["time_kind"] != b["time_kind"]:
            return {"ratio": None, "verdict": KINDS_DIFFER}
        return {"ratio": b["time"] / a["time"], "verdict": verdict(a, b)}
    return {"ratio": None, "verdict": "A only" if a_ok else "B only" if b_ok else "neither"}


def _about(path: str | Path, board: dict[str, Any]) -> dict[str, Any]:
    """What a bench was made with, and how far it got: the header of a comparison."""
    options = effective_options(board.get("options", {}))
    return {"path": str(path), "suite": board["suite"], "target": board["target"],
            "budget_per_case": board.get("budget_per_case"), "sampler": options.get("sampler"),
            "seed": options.get("seed"), "bank": options.get("bank") is not False,
            "unfinished": board["state"]["detail"], "options": options}


def settings_differ(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The search and measurement settings the two benches do not share, beyond those the header
    names (sampler, seed, budget, bank) and where their cases ran: what else a difference in time
    may come from, such as a host check one bench skipped."""
    from forge.bench.runner import PLACEMENT, setting_text

    named = {"sampler", "seed", "bank", "build_workers", "batch", *PLACEMENT}
    return [f"A {setting_text(k, a['options'].get(k))}, B {setting_text(k, b['options'].get(k))}"
            for k in sorted(set(a["options"]) | set(b["options"]))
            if k not in named and a["options"].get(k) != b["options"].get(k)]


PROBLEM = ("op", "shape", "dtype", "attrs")


def compare_benches(path_a: str | Path, path_b: str | Path) -> dict[str, Any]:
    """Case rows joined on the case key (source, operator, case id) where both benches tuned the
    same problem for it, and per benchmark operator the geomean of B/A over the cases both passed,
    with win/tie counts. A key whose problem differs (another suite, or an edited suite file) is
    listed apart: the two times are of different problems."""
    a, b = _board(Path(path_a), "A"), _board(Path(path_b), "B")
    rows_b = {r["key"]: r for r in b["cases"]}
    keys_a = {r["key"] for r in a["cases"]}
    cases, groups, mismatched = [], OrderedDict(), []
    for ra in a["cases"]:
        rb = rows_b.get(ra["key"])
        if rb is None or ra["status"] == rb["status"] == UNSUPPORTED:
            continue
        if ra.get("op") and rb.get("op") and any(ra[k] != rb[k] for k in PROBLEM):
            mismatched.append({"key": ra["key"], "a": _problem(ra), "b": _problem(rb)})
            continue
        row = {"key": ra["key"], "name": ra["source_name"], "case_id": ra["case_id"], "op": ra["op"],
               "shape": ra["shape"], "dtype": ra["dtype"],
               "a": {k: ra.get(k) for k in ("status", "time", "time_kind", "spread", "speedup", "reason", "finished")},
               "b": {k: rb.get(k) for k in ("status", "time", "time_kind", "spread", "speedup", "reason", "finished")},
               **_outcome(ra, rb, ra["status"] == "PASSED", rb["status"] == "PASSED")}
        cases.append(row)
        groups.setdefault((ra["source"], ra["source_name"]), []).append(row)
    about_a, about_b = _about(path_a, a), _about(path_b, b)
    if not cases:
        raise ForgeInputError("B", f"{path_b} (suite {b['suite']}) has no case of the same problem as {path_a} "
                                   f"(suite {a['suite']})" + (f"; {len(mismatched)} case ids are shared but "
                                                              "tune other problems" if mismatched else "")
                                   + ": nothing to compare")
    operators = [_summary(name, grp) | {"source": source} for (source, name), grp in groups.items()]
    return {"a": about_a, "b": about_b, "settings_differ": settings_differ(about_a, about_b),
            "cases": cases, "operators": operators, "total": _summary("all", cases), "mismatched": mismatched,
            "only_a": len(keys_a - rows_b.keys()), "only_b": len(rows_b.keys() - keys_a)}


def _problem(row: dict[str, Any]) -> str:
    return Problem(op=row["op"], shape=row["shape"], dtype=row["dtype"], attrs=row["attrs"]).short()


def _summary(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over `rows`; the geomeans over the cases both benches passed, so the two speedups and
    B/A are figures of one set of cases."""
    count = {v: sum(1 for r in rows if r["verdict"] == v) for v in VERDICTS}
    both = [r for r in rows if r["ratio"] is not None]
    return {"name": name, "cases": len(rows), "compared": len(both),
            "geomean_ratio": scores.geomean(r["ratio"] for r in both),
            "geomean_speedup_a": scores.geomean_speedup([r["a"]["speedup"] for r in both]),
            "geomean_speedup_b": scores.geomean_speedup([r["b"]["speedup"] for r in both]),
            "a_faster": count["A"], "b_faster": count["B"], "ties": count["tie"],
            "a_only": count["A only"], "b_only": count["B only"], "neither": count["neither"],
            "kinds_differ": count[KINDS_DIFFER]}


def _best(path: Path, which: str) -> dict[str, Any]:
    from forge.report.leaderboard import build_leaderboard

    try:
        lb = build_leaderboard(path)
    except ForgeInputError as exc:          # named as the argument it came from
        raise ForgeInputError(which, str(exc).removeprefix(f"{exc.field}: ")) from None
    out: dict[str, Any] = {"path": str(path), "problem": lb.info.get("problem"),
                           "target": lb.info.get("target", {}).get("name"),
                           "sampler": lb.info.get("settings", {}).get("sampler"),
                           "evaluations": sum(lb.status_counts.values()), "ok": lb.status_counts.get("ok", 0)}
    if not lb.rows:
        return out | {"time": None}
    top = lb.rows[0]
    return out | {"time": top.median, "spread": top.spread, "time_kind": top.time_kind, "config": top.config,
                  "found_at": top.trial + 1 if top.trial is not None else None,
                  "speedup_unfused": top.speedup_unfused, "speedup_vendor": top.speedup_vendor}


def compare_runs(path_a: str | Path, path_b: str | Path) -> dict[str, Any]:
    """The best variant of each of two runs of the same problem on the same target."""
    a, b = _best(Path(path_a), "A"), _best(Path(path_b), "B")
    if (a["problem"], a["target"]) != (b["problem"], b["target"]):
        def what(r: dict[str, Any]) -> str:
            return f"{Problem(**r['problem']).short() if r['problem'] else 'no recorded problem'} on {r['target']}"

        raise ForgeInputError("B", f"{path_b} tunes {what(b)}, not {what(a)}: compare runs of one problem on one "
                                   "target (or two bench folders)")
    return {"a": a, "b": b, **_outcome(a, b, a["time"] is not None, b["time"] is not None)}
