"""The tuning loop: problem -> constrained space -> strategy (ask/tell) -> executor -> records.

Everything is persisted as it happens (records in `forge.sqlite`, Optuna trials in
`optuna.sqlite`, settings and space statistics in `run.json`), so `resume(run_dir)` continues a
killed run without losing a record or measuring a variant twice.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from forge.backends import get_backend, target_code
from forge.backends.base import BASELINE_NAMES, NOT_CHECKED, Backend, unchecked
from forge.bank import (BANK_ERRORS, bank_count, bank_lookup, bank_neighbours, bank_offer, bank_path, bank_stale,
                        bank_unusable, offer_summary)
from forge.config import RESULTS_DIR, TuneSettings, pydantic_error, shape_folder
from forge.errors import ForgeInputError, MachineFault, machine_fault, read_json, writing
from forge.executor import Executor, Job, Outcome, check_placement, make_executor, refuse_device_without_one
from forge.ops import get_op
from forge.paths import cache_dir
from forge.problem import Problem
from forge.report.progress import fmt_seconds, make_console, plural
from forge.results import Record, Store
from forge.results.record import failed_finalists
from forge.results.store import RUN_FILE, STORE_NAME, StoreError
from forge.results.lock import LOCK_FILE, folder_lock
from forge.results.remeasure import shift_of_records
from forge.search.strategy import Strategy
from forge.space import Enumeration, Space
from forge.targets import get_target
from forge.variant import Variant, config_text

# Baselines older than this when the final re-measure starts are timed again beside it, so a
# speedup never divides times taken under different machine load.
BASELINE_RETIME_AFTER_S = 60.0
# A final record's extra key: the baselines were timed right before its re-measure, so they were
# timed with it and a shift in it needs no re-time after (forge/results/remeasure.py).
BASELINES_TIMED_BEFORE = "baselines_timed_before"
# The final re-measure splits its repetitions over this many runs of each candidate, the candidates
# taking turns: a time varies from run to run (process start, placement, page layout) by more than
# the spread within one run, so one disturbed run must not set a finalist's time, and drift during
# the re-measure must fall on every finalist alike. The pooled spread then holds the run-to-run part.
FINAL_ROUNDS = 3
OPTUNA_FILE = "optuna.sqlite"
# Store meta key: seconds of search a time budget has counted so far, kept across resumes.
SEARCH_SECONDS = "search_seconds"
CACHE_DIR = cache_dir()


def default_run_dir(op: str, target: str) -> Path:
    return RESULTS_DIR / f"{op}-{target}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


def input_seed(variant: Variant, seed: int, phase: str) -> int:
    """Fresh random inputs per check, reproducible from the run's seed."""
    h = hashlib.sha256(f"{variant.key()}:{seed}:{phase}".encode()).digest()
    return int.from_bytes(h[:4], "little")


def _strategy_for_run(ctx: Context, enum: Enumeration) -> Strategy:
    """The run's strategy on its Optuna study file. The study is a cache of what forge.sqlite holds
    (the strategy is warm-started from the records), so a damaged one is set aside and begun again
    rather than stopping the resume."""
    path = (ctx.run_dir / OPTUNA_FILE).resolve()
    try:
        return make_strategy(ctx.settings, enum, f"sqlite:///{path}")
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy's errors, whichever the damage raises
        if (type(exc).__module__.split(".")[0] != "sqlalchemy" or not path.is_file()
                or "locked" in str(exc)):            # held by another program: not damage
            raise
        aside = path.with_name(f"{OPTUNA_FILE}.damaged-{int(time.time())}")
        for side in ("-journal", "-wal", "-shm"):    # a stale journal must not roll into the new study
            if path.with_name(path.name + side).exists():
                path.with_name(path.name + side).rename(aside.with_name(aside.name + side))
        path.rename(aside)
        ctx.console.print(f"{OPTUNA_FILE} did not read ({str(exc).splitlines()[0]}); set aside as {aside.name} and "
                          "begun again from the run's records", markup=False, highlight=False)
        return make_strategy(ctx.settings, enum, f"sqlite:///{path}")


def make_strategy(settings: TuneSettings, enum: Enumeration, storage: str | None) -> Strategy:
    from forge.search.strategies import get_strategy

    strategy = get_strategy(settings.sampler, enum, settings.seed, storage=storage, study_name="forge",
                            **settings.sampler_options)
    strategy.budget = settings.trials
    return strategy


@dataclass
class Context:
    """What one tuning run knows while it runs."""

    settings: TuneSettings
    problem: Problem
    backend: Backend
    run_dir: Path
    store: Store
    console: Console
    run_id: str
    baselines: dict[str, Record] = field(default_factory=dict)
    best: float | None = None
    best_kind: str = ""
    evaluated: int = 0
    since_improvement: int = 0
    fresh_patience: bool = False    # patience counted from this invocation (tune's argument)
    bank: bool = False              # settings.bank, and the bank could be opened
    measured: bool = False          # times are measured here (run.json "measured")
    banked_first: dict[str, Any] | None = None     # the bank's config, not an answer to this run: measured first
    search_depth: int = 0           # what the bank records of this run's search (forge.bank "searched")


def problem_of(settings: TuneSettings) -> Problem:
    problem = get_op(settings.op).problem(settings.shape, settings.dtype, settings.attrs)
    return replace(problem, acceptance=settings.acceptance) if settings.acceptance else problem


def _with_build_time(extra: dict, art) -> dict:
    """Keep what the compile cost (a cache hit costs nothing): a run then doubles as a replayable
    space whose simulated time budget counts compilation too."""
    if art is None:
        return extra
    return {**extra, "build_seconds": 0.0 if art.cached else round(art.build_seconds, 4)}


def outcome_record(ctx: Context, o: Outcome) -> Record:
    m, v = o.measurement, o.job.variant
    art = o.artifact
    resources = dict(o.verdict.resources)
    if art is not None:
        resources.update({k: val for k, val in art.resources.items() if k != "violations"})
    rec = Record(
        run_id=ctx.run_id, variant_key=v.key(), op=v.problem.op, shape=v.problem.shape,
        dtype=v.problem.dtype, target=v.target, config=v.config, status=m.status, reason=m.reason,
        phase=o.job.phase, attrs=v.problem.attrs, errors=m.errors,
        timings=m.timings if m.status == "ok" else [], source_hash=art.source_hash if art else "",
        toolchain=art.toolchain if art else "", flags=art.flags if art else [], host=o.host or "",
        device=ctx.backend.target.name, time_kind=m.time_kind, trial=o.job.trial,
        resources=resources, extra=_with_build_time(m.extra, art))
    if rec.median:
        for name, base in ctx.baselines.items():
            if base.median and base.time_kind == rec.time_kind:
                setattr(rec, f"speedup_{name}", base.median / rec.median)
    return rec


def _write_run_file(run_dir: Path, data: dict[str, Any]) -> None:
    tmp = run_dir / (RUN_FILE + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(run_dir / RUN_FILE)


def folder_kind(folder: Path) -> str | None:
    """"a run" or "a bench" where `folder` is one (holds run.json or bench.json), else None."""
    from forge.bench.runner import BENCH_FILE

    return "a run" if (folder / RUN_FILE).is_file() else "a bench" if (folder / BENCH_FILE).is_file() else None


def holds_runs(folder: Path) -> bool:
    """Whether `folder` has run or bench folders inside it (a config's shape<i> runs, a results
    folder): a run written there would hide them from `forge runs` and mix with them."""
    return folder.is_dir() and any(folder_kind(p) for p in folder.iterdir() if p.is_dir())


def _run_file_damage(info: dict[str, Any]) -> str | None:
    """What in run.json is not as forge writes it (a hand edit, a partial copy), else None: every
    reader (report, show, runs, resume) would otherwise fail on it with a traceback of its own."""
    from forge.ops import OPS

    pr = info["problem"]
    shape = pr.get("shape")
    if pr.get("op") not in OPS:
        return f"problem.op {pr.get('op')!r} is not an operator (allowed: {', '.join(sorted(OPS))})"
    if not isinstance(shape, dict) or not all(isinstance(v, int) and not isinstance(v, bool) for v in shape.values()):
        return f"problem.shape {shape!r} is not a mapping of dimension to size"
    if not isinstance(pr.get("dtype"), str) or not isinstance(pr.get("attrs", {}), dict):
        return "problem.dtype or problem.attrs is not as forge writes it"
    for key in ("settings", "target", "space"):
        if key in info and not isinstance(info[key], dict):
            return f"{key} is not a mapping"
    if isinstance(info.get("target"), dict) and not isinstance(info["target"].get("name", ""), str):
        return "target.name is not a name"
    return None


def read_run_file(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / RUN_FILE
    if not Path(run_dir).exists():
        raise ForgeInputError("run", f"{run_dir}: no such folder")
    if not path.is_file():
        from forge.bench.runner import BENCH_FILE, CASES_DIR

        hint = ""
        if (Path(run_dir) / BENCH_FILE).is_file():
            hint = f"; it is a bench folder: its cases' runs are in {Path(run_dir) / CASES_DIR}/<case>"
        elif (shape_folder(run_dir, 0) / RUN_FILE).is_file():
            hint = (f"; it is the folder of a config's shapes: run the same `forge tune --config … --out {run_dir}` "
                    f"again to continue them all, or resume one: forge tune --resume {shape_folder(run_dir, 0)}")
        elif holds_runs(Path(run_dir)):
            hint = f"; it holds run or bench folders: `forge runs {run_dir}` lists them"
        raise ForgeInputError("run", f"{run_dir} is not a forge run folder (no {RUN_FILE}){hint}")
    info = read_json("run", path)
    if not isinstance(info, dict) or not isinstance(info.get("problem"), dict):
        raise ForgeInputError("run", f"{path} has no problem; the run folder is damaged")
    wrong = _run_file_damage(info)
    if wrong:
        raise ForgeInputError("run", f"{path}: {wrong}; the run folder is damaged")
    if info.get("evaluated") and not (Path(run_dir) / STORE_NAME).is_file():
        raise ForgeInputError("run", f"{run_dir} has lost its records ({STORE_NAME} is missing; {RUN_FILE} says "
                                     f"{info['evaluated']} variants were evaluated); the run folder is damaged")
    return info


def check_records(run_dir: Path, info: dict[str, Any], count: int) -> None:
    """A finished run whose store holds no records lost them (an emptied or replaced database):
    said so, rather than shown as a run that evaluated nothing or searched again from scratch."""
    if info.get("evaluated") and count == 0:
        raise ForgeInputError("run", f"{Path(run_dir) / STORE_NAME} holds no records but {RUN_FILE} says "
                                     f"{info['evaluated']} variants were evaluated; the run folder is damaged")


def measure_baselines(ctx: Context, executor: Executor, again: bool = False) -> None:
    """Baselines at the start (once per run), and `again` right before the final re-measure so the
    reported speedups compare times taken minutes apart at most. The latest record of each wins."""
    done = {r.config.get("baseline"): r for r in ctx.store.records(phase="baseline")}
    if not done or again:
        if ctx.measured:     # modeled baselines take no time (and the CPU models none): nothing to wait for
            ctx.console.print("[dim]re-timing baselines…[/dim]" if again else "[dim]measuring baselines…[/dim]")
        s = ctx.settings
        try:
            bases = executor.baselines(ctx.problem, seed=s.seed, reps=s.reps, timeout=s.timeout * 4, warmup=s.warmup,
                                       vendor=s.vendor)
        except Exception as exc:  # a baseline failing must not stop the search, unless the machine failed
            fault = machine_fault(str(exc))
            if fault:
                raise MachineFault("baselines", f"{fault} ({type(exc).__name__}: {str(exc)[:200]}); nothing "
                                   "is recorded for the baselines") from exc
            ctx.console.print(f"[yellow]baselines failed: {type(exc).__name__}: {escape(str(exc))}[/yellow]")
            bases = []
        recs = []
        for b in bases:
            m = b.measurement
            recs.append(Record(run_id=ctx.run_id, variant_key=f"baseline:{b.name}", op=ctx.problem.op,
                             shape=ctx.problem.shape, dtype=ctx.problem.dtype, target=ctx.backend.target.name,
                             config={"baseline": b.name}, status=m.status, reason=m.reason, phase="baseline",
                             attrs=ctx.problem.attrs, errors=m.errors, timings=m.timings if m.status == "ok" else [],
                             device=ctx.backend.target.name, time_kind=m.time_kind, host=b.host,
                             extra={"label": b.label, **m.extra}))
        for rec in recs:      # all or none: a resume measures the baselines again only when none is recorded
            refuse_machine_fault(rec)
        ctx.store.add_all(recs)
        done.update((rec.config["baseline"], rec) for rec in recs)
    ctx.baselines = {k: r for k, r in done.items() if r.status == "ok"}


def refuse_machine_fault(rec: Record) -> None:
    """Stop, recording nothing, when a failure names the machine (a full disk) rather than the code:
    recorded, it would stand as the variant's (or baseline's, or finalist's) failure, which no resume
    retries, and leave a finalist unranked."""
    fault = machine_fault(rec.reason) if rec.status != "ok" else None
    if fault:
        what = {"baseline": "baseline", "final": "finalist"}.get(rec.phase, "variant")
        raise MachineFault("build" if rec.status == "compile_error" else "run",
                           f"{fault} ({rec.reason.strip().splitlines()[-1][:200]}); the {what} is not "
                           f"recorded as failed, since its code is not what failed (the build cache is "
                           f"{CACHE_DIR})")


def _note_result(ctx: Context, rec: Record) -> None:
    if rec.phase != "search":
        return
    ctx.evaluated += 1
    if rec.status == "ok" and rec.median is not None and (ctx.best is None or rec.median < ctx.best):
        ctx.best, ctx.best_kind = rec.median, rec.time_kind
        ctx.since_improvement = 0
    else:
        ctx.since_improvement += 1


def refuse_past_timeout(problem: Problem, backend: Backend, settings: TuneSettings) -> None:
    """A problem whose measurement alone (its roofline bound at every call, and what the harness
    does between calls) exceeds --timeout would have every variant time out, one timeout after
    another: refused before anything is built, naming what it is made of."""
    floor, parts = backend.measurement_floor(problem, settings.warmup, settings.reps)
    if floor > settings.timeout:
        raise ForgeInputError("--timeout", f"{problem.short()} on {backend.target.name}: one measurement takes at "
                                           f"least {fmt_seconds(floor)} ({parts}), so no variant can finish within "
                                           f"--timeout {settings.timeout:g} s; raise --timeout, lower --reps, or give "
                                           "a smaller shape")


def dtype_the_target_takes(settings: TuneSettings) -> list[str]:
    """Where the settings' dtype (float32 when none was given) is one the target does not take for
    the op, the dtypes it does take, in the op's order; else nothing. A run with no --dtype then
    starts in the first of them instead of stopping (attention on a GPU takes float16/bfloat16)."""
    problem = problem_of(settings)
    backend = get_backend(get_target(settings.target), measure=settings.measure, host_check=settings.host_check)
    return [] if backend.supports(problem) is None else backend.dtypes_taken(problem)


def checked_problem(settings: TuneSettings, backend: Backend | None = None) -> tuple[Problem, Backend, Space]:
    """The settings' problem, backend and (restricted) space, refused with an input error when the
    target cannot take it: no generator for the op or dtype, a space restriction naming an unknown
    parameter or value, or data larger than the memory they would be run in (`Backend.too_big`)."""
    problem = problem_of(settings)
    target = get_target(settings.target)
    backend = backend or get_backend(target, measure=settings.measure, host_check=settings.host_check)
    refusal = backend.refusal(problem)
    if refusal:
        raise refusal
    too_big = backend.too_big(problem, here=settings.executor == "local")
    if too_big:
        raise ForgeInputError("shape", too_big)
    return problem, backend, backend.space(problem).restrict(settings.space)


def tune(settings: TuneSettings, console: Console | None = None, resume: bool = False,
         backend: Backend | None = None, fresh_patience: bool = False) -> Path:
    """Run (or continue) one tuning run; returns its folder. `backend` replaces the target's own
    (tests plant faults this way); `fresh_patience`: count patience from this invocation (a resume
    that raised a limit)."""
    console = console or make_console(stderr=True)
    problem, backend, space = checked_problem(settings, backend)
    target = backend.target
    t0 = time.perf_counter()
    enum = space.enumerate()
    enum_seconds = time.perf_counter() - t0
    if len(enum) == 0:
        counts = ", ".join(f"{k}: {v}" for k, v in enum.reason_counts.items() if v)
        first = space.config_from_indices([0] * len(space.params))
        raise ForgeInputError("space", f"no valid variant among {enum.cartesian} points ({counts}); e.g. "
                                       f"{first}: {'; '.join(space.check(first))}")

    if not settings.host_check and not backend.checks_on_host:
        console.print(f"note: --no-host-check changes nothing on {target.name}: it turns off only the host check "
                      "of a CUDA target without a GPU", highlight=False)
    check_placement(settings.devices, settings.executor, backend, settings.ray_address)
    if settings.executor == "local":
        can_measure = backend.measure_available()
        refuse_device_without_one(settings.measure, can_measure)
        if can_measure[0] and settings.measure != "model":
            refuse_past_timeout(problem, backend, settings)
    if settings.executor == "ray":
        from forge.executor.ray_executor import check_reachable

        check_reachable(settings.ray_address)   # before anything is written
    run_dir = Path(settings.out) if settings.out else default_run_dir(problem.op, target.name)
    from forge.bench.runner import BENCH_FILE

    if (run_dir / BENCH_FILE).is_file():
        raise ForgeInputError("--out", f"{run_dir} holds a forge bench ({BENCH_FILE}), not a run; give another --out")
    if not (run_dir / RUN_FILE).is_file() and holds_runs(run_dir):
        raise ForgeInputError("--out", f"{run_dir} holds runs of its own (a config's shape folders, or a results "
                                       "folder; `forge runs` lists them); give another --out")
    others = sorted(p.name for p in run_dir.iterdir() if not _forge_file(p.name)) if run_dir.is_dir() else []
    if others and not (run_dir / RUN_FILE).is_file():
        raise ForgeInputError("--out", f"{run_dir} holds files that are not a forge run's ({', '.join(others[:3])}"
                                       f"{', …' if len(others) > 3 else ''}); give a new or empty folder")
    created = not run_dir.exists()
    with writing("--out", run_dir, "the run folder"):
        run_dir.mkdir(parents=True, exist_ok=True)
    try:
        return _tune_in(settings, problem, backend, space, enum, enum_seconds, run_dir, console, resume,
                        fresh_patience)
    except BaseException:
        if created and not (run_dir / RUN_FILE).is_file():
            # refused or stopped before the run began (a Ray slot that cannot measure, a Ctrl-C while
            # Ray starts): nothing was recorded, and an empty folder would only read as a damaged run
            shutil.rmtree(run_dir, ignore_errors=True)
        raise


def _forge_file(name: str) -> bool:
    """Whether a run folder's entry is one forge writes there (its store with SQLite's side files,
    the Optuna study, the lock, run.json and its temporary, a bench's case marker), or a hidden
    file (.gitkeep), which mixes nothing into the run."""
    from forge.bench.runner import CASE_MARKER

    return (name.startswith(".") or name in (RUN_FILE, RUN_FILE + ".tmp", LOCK_FILE, CASE_MARKER)
            or name.startswith((STORE_NAME, OPTUNA_FILE)))


def _tune_in(settings: TuneSettings, problem: Problem, backend: Backend, space: Space, enum: Enumeration,
             enum_seconds: float, run_dir: Path, console: Console, resume: bool, fresh_patience: bool) -> Path:
    """tune() once the run folder exists: the run itself, under the folder's lock."""
    with folder_lock(run_dir, "--resume" if resume else "--out"):
        store = Store.for_run(run_dir)
        if not resume and store.count():
            raise ForgeInputError("--out", f"{run_dir} already holds a run; use `forge tune --resume {run_dir}`")
        if not resume and (run_dir / RUN_FILE).is_file():
            # a run stopped before it recorded anything: started again only as the same problem
            before = read_run_file(run_dir)
            was = (before.get("problem"), (before.get("target") or {}).get("name"))
            now = ({"op": problem.op, "shape": problem.shape, "dtype": problem.dtype, "attrs": problem.attrs},
                   backend.target.name)
            if was != now:
                op, shape = (was[0] or {}).get("op"), (was[0] or {}).get("shape") or {}
                dims = ",".join(f"{k}={v}" for k, v in shape.items())
                raise ForgeInputError("--out", f"{run_dir} holds a run of {op}[{dims}] "
                                               f"{(was[0] or {}).get('dtype')} on {was[1]} (started, nothing recorded "
                                               f"yet), not {problem.short()} on {backend.target.name}; give another "
                                               f"--out, or resume it: forge tune --resume {run_dir}")
        run_id = store.get_meta("run_id") or run_dir.name
        store.set_meta("run_id", run_id)
        ctx = Context(settings, problem, backend, run_dir, store, console, run_id, fresh_patience=fresh_patience)
        if settings.executor == "ray":
            where = settings.ray_address or os.environ.get("RAY_ADDRESS") or "a local cluster"
            console.print(f"[dim]ray: {escape(where)}, {plural(settings.devices, 'device slot')}…[/dim]")
        executor: Executor | None = None
        started = False
        try:
            # inside the interrupt handling: starting a Ray cluster takes seconds, and a Ctrl-C then
            # deserves the same clear word as one during the search
            executor = make_executor(settings.executor, backend, CACHE_DIR, build_workers=settings.build_workers,
                                     ray_address=settings.ray_address, devices=settings.devices)
            info = _start(ctx, executor, space, enum, enum_seconds, resume)
            started = True
            measure_baselines(ctx, executor)
            _search(ctx, enum, executor)
            _final(ctx, executor)
        except KeyboardInterrupt:
            if (run_dir / RUN_FILE).is_file():
                done = f"after {_variants(ctx.evaluated)}" if started else "while starting, before evaluating more"
                console.print(f"interrupted {done}; everything evaluated is recorded. "
                              f"Continue with: forge tune --resume {run_dir}", markup=False, highlight=False,
                              soft_wrap=True)
            else:
                console.print("interrupted before the run started: nothing was evaluated and there is nothing "
                              "to resume; start the run again", markup=False, highlight=False, soft_wrap=True)
            raise
        except (StoreError, MachineFault) as exc:
            if started:
                console.print(f"stopped after {_variants(ctx.evaluated)}: {exc}. Everything recorded before is "
                              f"kept; once that is put right, continue with: forge tune --resume {run_dir}",
                              markup=False, highlight=False, soft_wrap=True)
            raise
        finally:
            if executor is not None:
                executor.close()
        _offer_to_bank(ctx)
        info.update(status="complete", finished=time.time(), evaluated=ctx.evaluated)
        _write_run_file(run_dir, info)
        store.close()
    return run_dir


def _start(ctx: Context, executor: Executor, space: Space, enum: Enumeration, enum_seconds: float,
           resume: bool) -> dict[str, Any]:
    """Write run.json (the run's settings, problem, space and whether its times are measured, as
    the executor's device slot finds) and print the run's header; returns the run.json content."""
    settings, problem, target = ctx.settings, ctx.problem, ctx.backend.target
    can_measure, why = executor.measure_available()
    refuse_device_without_one(settings.measure, (can_measure, why))    # a Ray slot answers for its node
    info = {
        "run_id": ctx.run_id, "status": "running", "settings": settings.model_dump(mode="json"),
        "problem": {"op": problem.op, "shape": problem.shape, "dtype": problem.dtype, "attrs": problem.attrs},
        "target": {"name": target.name, "kind": target.kind, "description": target.description},
        "code": target_code(target.name),     # generators + model version: `forge show` compares it
        "measured": bool(can_measure and settings.measure != "model"), "measure_note": why,
        # shown where a baseline is missing and its column empty
        "no_baseline_reason": {name: ctx.backend.no_baseline_reason(problem, name) for name in BASELINE_NAMES}
        | ({} if settings.vendor else {"vendor": "not timed: the run was started with --no-vendor (vendor: false)"}),
        "space": {"params": {p.name: list(p.values) for p in space.params}, "cartesian": enum.cartesian,
                  "valid": len(enum), "rejections": enum.reason_counts, "enumerate_seconds": enum_seconds},
        "roofline_seconds": target.roofline_seconds(get_op(problem.op).flops(problem),
                                                   get_op(problem.op).min_bytes(problem), problem.dtype),
        "started": time.time(),
    }
    if resume and (ctx.run_dir / RUN_FILE).is_file():
        # A resumed run keeps its start and its roofline: the CPU's roofline comes from a probe,
        # and a second probe would move every row's percentage.
        before = read_run_file(ctx.run_dir)
        for key in ("started", "roofline_seconds"):
            info[key] = before.get(key, info[key])
    _write_run_file(ctx.run_dir, info)

    console = ctx.console
    console.print(f"[bold]forge tune[/bold] {problem.short()} on [cyan]{target.name}[/cyan] → {ctx.run_dir}")
    ctx.bank = _bank_usable(settings, console)
    ctx.measured = info["measured"]
    rejected = ", ".join(f"{k} {v}" for k, v in enum.reason_counts.items())
    console.print(f"space: {enum.cartesian} points, {len(enum)} valid"
                  + (f", rejected: {rejected}" if rejected else ""))
    if not info["measured"]:
        from forge.report.render import modeled_line

        console.print(f"[yellow]{escape(modeled_line(why))}[/yellow]", highlight=False)
    return info


LIMITS = ("trials", "time_budget", "patience")    # what ends a search; a resume may raise them


def deeper(setting: str, now: Any, had: Any) -> bool:
    """Whether `now` lets a search go further than `had`: more trials, a longer time budget or more
    patience (None: no limit)."""
    if setting not in LIMITS:
        return False
    if now is None or had is None:
        return now is None and had is not None
    return now > had


def resume(run_dir: Path, console: Console | None = None, replace_placement: bool = False,
           backend: Backend | None = None, **overrides: Any) -> Path:
    """Continue an interrupted run with its own settings (budgets may be raised by overrides).
    `replace_placement`: the overrides' executor, ray_address and devices replace the run's, None
    included (a bench rerun states where all its cases run; `forge tune --resume` changes only what
    its flags give). A resume that raises a limit of the search counts its patience afresh: the
    evaluations without improvement before it would otherwise stop it at once."""
    info = read_run_file(run_dir)
    if not isinstance(info.get("settings"), dict):
        raise ForgeInputError("run", f"{Path(run_dir) / RUN_FILE} has no settings; the run folder is damaged")
    store = Store.for_run(run_dir)
    try:
        check_records(run_dir, info, store.count())
        searched = len(store.keys("search"))
    finally:
        store.close()
    if overrides.get("trials") is not None and 1 <= overrides["trials"] < searched:
        # the run's budget would then read "6 of 3 variants"; a smaller one cannot unsay what ran
        raise ForgeInputError("--trials", f"{overrides['trials']} is below the {searched} variants {run_dir} has "
                                          f"evaluated; give at least {searched}, or resume without --trials")
    data = dict(info["settings"])
    # None leaves a setting as the run had it, except a limit given as None on purpose (a config
    # whose patience or time budget became "none"): that one is lifted
    data.update({k: v for k, v in overrides.items() if v is not None or (k in LIMITS and k != "trials")})
    if replace_placement:
        data.update({k: overrides.get(k) for k in ("executor", "ray_address", "devices") if k in overrides})
    if overrides.get("executor") == "local" and not overrides.get("ray_address"):
        data["ray_address"] = None   # the cluster the run was on is not joined by the local executor
    data["out"] = str(run_dir)
    try:
        settings = TuneSettings(**data)
    except ValidationError as exc:   # a flag's value (--trials 0), named as the flag
        raise pydantic_error(exc, as_flag=True) from None
    raised = any(deeper(k, getattr(settings, k), info["settings"].get(k)) for k in LIMITS)
    return tune(settings, console=console, resume=True, backend=backend, fresh_patience=raised)


def _known(ctx: Context) -> tuple[dict[str, Record], list[Record]]:
    """Search records already in the store (resume): key -> record."""
    recs = ctx.store.records(phase="search")
    return {r.variant_key: r for r in recs}, recs


def _bank_hit(ctx: Context, enum: Enumeration) -> dict[str, Any] | None:
    """The banked config that answers this run (its search skipped), or None; counted either way."""
    if not ctx.bank:
        return None
    served = _bank_answer(ctx, enum)
    bank_count("hits" if served is not None else "misses")
    return served


def _bank_answer(ctx: Context, enum: Enumeration) -> dict[str, Any] | None:
    hit = bank_lookup(ctx.problem, ctx.backend.target.name)
    if not hit:
        if bank_stale(ctx.problem, ctx.backend.target.name):
            ctx.console.print("tuning bank: the banked config was found by another version of this target's "
                              "generators or model; searching")
        return None
    config = hit[0]
    space = ctx.backend.space(ctx.problem)
    # A config from another version of the generator (other parameters or values) is a miss.
    if set(config) != set(space.names):
        return None
    try:
        enum.space.indices(config)  # raises when a value lies outside the (restricted) space
    except ForgeInputError:
        return None
    if space.check(config):
        return None
    if ctx.measured and hit[2] != "measured":
        # A modeled time says nothing a measurement would: the config is a warm start, not an answer.
        ctx.console.print("tuning bank: the banked config was chosen by the model, not measured; searching, "
                          "with it measured first")
        ctx.banked_first = config
        return None
    asked = min(ctx.settings.trials, len(enum))
    if hit[3] < asked:
        # A shallower search (or one of a restricted space) does not answer a deeper one.
        behind = (f"a search of {_variants(hit[3])}" if hit[3] else "a search of a restricted space (--space)")
        ctx.console.print(f"tuning bank: the banked config ({fmt_seconds(hit[1])}, {hit[2]}) comes from {behind}, "
                          f"less than this run's {asked}; searching, with it measured first")
        ctx.banked_first = config
        return None
    ctx.console.print(f"[green]tuning bank hit[/green]: {escape(config_text(config))} ({fmt_seconds(hit[1])}, "
                      f"{hit[2]}); search skipped (--no-bank searches anyway)")
    return config


def _warm_configs(ctx: Context, strategy: Strategy) -> list[dict[str, Any]]:
    """Best configs of earlier runs on the nearest shapes (tuning bank), measured first."""
    if not ctx.bank:
        return []
    names = set(strategy.space.names)

    def fits(cfg: dict[str, Any]) -> bool:     # a config of this space, valid for this shape, not yet asked
        return (set(cfg) == names and strategy.contains(cfg) and cfg != ctx.banked_first
                and not strategy.proposed[strategy.row(cfg)])

    own = [ctx.banked_first] if ctx.banked_first else []
    warm = own + bank_neighbours(ctx.problem, ctx.backend.target.name, accept=fits)
    if warm:
        ctx.console.print(f"warm start: {len(warm)} config(s) from earlier runs on this and the nearest shapes")
        ctx.store.set_meta("warm_start", warm)
    return warm


def default_batch(build_workers: int, devices: int, trials: int) -> int:
    """Proposals in flight unless a config sets `batch`: enough to keep every build worker and
    device slot busy, but no more than a quarter of the trials (at least one per device slot and
    one building): every point of the first batch is asked before any result is known, and a
    search whose first batch were most of its budget (40 trials on a 64-CPU Ray cluster) would
    never use what it measures. A quarter leaves the strategy four rounds of results to learn from."""
    return min(build_workers + devices, max(devices + 1, trials // 4))


def _search_line(s: TuneSettings, batch: int, left: int, build_workers: int, devices: int) -> str:
    """What the search runs: its strategy, its seed, and how many variants it keeps in flight and why
    (`left`: the trials still to go, which cap the batch too)."""
    why = (f"batch {s.batch}" if s.batch else
           f"{build_workers} build worker{'s' * (build_workers != 1)} + {devices} device slot{'s' * (devices != 1)}")
    n = min(batch, left)
    if n < (s.batch or build_workers + devices):
        why += f", capped for a search of {s.trials} trials" if left == s.trials else f", capped for the {left} trials left"
    return f"search: {s.sampler} strategy, seed {s.seed}, {n} variant{'s' * (n != 1)} in flight ({why})"


def _search_start(ctx: Context, enum: Enumeration, strategy: Strategy,
                  recs: list[Record]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The bank hit that answers the run (its search skipped) and the warm-start configs measured
    first. A resume keeps what the run began with: a bank-hit run stays one (unless the resume raised
    a limit, asking for a search), and warm-start configs not yet measured are still measured first."""
    if not recs:
        banked = _bank_hit(ctx, enum)
        if banked is not None:
            ctx.store.set_meta("bank_hit", banked)
            return banked, []
        return None, _warm_configs(ctx, strategy)
    banked = ctx.store.get_meta("bank_hit")
    measured = {r.variant_key: r for r in recs}
    if banked is not None:
        rec = measured.get(Variant(ctx.problem, ctx.backend.target.name, banked).key())
        failed = rec is not None and rec.status != "ok"
        if not ctx.fresh_patience and not failed:
            return banked, []
        if failed:
            _bank_hit_failed(ctx, rec)
        ctx.store.set_meta("bank_hit", None)     # searched on: no longer a bank hit
        return None, _warm_configs(ctx, strategy)
    warm = [cfg for cfg in ctx.store.get_meta("warm_start") or [] if strategy.contains(cfg)
            and Variant(ctx.problem, ctx.backend.target.name, cfg).key() not in measured]
    if warm:
        ctx.console.print(f"warm start: {len(warm)} config(s) the run began with still to measure, measured first")
    return None, warm


def _bank_hit_failed(ctx: Context, rec: Record) -> None:
    """Said when the banked config fails here: the bank answered wrongly, so the run searches."""
    ctx.console.print(f"tuning bank: the banked config failed here ({rec.status}: {escape(rec.reason[:200])}); "
                      "searching")
    ctx.store.set_meta("bank_hit", None)


def _search(ctx: Context, enum: Enumeration, executor) -> None:
    s = ctx.settings
    known, recs = _known(ctx)
    for r in recs:
        _note_result(ctx, r)
    # A resume that raised a limit counts patience from there (see resume()); the point is kept in
    # the store, so a later resume of that one, interrupted before it improved, counts from it too.
    if ctx.fresh_patience:
        ctx.store.set_meta("patience_from", len(recs))
    start = ctx.store.get_meta("patience_from")
    if isinstance(start, int):
        ctx.since_improvement = min(ctx.since_improvement, len(recs) - start)
    strategy = _strategy_for_run(ctx, enum)
    strategy.warm_start([(r.config, r.median if r.status == "ok" else None) for r in recs
                         if strategy.contains(r.config) and not strategy.proposed[strategy.row(r.config)]])
    if recs:
        ctx.console.print(f"resuming: {_variants(len(recs))} already evaluated, none will be measured again"
                          + (f"; the budget is spent already (forge tune --resume {escape(str(ctx.run_dir))} --trials N "
                             "searches further)"
                             if len(recs) >= s.trials else ""))
    banked, warm = _search_start(ctx, enum, strategy, recs)
    for cfg in warm:
        strategy.reserve(cfg)

    batch = s.batch or default_batch(executor.build_workers or 1, executor.devices, s.trials)
    in_flight: dict[str, dict[str, Any]] = {}
    # the time budget covers the search across resumes, as the trials do; a resume that raised a
    # limit counts it afresh, as patience is counted (see resume())
    if ctx.fresh_patience:
        ctx.store.set_meta(SEARCH_SECONDS, 0.0)
    spent_before = float(ctx.store.get_meta(SEARCH_SECONDS) or 0.0)
    started = time.monotonic()
    # numbered past every recorded one: variants in flight when a run stopped took numbers too
    trial = max((r.trial for r in recs if r.trial is not None), default=-1) + 1
    from forge.report.progress import SearchProgress

    with SearchProgress(ctx.console, total=1 if banked is not None else s.trials, done=ctx.evaluated) as progress:
        def searched_for() -> float:
            return spent_before + time.monotonic() - started

        def stop_reason() -> str | None:
            if banked is not None:
                return "bank hit" if ctx.evaluated >= 1 else None
            if ctx.evaluated >= s.trials:
                return "trials"
            if s.time_budget and searched_for() >= s.time_budget:
                return "time budget"
            if s.patience and ctx.since_improvement >= s.patience and ctx.best is not None:
                return "patience"
            return None

        exhausted = banked_tried = said = False
        while True:
            reason = stop_reason()
            room = min(batch, (1 if banked is not None else s.trials) - ctx.evaluated) - len(in_flight)
            if reason is None and room > 0 and not exhausted:
                if banked is not None:
                    configs = [] if in_flight or banked_tried else [banked]
                    banked_tried = True
                else:
                    if not said:              # said once, when the search first asks (not on a bank hit)
                        ctx.console.print(_search_line(s, batch, s.trials - ctx.evaluated,
                                                       executor.build_workers or 1, executor.devices))
                        said = True
                    configs, warm = warm[:room], warm[room:]
                    if len(configs) < room:       # the rest of the slots go to the strategy at once
                        configs += strategy.ask(room - len(configs))
                if not configs:
                    exhausted = True
                for cfg in configs:
                    v = Variant(ctx.problem, ctx.backend.target.name, cfg)
                    if v.key() in known:  # measured before (resume): tell, never re-measure
                        r = known[v.key()]
                        strategy.tell(cfg, r.median if r.status == "ok" else None)
                        continue
                    executor.submit(Job(v, input_seed(v, s.seed, "search"), s.reps, s.warmup, s.timeout,
                                        "search", trial))
                    in_flight[v.key()] = cfg
                    trial += 1
            if not in_flight:
                break
            outcome = executor.next_result(timeout=1.0)
            if outcome is None:
                ctx.store.set_meta(SEARCH_SECONDS, round(searched_for(), 3))   # a stop loses a second at most
                progress.refresh(ctx)
                continue
            rec = outcome_record(ctx, outcome)
            refuse_machine_fault(rec)
            ctx.store.add(rec)
            ctx.store.set_meta(SEARCH_SECONDS, round(searched_for(), 3))
            known[rec.variant_key] = rec
            cfg = in_flight.pop(rec.variant_key)
            strategy.tell(cfg, rec.median if rec.status == "ok" else None)
            _note_result(ctx, rec)
            progress.update(ctx, rec)
            if banked is not None and rec.status != "ok":
                _bank_hit_failed(ctx, rec)
                banked, warm = None, _warm_configs(ctx, strategy)
                for c in warm:
                    strategy.reserve(c)
                progress.retotal(s.trials)
        final_reason = stop_reason() or ("space exhausted" if exhausted else "done")
        # stored after the reason is read, so a run stopped by its time budget records it as spent
        # (the value stored with the last result can be just short of it, and a resume then ran one more)
        ctx.store.set_meta(SEARCH_SECONDS, searched_for())     # unrounded: never below the budget it met
    ctx.search_depth = _search_depth(ctx, final_reason, len(enum))
    ctx.console.print(f"search stopped ({final_reason}) after {_variants(ctx.evaluated)}")


def _unconfirmed(ctx: Context) -> bool:
    """A measured run without a final re-measure (--top-k 0): its best is the luckiest of its
    search-time draws, never timed again."""
    return ctx.measured and ctx.settings.top_k == 0


def _search_depth(ctx: Context, reason: str, valid: int) -> int:
    """The search the bank may credit this run with: none for a restricted space or a bank hit,
    the whole space where the search covered it, the trials asked for where it ran to them or
    judged it had converged (patience), else what it evaluated (a time budget). A measured run
    without a final re-measure (--top-k 0) is credited none: its best is the luckiest of many
    search-time draws, fit to warm-start a search, not to stand in for one."""
    if ctx.settings.space or reason == "bank hit" or _unconfirmed(ctx):
        return 0
    if reason == "space exhausted":
        return valid
    if reason in ("trials", "patience"):
        return min(ctx.settings.trials, valid)
    return ctx.evaluated


def _final(ctx: Context, executor) -> None:
    """Re-measure the top candidates with more repetitions (ties are judged on these). When all of
    them moved the same way, the baselines are timed again: whether they moved too tells a change of
    the machine's speed from lucky search times (forge/results/remeasure.py), and the speedups of the
    re-measured rows then compare times taken at the same speed."""
    s = ctx.settings
    if s.top_k == 0:
        return
    ok = [r for r in ctx.store.records(phase="search") if r.status == "ok" and r.median is not None]
    if not ok or not ok[0].time_kind == "measured":
        return
    top = sorted(ok, key=lambda r: r.median)[: s.top_k]
    done = {r.variant_key for r in ctx.store.records(phase="final")}
    if done and {r.variant_key for r in top} <= done:
        _retime_after_shift(ctx, executor)     # a stop during that re-time is taken up here
        return
    if done:
        # A finished run extended with more trials found faster variants: its finalists are timed
        # again together with them, in the same rounds, and the earlier re-measure is superseded.
        ctx.console.print("the extended search found variants the earlier re-measure did not time; re-measuring "
                          "the new top together (the earlier re-measure stays in the store, superseded)")
    last_baseline = max((r.timestamp for r in ctx.store.records(phase="baseline")), default=0.0)
    retimed = time.time() - last_baseline > BASELINE_RETIME_AFTER_S
    if retimed:
        measure_baselines(ctx, executor, again=True)
    rounds = min(FINAL_ROUNDS, s.final_reps)
    ctx.console.print(f"re-measuring the top {len(top)} with {s.final_reps} repetitions each, in {rounds} "
                      "runs taking turns…")
    runs: dict[str, list[Outcome]] = {r.variant_key: [] for r in top}
    for i in range(rounds):
        reps = s.final_reps // rounds + (i < s.final_reps % rounds)
        for r in top:
            if any(o.measurement.status != "ok" for o in runs[r.variant_key]):
                continue                      # failed once: recorded so, not run (or hung) again
            v = Variant(ctx.problem, ctx.backend.target.name, r.config)
            executor.submit(Job(v, input_seed(v, s.seed, "final"), reps, s.warmup, s.timeout * 3, "final", r.trial))
        for outcome in executor.results():
            runs.setdefault(outcome.job.variant.key(), []).append(outcome)
    # committed together: an interrupted re-measure is redone whole on resume, so every finalist
    # is timed in the same rounds
    finals = [outcome_record(ctx, pooled(outcomes)) for outcomes in runs.values() if outcomes]
    for rec in finals:
        refuse_machine_fault(rec)
        if retimed:
            rec.extra[BASELINES_TIMED_BEFORE] = True
    ctx.store.add_final(finals)
    _retime_after_shift(ctx, executor)


def _retime_after_shift(ctx: Context, executor) -> None:
    """When every finalist moved the same way in the re-measure and no baseline was timed since it,
    time the baselines again: whether they moved too tells a change of this machine's speed from
    lucky search times."""
    records = ctx.store.records()
    shift = shift_of_records(records)
    last = {phase: max((r.timestamp for r in records if r.phase == phase), default=0.0)
            for phase in ("baseline", "final")}
    latest_final = max((r for r in records if r.phase == "final"), key=lambda r: r.timestamp, default=None)
    if (shift is None or last["baseline"] > last["final"]
            or (latest_final is not None and latest_final.extra.get(BASELINES_TIMED_BEFORE))):
        return
    ctx.console.print(f"[dim]the re-measured variants ran {shift.factor:.2f}x their search times; re-timing "
                      "the baselines to tell a change of this machine's speed from lucky search times[/dim]")
    measure_baselines(ctx, executor, again=True)


def pooled(outcomes: list[Outcome]) -> Outcome:
    """One outcome of a variant's final runs: every repetition of every run, or the first run that
    failed (a finalist that crashes, hangs or goes wrong once is not ranked on its other runs)."""
    failed = next((o for o in outcomes if o.measurement.status != "ok"), None)
    if failed is not None:
        return failed
    first = outcomes[0]
    m = first.measurement
    timings = [t for o in outcomes for t in o.measurement.timings]
    job = replace(first.job, reps=len(timings))
    return replace(first, job=job, measurement=replace(m, timings=timings, extra={**m.extra, "runs": len(outcomes)}))


def _offer_to_bank(ctx: Context) -> None:
    if not ctx.bank:
        return
    records = ctx.store.records()
    failed = failed_finalists(records)
    recs = [r for r in records if r.phase in ("search", "final") and r.status == "ok" and r.variant_key not in failed]
    # A variant whose output nothing checked (CUDA without a GPU and --no-host-check, the CPU with
    # --measure model) is no answer to serve another run.
    checked = [r for r in recs if not unchecked(r.extra)]
    if recs and not checked:
        ctx.console.print("tuning bank: not updated: no variant's output was checked in this run "
                          f"({escape(str(recs[0].extra.get('correctness', '')).removeprefix(f'{NOT_CHECKED}: '))})")
    recs = checked
    if recs:
        try:
            said = offer_summary(bank_offer(recs, searched=ctx.search_depth, confirmed=not _unconfirmed(ctx)))
        except BANK_ERRORS as exc:   # the run is complete and recorded; only the bank missed it
            said = f"not updated ({exc}); the run's results are all in {ctx.run_dir}"
        ctx.console.print(f"tuning bank: {escape(said)} ({escape(str(bank_path()))})")


def _bank_usable(settings: TuneSettings, console: Console) -> bool:
    if not settings.bank:
        return False
    why = bank_unusable()
    if why:
        console.print(f"[yellow]tuning bank unavailable[/yellow] ({escape(why)}): this run neither uses nor "
                      "updates it (FORGE_BANK names another file; --no-bank skips it)", highlight=False)
    return why is None


def _variants(n: int) -> str:
    return plural(n, "variant")
