"""Bench leaderboard outputs: terminal (rich), Markdown, JSON and HTML (forge/report/html.py)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from forge.bench.board import build_board
from forge.report.progress import clip, make_console, plural
from forge.report.tables import print_fitted
from forge.report.html import _num, _pct, _shape, _us, render_html
from forge.variant import config_text


def _time(x: float | None, kind: str | None) -> str:
    return "—" if x is None else f"{_us(x)} ({kind or '?'})"


def case_cells(r: dict[str, Any]) -> list[str]:
    what = f"{r['op']} {_shape(r.get('shape'))} {r.get('dtype', '')}" if r.get("op") else ""
    # a long reason (a compiler's output) is cut at a word, marked, never inside a number
    tail = (config_text(r.get("config")) + (f"; {r['criterion_note']}" if r.get("criterion_note") else "")
            if r["status"] == "PASSED" else clip(r.get("reason") or "", 200))
    return [r["source_name"], str(r["case_id"]), what, r["status_text"],
            _time(r.get("time"), r.get("time_kind")), _time(r.get("t_b"), r.get("baseline_time_kind")),
            r.get("baseline_kind") or "", _num(r.get("speedup")), _us(r.get("t_sol")), _num(r.get("sol_score")),
            _num(r.get("hap")), tail]


CASE_HEAD = ["name", "id", "forge problem", "status", "best µs (kind)", "baseline µs (kind)", "baseline",
             "speedup", "T_SOL µs", "SOL score", "HAP", "best config / reason"]


def op_cells(o: dict[str, Any]) -> list[str]:
    return [o["source"], o["name"], ", ".join(o["ops"]), str(o["cases"]), str(o["passed"]), _pct(o["pass_rate"]),
            _num(o["geomean_speedup"])] + [_pct(v) for v in o["fast_p"].values()] + [
            _num(o["mean_sol_score"]), _num(o["cann_score"], 1)]


def op_head(board: dict[str, Any]) -> list[str]:
    return ["source", "name", "forge op", "cases", "passed", "pass rate", "geomean speedup"] + [
        f"fast_{p}" for p in board["total"]["fast_p"]] + ["mean SOL score", "cann-bench score"]


def total_line(board: dict[str, Any]) -> str:
    t = board["total"]
    fp = ", ".join(f"fast_{p}={_pct(v)}" for p, v in t["fast_p"].items())
    # An unfinished bench's scores are the suite's so far: the cases not reached count as failed.
    so_far = f"so far, with {t['not_run']} cases not reached counted as failed: " if t.get("not_run") else ""
    return (f"{so_far}{t['passed']}/{t['cases']} cases passed ({t['supported']} supported), pass rate {_pct(t['pass_rate'])}, "
            f"geomean speedup {_num(t['geomean_speedup'])}, {fp}, mean SOL score {_num(t['mean_sol_score'])}"
            + (f" ({plural(t['sol_unscored'], 'passed case')} without a baseline left out of it and of fast_p: both "
               "need T_b; cann-bench stands in max(10 T_HW, 10 µs) for it)" if t.get("sol_unscored") else "")
            + f", cann-bench total {_num(t['cann_total_score'], 1)}; best times: {t['measured']} measured, "
            f"{t['modeled']} modeled" + (f"; {plural(t['unchecked'], 'case')} not passed: no variant ran where "
                                         f"its output could be checked (compiled and within the limits, "
                                         f"correctness not checked)" if t.get("unchecked") else ""))


def to_markdown(board: dict[str, Any]) -> str:
    def table(head: list[str], rows: list[list[str]]) -> str:
        esc = [[c.replace("|", "\\|") for c in r] for r in rows]
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in esc])

    return "\n\n".join([
        f"# forge bench — {board['suite']} on {board['target']} ({board['target_kind']})",
        *([f"**{board['state']['line']}**"] if board["state"]["line"] else []),
        " ".join([*([f"{board['description'].rstrip('.')}."] if board["description"].strip() else []),
                  f"{board['anchors']}. Times in µs, each marked measured or modeled.",
                  f"{board['correctness']}."]),
        "## Suite totals", total_line(board),
        "## Per problem / operator", table(op_head(board), [op_cells(o) for o in board["operators"]]),
        "## Per case", table(CASE_HEAD, [case_cells(r) for r in board["cases"]]), ""])


def to_terminal(board: dict[str, Any], console: Console | None = None, max_cases: int = 60) -> None:
    console = console or make_console()
    console.print(f"[bold]forge bench — {escape(board['suite'])} on {escape(board['target'])}[/] ({board['target_kind']})")
    if board["state"]["line"]:
        console.print(f"[yellow]{escape(board['state']['line'])}[/]", soft_wrap=True)   # it quotes a command
    print_fitted(console, op_head(board), [op_cells(o) for o in board["operators"]], keys=("source", "name"),
                 wrap=("forge op",), title="per problem / operator")
    shown = board["cases"][:max_cases]
    styles = ["green" if r["status"] == "PASSED" else ("dim" if r["status"] == "UNSUPPORTED" else "red") for r in shown]
    print_fitted(console, CASE_HEAD, [case_cells(r) for r in shown], keys=("name", "id", "forge problem", "status"),
                 wrap=("forge problem", "best config / reason"), styles=styles,
                 title=f"per case (first {max_cases})" if len(board["cases"]) > max_cases else "per case")
    console.print(total_line(board), markup=False)
    console.print(f"{board['correctness']}.", markup=False, style="dim")


def _json_default(o: Any) -> Any:
    return str(o)


def to_json(board: dict[str, Any]) -> str:
    return json.dumps(board, indent=1, default=_json_default)


# A bench's report files, by `forge report --format` name: (file name, renderer).
FILES = {"json": ("leaderboard.json", to_json), "md": ("leaderboard.md", to_markdown),
         "html": ("leaderboard.html", render_html)}


def write_reports(bench_dir: str | Path, console: Console | None = None, terminal: bool = True,
                  board: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write leaderboard.{json,md,html} into a bench folder (from `board`, or built from the folder)
    and print it unless `terminal` is False."""
    bench_dir = Path(bench_dir)
    board = board or build_board(bench_dir)
    paths = {}
    for fmt, (name, render) in FILES.items():
        paths[fmt] = bench_dir / name
        paths[fmt].write_text(render(board))
    if terminal:
        to_terminal(board, console)
    return paths
