"""`forge replay <cachefile> --strategy <name> --budget 100 --seeds 25`: replay a search offline.

Runs a strategy over a brute-forced Kernel Tuner cache file, or over a forge run folder that
evaluated its whole space (forge.backends.replay), for several
seeds and prints mean best/optimum and the methodology score against random search's exact
expectation (forge.search.random_baseline). Budget = unique evaluations of points in the cache
(failures included); infeasible points cost nothing.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import typer

from forge.errors import ForgeInputError, writing
from forge.search.strategies import sampler_choices


def replay(cachefile: Path = typer.Argument(..., help="Kernel Tuner cache file (.json or .json.gz) "
                                           "or a forge run folder"),
           strategy: str = typer.Option("forge", "--strategy", "-s", help=sampler_choices() + " (or optuna-<sampler>)"),
           budget: int = typer.Option(100, "--budget", "-b", help="unique valid evaluations per run"),
           seeds: int = typer.Option(25, "--seeds", help="runs with seeds 0..seeds-1"),
           batch: int = typer.Option(1, "--batch", help="evaluations in flight at once, as forge "
                                    "tune's executor runs them: each freed slot is refilled while the rest run"),
           options: str | None = typer.Option(None, "--options", help="the strategy's options, e.g. "
                                              "path_floor=0.75,acquisition=ei"),
           export: Path | None = typer.Option(None, "--export", help="write the space as a Kernel Tuner "
                                              "cache file (.json or .json.gz) and exit")) -> None:
    """Replay a search strategy over a brute-forced tuning space and score it."""
    from forge.backends.replay import load_cache
    from forge.cli import parse_pairs
    from forge.search.random_baseline import expected_best_random, score
    from forge.search.strategies import check_strategy_options
    from rich.progress import track

    from forge.report.progress import make_console, plural
    from forge.search.replay_run import run_replay

    try:
        if budget < 1:
            raise ForgeInputError("--budget", f"{budget}: must be >= 1")
        if seeds < 1:
            raise ForgeInputError("--seeds", f"{seeds}: must be >= 1")
        if batch < 1:
            raise ForgeInputError("--batch", f"{batch}: must be >= 1")
        if export is not None:
            _export(cachefile, export)
            return
        opts = parse_pairs(options, "--options")
        check_strategy_options(strategy, opts, "--options")
        data = load_cache(cachefile)
        if budget >= len(data.time_s):   # said before the runs: a strategy's runs over a whole space take long
            typer.echo(f"note: the budget {budget} covers all {len(data.time_s)} valid points: every strategy finds "
                       "the optimum, and the score says nothing"
                       + (f"; each run stops at {len(data.time_s)}" if budget > len(data.time_s) else ""), err=True)
            budget = len(data.time_s)
        con = make_console(stderr=True)
        each = range(seeds)
        if con.is_terminal:          # a live bar on a terminal only: slow samplers take minutes
            each = track(each, description=f"{strategy}, seed", console=con, transient=True)
        results = [run_replay(data, strategy, budget, seed=s, batch=batch, **opts) for s in each]
    except ForgeInputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    if data.run_valid and len(data.time_s) < data.run_valid:
        typer.echo(f"note: the run evaluated {len(data.time_s)} of the {data.run_valid} valid points of its space; "
                   "the optimum and the scores below are over those points only (a whole-space run: "
                   f"forge tune --sampler random --trials {data.run_valid})", err=True)
    if data.time_kind != "measured":
        typer.echo(f"note: the run's times are {data.time_kind} by forge's performance model (its device was "
                   "missing), not measured: the scores rank strategies on the model's space", err=True)
    opt = data.optimum_s
    bests = np.array([r.best_s for r in results])
    mean_best = float(bests.mean())
    # the standard error says how far apart two strategies' means must be to mean anything
    se = f" ± {bests.std(ddof=1) / np.sqrt(seeds) / opt:.4f}" if seeds > 1 else ""
    rnd = expected_best_random(data.time_s, 0, budget)
    fails = sum(r.failures for r in results)
    typer.echo(f"space      {data.name}  ({data.kernel} on {data.device}): {plural(len(data.time_s), 'valid point')}, "
               f"{len(data.time_s) - data.n_ok} failed, optimum {opt * 1e3:.4g} ms")
    typer.echo(f"strategy   {strategy}, budget {budget} unique valid evaluations, {plural(seeds, 'seed')}, batch {batch}"
               + (f", options {', '.join(f'{k}={v}' for k, v in opts.items())}" if opts else ""))
    if seeds > 1 and all(r.proposals == results[0].proposals for r in results[1:]):
        why = (f"the budget covers all {plural(len(data.time_s), 'valid point')}" if len(data.time_s) <= budget
               else f"{strategy} ignores the seed here, as unscrambled qmc does")
        typer.echo(f"note: every seed made the same run ({why}), so the seeds add no information and the ± is "
                   "no error bar", err=True)
    typer.echo(f"best/optimum  {mean_best / opt:.4f}{se}   (mean over seeds{' ± its standard error' if se else ''}; "
               f"exact random expectation {rnd / opt:.4f})")
    # random search finds the optimum too (the budget covers the space, or ties): the score is 0/0
    value = score(mean_best, rnd, opt)
    if value is None and budget < len(data.time_s):
        typer.echo(f"note: random search's expected best at budget {budget} is already the optimum (tied optima), "
                   "so the score says nothing", err=True)
    scored = "—     " if value is None else f"{value:.4f}"
    typer.echo(f"score         {scored}   ((random - strategy)/(random - optimum); 0 = random, 1 = optimum)")
    typer.echo(f"evaluations   {np.mean([r.evaluations for r in results]):.1f} per run, {fails} failed in all, "
               f"simulated build+run {np.mean([r.simulated_s for r in results]):.1f} s per run"
               + (f", {np.mean([r.elapsed_s for r in results]):.1f} s on the clock with {batch} in flight"
                  if batch > 1 else ""))


def _export(source: Path, out: Path) -> None:
    from forge.backends.replay.cache import read_space_doc
    from forge.backends.replay.from_run import write_cache

    if not out.name.endswith((".json", ".json.gz")):
        raise ForgeInputError("--export", f"{out}: a Kernel Tuner cache file is named .json or .json.gz (the "
                                          "ending says whether it is compressed)")
    doc = read_space_doc(source)
    with writing("--export", out):
        out.parent.mkdir(parents=True, exist_ok=True)
        write_cache(doc, out)
    info = doc.get("forge_run") or {}
    valid = info.get("valid")
    typer.echo(f"wrote {out}: {len(doc['cache'])} configurations"
               + (f" of {valid} valid in the run's space" if valid is not None else ""))
    if info.get("time_kind", "measured") != "measured":
        typer.echo(f"note: the times are {info['time_kind']} by forge, not measured; the file's device_name "
                   "says so", err=True)
    if valid is not None and len(doc["cache"]) < valid:
        typer.echo("note: the run did not evaluate every valid point; the points it skipped are "
                   "infeasible in the replayed space", err=True)


def register(app: typer.Typer) -> None:
    app.command("replay")(replay)
