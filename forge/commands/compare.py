"""`forge compare A B`: two bench folders case by case, or two runs of one problem (which found the
faster kernel)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.console import Console

from forge.errors import ForgeInputError, writing
from forge.problem import Problem
from forge.report.progress import fmt_seconds, make_console
from forge.report.tables import print_fitted
from forge.variant import config_text


def _t(seconds: float | None, kind: str | None) -> str:
    return fmt_seconds(seconds) + (" (modeled)" if seconds is not None and kind == "modeled" else "")


def _x(v: float | None) -> str:
    """A ratio to three decimals, or three significant digits where that would read 0.001."""
    return "–" if v is None else f"{v:.3f}" if v >= 0.1 else f"{v:.3g}"


def compare(
    a: Path = typer.Argument(..., help="bench folder or run folder A"),
    b: Path = typer.Argument(..., help="bench folder or run folder B (same kind as A)"),
    show_all: bool = typer.Option(False, "--all", help="benches: list every case, ties too"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="also write the comparison as JSON here"),
) -> None:
    """Compare two bench folders case by case, or two runs of one problem (B/A above 1: A is faster).

    A tie is a difference within the larger spread; a measured time is never set against a modeled one."""
    from forge.bench.runner import BENCH_FILE
    from forge.report.compare import compare_benches, compare_runs

    if a.resolve() == b.resolve():
        raise ForgeInputError("B", f"{b} is A itself; compare two different folders")
    benches = (a / BENCH_FILE).is_file()
    if show_all and not benches:
        raise ForgeInputError("--all", f"lists every case of two benches; {a} is a run, compared in one table already")
    cmp = compare_benches(a, b) if benches else compare_runs(a, b)
    if json_out:      # checked before the comparison is printed, not after
        with writing("--json", json_out):
            json_out.parent.mkdir(parents=True, exist_ok=True)
    con = make_console()
    if benches:
        _print_benches(con, cmp, show_all)
    else:
        _print_runs(con, cmp)
    if json_out:
        with writing("--json", json_out):
            json_out.write_text(json.dumps(cmp, indent=1, default=str))
        con.print(f"wrote {json_out}")


def _print_runs(con: Console, cmp: dict[str, Any]) -> None:
    from forge.report.compare import KINDS_DIFFER

    a, b = cmp["a"], cmp["b"]
    con.print(f"{Problem(**a['problem']).short()} on {a['target']}", highlight=False)
    rows = [(name, r["path"], str(r["sampler"]), f"{r['evaluations']} ({r['ok']})",
             _t(r["time"], r.get("time_kind")) + (f" ± {fmt_seconds(r['spread'])}" if r.get("spread") else ""),
             str(r.get("found_at") or "–"), _x(r.get("speedup_unfused")), _x(r.get("speedup_vendor")),
             config_text(r.get("config"))) for name, r in (("A", a), ("B", b))]
    print_fitted(con, ("", "run", "sampler", "evaluations (ok)", "best", "found at", "× unfused", "× vendor", "config"),
                 rows, keys=("", "run"), wrap=("run", "config"))
    if cmp["verdict"] == KINDS_DIFFER:
        con.print(f"not compared: A's time is {a['time_kind']} and B's {b['time_kind']}; forge does not set one kind "
                  "against the other (tune both the same way: --measure)", highlight=False)
        return
    said = {"A": "A is faster", "B": "B is faster", "tie": "a tie (closer than the larger spread)"}
    con.print(f"B/A {_x(cmp['ratio'])}: {said.get(cmp['verdict'], cmp['verdict'])}"
              + (" (both times modeled)" if a.get("time_kind") == "modeled" else ""), highlight=False)


def _print_benches(con: Console, cmp: dict[str, Any], show_all: bool) -> None:
    from forge.report.compare import KINDS_DIFFER

    for name in ("A", "B"):
        about = cmp[name.lower()]
        con.print(f"{name}: {about['path']} (suite {about.get('suite', '?')}, {about['target']}, sampler "
                  f"{about.get('sampler', '?')}, seed "
                  f"{about.get('seed', '?')}, budget {about['budget_per_case'] or 'default'}"
                  + ("" if about.get("bank", True) else ", --no-bank") + ")", highlight=False)
        if about.get("unfinished"):
            other = "B" if name == "A" else "A"
            con.print(f"[yellow]{name} is not finished[/yellow]: {escape(about['unfinished'])}; its cases not "
                      f"reached count as '{other} only'", soft_wrap=True)
    if cmp.get("settings_differ"):
        con.print(f"[yellow]other settings differ[/yellow]: {escape('; '.join(cmp['settings_differ']))}",
                  soft_wrap=True)
    if cmp["only_a"] or cmp["only_b"]:
        con.print(f"cases in one bench only (not compared): A {cmp['only_a']}, B {cmp['only_b']}")
    if cmp.get("mismatched"):
        con.print(f"[yellow]{len(cmp['mismatched'])} case id(s) name another problem in each bench[/yellow] (not "
                  "compared): " + escape("; ".join(f"{m['key']}: A {m['a']}, B {m['b']}" for m in cmp["mismatched"])),
                  soft_wrap=True)
    head = ("operator", "compared", "B/A", "A faster", "B faster", "ties", "A only", "B only", "speedup A", "speedup B")
    summary = [(o["name"], str(o["compared"]), _x(o["geomean_ratio"]), str(o["a_faster"]), str(o["b_faster"]),
                str(o["ties"]), str(o["a_only"]), str(o["b_only"]), _x(o["geomean_speedup_a"]),
                _x(o["geomean_speedup_b"])) for o in [*cmp["operators"], cmp["total"]]]
    print_fitted(con, head, summary, keys=("operator",), right=head[1:],
                 title="per operator: B time / A time (geomean over cases both passed; > 1: A faster)")
    if cmp["total"].get("kinds_differ"):
        con.print(f"{cmp['total']['kinds_differ']} case(s) passed by both are not compared: one time is measured, "
                  "the other modeled, and forge does not set one kind against the other", highlight=False)
    rows = [r for r in cmp["cases"] if show_all or r["verdict"] != "tie"]
    rows.sort(key=lambda r: (r["ratio"] is None, r["ratio"] or 0.0))
    cases = []
    for r in rows:
        shape = ",".join(f"{k}={v}" for k, v in r["shape"].items())
        cases.append((f"{r['name']} {r['case_id']}", f"{r['op']} [{shape}] {r['dtype']}",
                      _case_time(r["a"]), _case_time(r["b"]),
                      _x(r["ratio"]), "not compared: one measured, one modeled" if r["verdict"] == KINDS_DIFFER else r["verdict"]))
    print_fitted(con, ("case", "problem", "A", "B", "B/A", "faster"), cases, keys=("case", "problem"),
                 wrap=("problem",), right=("A", "B", "B/A"),
                 title=f"cases ({'all' if show_all else 'ties left out'}), B faster first")


def _case_time(side: dict[str, Any]) -> str:
    """A case's best time, or its status; a case stopped part way is marked, its time a best so far."""
    if side["status"] != "PASSED":
        return side["status"]
    return _t(side["time"], side["time_kind"]) + ("" if side.get("finished", True) else " (unfinished)")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
