"""Timed runs back to back on this CPU: the float64 reference on one BLAS thread, on all, or a pause.

The CPU backend checks every run against the float64 reference in the tuner's own process, right
before the next kernel is started (the final re-measure of a tune runs its finalists back to back).
OpenBLAS keeps its worker threads spinning for a while after a call returns, so a reference
computed on all cores leaves them competing with the next kernel's first repetitions. forge
computes the reference on one BLAS thread (forge/ops/base.py, `Op.check`); this benchmark shows
what that buys, side by side in one run, blocks of the three modes taking turns:

- `one thread`: as forge runs (the reference on one BLAS thread);
- `all threads`: the reference on every BLAS thread numpy starts;
- `all + pause`: all threads, and a pause before each run so the workers fall asleep (the control).

It times the `make demo` problem (configs/demo.yaml) with three variants that use every core, or,
with `--run DIR`, the variants a run re-measured at the end (a `make demo` folder: its finalists).
Per run of `--reps` repetitions it reads max/min; the table gives the share of runs with
max/min above 1.5 and 1.2 and the median max/min.

usage: python benchmarks/host_timing_noise.py [--run results/demo-...] [--rounds 6] [--runs 6] [--reps 5] [--pause 0.3]
"""
from __future__ import annotations

import argparse
import contextlib
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

import forge.ops.base as op_base
from forge.backends import get_backend
from forge.backends.cpu import hwinfo
from forge.config import load_config
from forge.errors import ForgeInputError
from forge.problem import Problem
from forge.results import load
from forge.targets import get_target
from forge.tuner import CACHE_DIR, problem_of, read_run_file
from forge.variant import Variant

MODES = ("one thread", "all threads", "all + pause")
DEMO_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "demo.yaml"


def demo_problem() -> Problem:
    return problem_of(load_config(DEMO_CONFIG).settings()[0])


def pick_variants(backend, problem, n: int, seed: int) -> list[Variant]:
    """n valid configs that run on every core (the case where a spinning BLAS worker competes)."""
    configs = [c for c in backend.space(problem).enumerate().configs()
               if c.get("threads") == hwinfo.cores(backend.target)]
    rng = np.random.default_rng(seed)
    return [Variant(problem, backend.target.name, configs[i]) for i in rng.choice(len(configs), n, replace=False)]


def run_finalists(run: Path) -> tuple[Problem, list[Variant]]:
    """The variants `run` re-measured at the end, on its problem."""
    info = read_run_file(run)
    if (info.get("target") or {}).get("kind") != "cpu":
        raise SystemExit(f"{run}: not a run on the cpu target; this benchmark times kernels on this CPU")
    records = load(run)
    final = records[records.phase == "final"]
    if final.empty:
        raise SystemExit(f"{run}: no re-measured variants (phase 'final') to time")
    problem = Problem(**info["problem"])
    return problem, [Variant(problem, "cpu", config) for config in final.config]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="time this run's finalists instead of three demo variants")
    ap.add_argument("--rounds", type=int, default=6, help="blocks of each mode, taking turns")
    ap.add_argument("--runs", type=int, default=6, help="timed runs per block (the variants in turn)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per run (the demo's search uses 5)")
    ap.add_argument("--pause", type=float, default=0.3, help="seconds before each run in 'all + pause'")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    console = Console()
    backend = get_backend(get_target("cpu"))
    if args.run:
        try:
            problem, variants = run_finalists(args.run)
        except ForgeInputError as exc:
            raise SystemExit(f"error: {exc}") from None
    else:
        problem = demo_problem()
        variants = pick_variants(backend, problem, 3, args.seed)
    built = [(v, backend.build(v, CACHE_DIR)) for v in variants]
    bad = [a.error for _, a in built if not a.ok]
    if bad:
        raise SystemExit(f"build failed: {bad[0]}")
    one_thread = op_base.threadpool_limits
    ratios: dict[str, list[float]] = {m: [] for m in MODES}
    console.print(f"{problem.short()} on {backend.target.name}: {len(variants)} variants, {args.rounds} rounds "
                  f"x {len(MODES)} modes x {args.runs} runs of {args.reps} repetitions")
    try:
        for _ in range(args.rounds):
            for mode in MODES:
                op_base.threadpool_limits = one_thread if mode == "one thread" else (
                    lambda **_: contextlib.nullcontext())
                time.sleep(1.0)           # what the previous block left running settles first
                for i in range(args.runs + 1):
                    v, art = built[i % len(built)]
                    if mode == "all + pause":
                        time.sleep(args.pause)
                    m = backend.run(art, v, seed=i, warmup=2, reps=args.reps, timeout=60)
                    if m.status != "ok":
                        raise SystemExit(f"{v.key()}: {m.status}: {m.reason}")
                    if i:                 # the first run of a block follows the previous mode's run
                        ratios[mode].append(max(m.timings) / min(m.timings))
    finally:
        op_base.threadpool_limits = one_thread
    table = Table(title="back-to-back timed runs: max/min within a run")
    for col in ("reference", "runs", "max/min > 1.5", "max/min > 1.2", "median max/min"):
        table.add_column(col, justify="left" if col == "reference" else "right")
    for mode in MODES:
        r = np.array(ratios[mode])
        table.add_row(mode, str(len(r)), f"{np.mean(r > 1.5):.0%}", f"{np.mean(r > 1.2):.0%}",
                      f"{np.median(r):.3f}")
    console.print(table)


if __name__ == "__main__":
    main()
