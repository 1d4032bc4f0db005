"""`forge bench`: tune a benchmark suite's cases and write its leaderboard (terminal, md, json, html)."""
from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from forge.bench.board import build_board
from forge.bench.render import write_reports
from forge.bench.runner import BENCH_FILE, run_bench
from forge.bench.suites import load_suite
from forge.config import RESULTS_DIR
from forge.errors import ForgeInputError, allowed_list, read_json, writing
from forge.report.progress import plural
from forge.search.strategies import sampler_choices


def bench(
    suite: str = typer.Option(..., "--suite", help="suite name (sol_execbench, cannbench), suite YAML, "
                                                   "or a SOL problem / cann-bench task folder"),
    target: str = typer.Option(..., "--target", help="target name (see `forge targets`)"),
    ops: Optional[list[str]] = typer.Option(None, "--ops", help="only these forge ops or benchmark operator names; "
                                                                "repeat or comma-separate"),
    cases: Optional[list[str]] = typer.Option(None, "--cases", help="only these case ids (cann-bench case_id, "
                                                                    "SOL-ExecBench workload uuid); a range like "
                                                                    "11-17; repeat or comma-separate"),
    budget_per_case: Optional[int] = typer.Option(None, "--budget-per-case", min=1, help="trials per case"),
    out: Optional[Path] = typer.Option(None, "--out", help="bench folder (default results/bench-<suite>-<target>); "
                                                           "rerunning into it resumes"),
    sampler: Optional[str] = typer.Option(None, "--sampler", help="search strategy of every case: "
                                                                     + sampler_choices() + " (default: tune's, forge)"),
    measure: str = typer.Option("auto", "--measure", help="auto | model | device"),
    executor: Optional[str] = typer.Option(None, "--executor", help="local | ray (default: tune's, local)"),
    ray_address: Optional[str] = typer.Option(None, "--ray-address",
                                              help="with --executor ray: join this Ray cluster (default: "
                                                   "RAY_ADDRESS, else the cluster `ray start` runs on this machine, else a local one)"),
    devices: Optional[int] = typer.Option(None, "--devices", min=1, help="with --executor ray: devices measuring "
                                                                         "at once (default 1)"),
    seed: int = typer.Option(0, "--seed", min=0),
    no_bank: bool = typer.Option(False, "--no-bank", help="neither use nor update the tuning bank: no case is "
                                                          "served or warm-started by earlier runs (e.g. to compare "
                                                          "samplers)"),
    reps: Optional[int] = typer.Option(None, "--reps", min=1, help="timed repetitions per variant (default: tune's)"),
    top_k: Optional[int] = typer.Option(None, "--top-k", min=0, help="variants re-measured per case (default: tune's)"),
    no_host_check: bool = typer.Option(False, "--no-host-check", help="CUDA without a GPU: do not check variants "
                                                                      "on the CPU by host emulation"),
    report_only: bool = typer.Option(False, "--report-only", help="rebuild the leaderboard without tuning"),
    retry_refused: bool = typer.Option(False, "--retry-refused", help="tune again the cases an earlier run into "
                                                                      "this folder refused (e.g. after an upgrade)"),
    export_sol: Optional[Path] = typer.Option(None, "--export-sol", help="also write SOL-ExecBench solutions "
                                                                          "(CUDA targets) and traces.jsonl here"),
) -> None:
    """Tune every case of a suite (resumable) and write one leaderboard."""
    from forge.targets import get_target

    get_target(target)   # an unknown target is an input error before anything is loaded or written
    wanted = [o.strip() for item in (ops or []) for o in item.split(",") if o.strip()]
    if ops is not None and not wanted:     # `--ops ""` selects nothing; the whole suite is no --ops at all
        raise ForgeInputError("--ops", f"names no operator ({' '.join(map(repr, ops))}); leave --ops out for the "
                                       "whole suite")
    whole = load_suite(suite)
    s = whole.select(wanted or None)
    unmatched = whole.unmatched(wanted)
    if unmatched:
        names = sorted({c.op for c in whole.cases} | {c.source_name for c in whole.cases})
        raise ForgeInputError("--ops", f"no case of suite {s.name!r} matches {','.join(unmatched)}; "
                                       f"{allowed_list(unmatched[0], names)}")
    if cases is not None:
        ids, held = case_ids(cases), s.case_ids()
        missing = [i for i in ids if i not in held]
        if missing:
            raise ForgeInputError("--cases", f"no case of suite {s.name!r}{' (--ops)' if wanted else ''} has id "
                                             f"{','.join(missing)}; {allowed_list(missing[0], held)}")
        s = s.select_cases(ids)
    name = Path(suite).stem if Path(suite).is_file() else suite     # a suite file: its name without .yaml
    bench_dir = out or RESULTS_DIR / f"bench-{name}-{target}"
    typer.echo(f"suite {s.name}: {plural(len(s.cases), 'case')}, {len(s.unsupported)} unsupported; folder {bench_dir}")
    if not report_only:
        started = time.time()
        counts = run_bench(s, target, bench_dir, budget_per_case=budget_per_case,
                           options={"measure": measure, "seed": seed, "reps": reps, "top_k": top_k,
                                    "sampler": sampler, "executor": executor, "ray_address": ray_address,
                                    "devices": devices, "host_check": False if no_host_check else None,
                                    "bank": False if no_bank else None},
                           retry_refused=retry_refused, progress=typer.echo,
                           command="forge " + shlex.join(sys.argv[1:]))
        typer.echo(f"tuned {counts['tuned']}, skipped (done earlier) {counts['skipped']}, "
                   f"failed {counts['failed']} in {time.time() - started:.1f} s")
    if not (bench_dir / BENCH_FILE).is_file():
        raise ForgeInputError("--out", f"{bench_dir} holds no bench yet; run forge bench without --report-only first")
    if report_only:    # the folder is reported as it is: a suite or target it does not hold is a mistake
        held = read_json("--out", bench_dir / BENCH_FILE)
        if held.get("target") != target:
            raise ForgeInputError("--target", f"{bench_dir} holds a bench on {held.get('target')!r}, not {target!r}")
        if held.get("suite") != s.name:
            raise ForgeInputError("--suite", f"{bench_dir} holds a bench of suite {held.get('suite')!r}, not "
                                             f"{s.name!r}")
    board = build_board(bench_dir)
    for kind, p in write_reports(bench_dir, board=board).items():
        typer.echo(f"{kind}: {p}")
    if export_sol:
        from forge.bench.exporters import export_sol as export

        with writing("--export-sol", export_sol):
            done = export(board, export_sol)
        other = sum(1 for c in board["cases"] if c["source"] != "sol_execbench")
        typer.echo(f"SOL export: {len(done['solutions'])} solutions"
                   + ("" if board["target_kind"] == "cuda" else
                      f" (solutions are CUDA sources; this bench is on {board['target']})")
                   + f", {done['traces']} trace lines, {len(done['skipped'])} not exportable"
                   + (f", {other} cases not from SOL-ExecBench left out" if other else "") + f" -> {export_sol}")
    if board["cases"] and not board["total"]["passed"]:
        # as `forge tune` without a correct variant: a script sees that the bench has no result
        typer.echo(f"no case of {bench_dir} passed: see the reasons in its report; exit status 1", err=True)
        raise typer.Exit(1)


def case_ids(items: list[str]) -> list[str]:
    """`--cases` values as ids: comma-separated, and `a-b` of two numbers as every number from a to b
    (a SOL-ExecBench uuid holds '-' too, but never between two numbers alone)."""
    ids: list[str] = []
    for part in (p.strip() for item in items for p in item.split(",")):
        lo, sep, hi = part.partition("-")
        if sep and lo.isdigit() and hi.isdigit():
            if int(lo) > int(hi):
                raise ForgeInputError("--cases", f"range {part!r} runs backwards; write the smaller id first")
            ids += [str(i) for i in range(int(lo), int(hi) + 1)]
        elif part:
            ids.append(part)
    if not ids:
        raise ForgeInputError("--cases", f"names no case ({' '.join(map(repr, items))}); leave --cases out for "
                                         "every case")
    return list(dict.fromkeys(ids))


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)
