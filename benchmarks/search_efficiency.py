"""Search efficiency on brute-forced tuning spaces: forge vs random vs Optuna vs Kernel Tuner.

    .venv/bin/python benchmarks/search_efficiency.py [cachefiles...] [--seeds 25] [--first-seed 0]
        [--budgets 25,50,100,200] [--strategies forge,random,...] [--kt a,b,...] [--no-kt]
        [--forge-options '{"rho_min": null}']   # ForgeStrategy constructor options (design variants)
        [--reference forge] [--targets benchmarks/search_targets.yaml]

Defaults to every `*.json*` under ../shared/data/tuningdata/. Any Kernel Tuner cache file works.

Budget definition (identical for every strategy): B unique evaluations of points that are in the
cache — successful *or failed* (a failure costs a real compile and launch on hardware). Points
absent from the cache are infeasible and cost nothing. "Best" is the best successful time found
within the first B unique evaluations (the worst successful time if none succeeded).
Kernel Tuner runs in simulation mode on a temporary uncompressed copy of the same file with a
restriction "present in the cache" that keeps the failed points (Kernel Tuner's own `tune_cache`
drops them, which would give it a smaller space than everyone else) and leaves out InvalidConfig
records (absent for everyone); its `max_fevals` counts unique in-cache evaluations, failures
included (kernel_tuner/runners/simulation.py), i.e. the same budget. Kernel Tuner hands a strategy
a failure's cost as sys.float_info.max (kernel_tuner/util.py); its bayes_opt filters only its own
marker, 1e20, and fits its Gaussian process to those values, so on a space with failures its row
reads that handling as much as its search. Seeds: forge and Optuna take the seed; Kernel Tuner
strategies draw from Python's and numpy's global generators, which are seeded before each run,
except the Latin-hypercube start of diff_evo and bayes_opt (scipy.stats.qmc.LatinHypercube made
without a seed, kernel_tuner/searchspace.py and strategies/bayes_opt.py), which draws from the
operating system: those two rows do not repeat for a seed.

Columns: mean over seeds of best/optimum, and the methodology score
(random − strategy)/(random − optimum) of that mean (random = exact expectation, 0 = random,
1 = optimum; forge.search.random_baseline). After the table, its reading against the targets in
benchmarks/search_targets.yaml for the reference strategy (--reference, default forge): each
best/optimum target met or not, and which strategies it is behind or level with at the budgets
where it must be ahead of all (means apart by more than twice their standard error).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from forge.backends.replay import ReplayData, load_cache  # noqa: E402
from forge.search.random_baseline import expected_best_random, score  # noqa: E402
from forge.search.replay_run import run_replay  # noqa: E402
from forge.cli import parse_pairs  # noqa: E402
from forge.errors import ForgeInputError  # noqa: E402
from forge.search.forge_strategy import ForgeOptions, start_size  # noqa: E402
from forge.search.strategies import check_strategy_options, strategy_names  # noqa: E402

DEFAULT_DIR = ROOT.parent / "shared" / "data" / "tuningdata"
TARGETS = ROOT / "benchmarks" / "search_targets.yaml"
# Every plain Optuna sampler the issue names. optuna-gp needs torch (the `torch` extra; without it
# its rows say "skipped") and is the slowest by far: 30-45 s per 200-evaluation run on the dev
# machine with Optuna 5.1, about 20 minutes of the default run's 2 processes.
FORGE_STRATEGIES = ["forge", "random", "optuna-random", "optuna-tpe", "optuna-tpe-multivariate",
                    "optuna-cmaes", "optuna-qmc", "optuna-qmc-scrambled", "optuna-gp"]
# Every strategy Kernel Tuner 1.5 registers (kernel_tuner.interface._STRATEGY_IMPORTS) except
# brute_force: the issue asks for forge against *every* Kernel Tuner strategy, and the newer ones
# (adaptive_tabu_greywolf, hybrid_vndx, nsga2/3) are among the strongest on these spaces. skopt and
# pyatf_strategies need packages of their own; without them their rows say "skipped".
KT_STRATEGIES = ["random_sample", "genetic_algorithm", "simulated_annealing", "bayes_opt",
                 "adaptive_tabu_greywolf", "hybrid_vndx", "nsga2", "nsga3", "pso", "firefly_algorithm",
                 "diff_evo", "dual_annealing", "mls", "greedy_mls", "ordered_greedy_mls", "greedy_ils",
                 "basinhopping", "minimize", "skopt", "pyatf_strategies"]


_DATA: dict[str, ReplayData] = {}
FORGE_OPTIONS: dict = {}          # set by --forge-options before the workers fork
_KT: dict[str, "KernelTunerRunner"] = {}
# Wall-clock seconds one run may take (--run-limit, set before the workers fork). Some strategies
# never finish on a small space: Kernel Tuner 1.5's nsga2 and nsga3 (pymoo) gave no result in 40 s
# for 200 evaluations of a 288-point space, where 150 took 3 s. The slowest runs that do finish,
# optuna-gp's, take 30-45 s.
RUN_LIMIT_S = 600


class RunTooLong(BaseException):
    """Raised by the alarm in a run past RUN_LIMIT_S: a BaseException, so that a strategy's own
    `except Exception` cannot swallow it and run on."""


def _too_long(signum, frame):
    raise RunTooLong()


def _data(path: str) -> ReplayData:
    if path not in _DATA:
        _DATA[path] = load_cache(path)
    return _DATA[path]


def one_run(task: tuple[str, str, int, int]) -> tuple[tuple[str, str, int, int], np.ndarray | str, float]:
    """One (file, strategy, budget, seed) run -> best-so-far (s) per unique evaluation, or an error line."""
    path, strategy, budget, seed = task
    t0 = time.time()
    data = _data(path)
    signal.signal(signal.SIGALRM, _too_long)
    signal.alarm(RUN_LIMIT_S)
    try:
        if strategy.startswith("KT "):
            if path not in _KT:
                _KT[path] = KernelTunerRunner(data)
            tr = _KT[path].run(strategy[3:], budget, seed)
        else:
            opts = FORGE_OPTIONS if strategy == "forge" else {}
            tr = _pad(run_replay(data, strategy, budget, seed=seed, **opts).trace, budget, data)
    except Exception as exc:   # an unavailable strategy is reported, not fatal
        tr = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    except RunTooLong:
        tr = f"a {budget}-evaluation run (seed {seed}) did not finish within --run-limit {RUN_LIMIT_S} s"
    finally:
        signal.alarm(0)
    return (path, strategy, budget, seed), tr, time.time() - t0


def run_budgets(strategy: str, budgets: list[int]) -> list[int]:
    """Budgets to run `strategy` at: each budget is read from the first `budget` evaluations of the
    smallest run at least as large. One run at the largest serves every budget of a strategy that
    does not know its budget; forge's sizes its start by it (forge_strategy.start_size), so it runs
    once per start size, at the largest budget with that size."""
    if strategy != "forge":
        return [max(budgets)]
    options = ForgeOptions(**FORGE_OPTIONS)
    largest: dict[int, int] = {}
    for b in budgets:
        size = start_size(options, b)
        largest[size] = max(b, largest.get(size, b))
    return sorted(largest.values())


def read_runs(runs: dict[int, np.ndarray]) -> np.ndarray:
    """(seeds, max budget) best-so-far where column b - 1 comes from the smallest run of >= b
    evaluations (see run_budgets)."""
    out = runs[max(runs)].copy()
    for rb in sorted(runs, reverse=True):
        out[:, :rb] = runs[rb][:, :rb]
    return out


def _pad(trace: np.ndarray, budget: int, data: ReplayData) -> np.ndarray:
    """A run that spent less than the budget (space exhausted, or stopped) keeps its last best."""
    worst = float(np.nanmax(data.time_s))
    if len(trace) == 0:
        return np.full(budget, worst)
    return np.concatenate([trace[:budget], np.full(max(0, budget - len(trace)), trace[-1])])


def in_space_rule(cache: dict, keys: list[str]) -> Callable[..., bool]:
    """Kernel Tuner's restriction: a point is in the space when the cache holds it as a time or a
    compile/runtime failure, the points every other strategy may spend evaluations on. An
    InvalidConfig record is outside it, as forge's loader reads it (the same as absent): left in,
    Kernel Tuner's simulation charged an evaluation for each one it drew."""
    in_space = {tuple(r[k] for k in keys) for r in cache["cache"].values() if r.get("time") != "InvalidConfig"}
    return lambda *v: v in in_space


class KernelTunerRunner:
    """Kernel Tuner strategies in simulation mode over the same file, space and budget."""

    def __init__(self, data: ReplayData):
        import kernel_tuner  # noqa: F401  (optional extra "compare")
        from constraint import FunctionConstraint
        from kernel_tuner import util as ktu

        self.data = data
        self.tmp = Path(tempfile.mkdtemp(prefix="forge-kt-"))
        self.file = self.tmp / "cache.json"
        with (gzip.open if _is_gz(data.path) else open)(data.path, "rt") as src:
            self.file.write_text(src.read())
        cache = ktu.read_cache(str(self.file), open_cache=False)
        self.args = ktu.infer_args_from_cache(cache)
        self.keys = list(cache["tune_params_keys"])
        self.restrictions = [FunctionConstraint(in_space_rule(cache, self.keys))]

    def run(self, strategy: str, budget: int, seed: int) -> np.ndarray:
        from kernel_tuner import tune_kernel
        random.seed(seed)
        np.random.seed(seed)
        with warnings.catch_warnings(), open(os.devnull, "w") as null:
            warnings.simplefilter("ignore")
            old = sys.stdout
            sys.stdout = null
            try:
                results, _ = tune_kernel(**self.args, cache=str(self.file), simulation_mode=True,
                                         restrictions=self.restrictions, strategy=strategy,
                                         strategy_options={"max_fevals": budget},
                                         seed=seed, verbose=False, quiet=True)
            finally:
                sys.stdout = old
        seen, best, trace = set(), np.inf, []
        for r in results:
            key = tuple(r[k] for k in self.keys)
            err = r.get("__error__")
            if key in seen or type(err).__name__ == "InvalidConfig":
                continue
            row = self.data.row_of_config(dict(zip(self.keys, key)))
            if row is None:
                continue
            seen.add(key)
            if self.data.status[row] == "ok":
                best = min(best, float(self.data.time_s[row]))
            trace.append(best if np.isfinite(best) else float(np.nanmax(self.data.time_s)))
        return _pad(np.array(trace), budget, self.data)

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


class SearchTargets(BaseModel):
    """benchmarks/search_targets.yaml: what the table is read against (see that file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    best_over_optimum: dict[str, dict[int, float]] = {}   # space -> budget -> ratio to reach
    better_than_all_at: list[int] = []                     # budgets where the reference must lead
    designed_on: dict[str, list[str]] = {}                 # strategy -> spaces in its design set


def load_targets(path: Path) -> SearchTargets:
    return SearchTargets.model_validate(yaml.safe_load(path.read_text()) or {})


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0


def compare(ref: np.ndarray, other: np.ndarray) -> str:
    """"ahead", "behind" or "level": the reference's mean best/optimum against another's, where a
    difference within twice its standard error (the two seed sets taken as independent) is level.
    Two standard errors because the issue's targets are read at differences of that order: a
    smaller margin would call 25-seed noise a win. With one seed every difference is level."""
    if len(ref) < 2 or len(other) < 2:
        return "level"            # one seed has no standard error: no difference can be told
    (m1, s1), (m2, s2) = _mean_se(ref), _mean_se(other)
    margin = 2.0 * float(np.hypot(s1, s2))
    if m1 < m2 - margin:
        return "ahead"
    if m1 > m2 + margin:
        return "behind"
    return "level"


def read_against(ratios: dict[str, dict[str, np.ndarray]], reference: str, budgets: list[int],
                 targets: SearchTargets, not_run: dict[str, str] | None = None) -> list[str]:
    """The table read against the targets, for the reference strategy: each best/optimum target
    met or not, and at each `better_than_all_at` budget which strategies it is behind or level
    with, each marked `*` where `designed_on` lists the space among those it was selected on.
    ratios: space -> strategy -> best/optimum per seed (rows) and evaluation (columns); not_run:
    strategy -> why it did not run, named beside every verdict it is missing from."""
    out: list[str] = []
    at = [b for b in targets.better_than_all_at if b in budgets]
    everywhere = {b: True for b in at}
    marked = False
    for space, per in ratios.items():
        if reference not in per:
            continue
        ref = per[reference]
        for b, goal in sorted(targets.best_over_optimum.get(space, {}).items()):
            if b not in budgets:
                continue
            m, se = _mean_se(ref[:, b - 1])
            out.append(f"{space} B={b}: {reference} {m:.3f} ± {se:.3f}, target <= {goal:.2f}: "
                       + ("met" if m <= goal else "NOT met"))
        for b in at:
            verdicts = {st: compare(ref[:, b - 1], tr[:, b - 1]) for st, tr in per.items() if st != reference}
            behind = [st for st, v in verdicts.items() if v == "behind"]
            level = [st for st, v in verdicts.items() if v == "level"]
            everywhere[b] &= bool(verdicts) and not (behind or level)   # no others ran: not shown
            designed = {st for st in behind + level if space in targets.designed_on.get(st, [])}
            marked |= bool(designed)
            def named(sts: list[str]) -> str:
                return ", ".join(f"{st}{'*' if st in designed else ''} {per[st][:, b - 1].mean():.3f}"
                                 for st in sorted(sts, key=lambda st: per[st][:, b - 1].mean())) or "none"
            out.append(f"{space} B={b}: {reference} {ref[:, b - 1].mean():.3f} is ahead of "
                       f"{len(verdicts) - len(behind) - len(level)} of {len(verdicts)}; "
                       f"behind: {named(behind)}; level: {named(level)}")
    if out:
        out.insert(0, f"Read against the targets ({reference}; ahead/behind = the means differ by more "
                      "than twice the standard error of their difference, else level):")
        missing = "; ".join(f"{st} ({why})" for st, why in sorted((not_run or {}).items()))
        out += [f"better than every other strategy at B={b} on every space: " + ("yes" if ok else "no")
                + (f" (of those that ran; not run, so not compared: {missing})" if missing else "")
                for b, ok in everywhere.items()]
        if marked:
            out.append("* this space is among the problems the strategy was designed on "
                       "(designed_on in the targets file); the verdicts count it all the same")
    return out


def _is_gz(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def parse_budgets(ap: argparse.ArgumentParser, text: str) -> list[int]:
    """`--budgets` as whole numbers >= 1, or exit 2 naming the flag."""
    try:
        budgets = [int(b) for b in text.split(",")]
    except ValueError:
        ap.error(f"--budgets: comma-separated whole numbers >= 1, got {text!r}")
    if min(budgets) < 1:
        ap.error(f"--budgets: every budget must be >= 1, got {text!r}")
    return budgets


def read_or_refuse(ap: argparse.ArgumentParser, path: str) -> ReplayData:
    """The cache file, read before any worker forks, or exit 2 naming what is wrong with it."""
    try:
        return _data(path)
    except ForgeInputError as exc:
        ap.error(str(exc))


def main(argv: list[str] | None = None) -> int:
    global RUN_LIMIT_S
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cachefiles", nargs="*", help="Kernel Tuner cache files or forge run folders (default: every "
                                                  "space in the shared tuningdata folder)")
    ap.add_argument("--seeds", type=int, default=25, help="seeds per strategy and budget (default 25)")
    ap.add_argument("--first-seed", type=int, default=0,
                    help="seeds are first-seed .. first-seed+seeds-1 (a second set: --first-seed 25)")
    ap.add_argument("--budgets", default="25,50,100,200",
                    help="unique valid evaluations per run, comma-separated (default 25,50,100,200); the "
                         "targets are read at those they name")
    ap.add_argument("--strategies", default=",".join(FORGE_STRATEGIES), help="forge's strategies, comma-separated (default: all of them)")
    ap.add_argument("--kt", default=",".join(KT_STRATEGIES),
                    help="Kernel Tuner strategies (needs kernel_tuner installed; default: all of them)")
    ap.add_argument("--no-kt", action="store_true", help="run no Kernel Tuner strategy")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: one per core)")
    ap.add_argument("--run-limit", type=int, default=RUN_LIMIT_S,
                    help="wall-clock seconds one run may take; a strategy with a run past it is reported "
                         "as not run on that space, with the reason (default %(default)s)")
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--se", action="store_true",
                    help="also print each mean's standard error over the seeds (best/opt ± se)")
    ap.add_argument("--forge-options", default="",
                    help="ForgeStrategy options as `forge replay --options` takes them, e.g. acquisition=thompson,"
                         "n_init=12 (or a JSON object)")
    ap.add_argument("--reference",
                    help="the strategy the table is read against (default forge, when it runs)")
    ap.add_argument("--targets", default=str(TARGETS),
                    help="YAML of the targets to read the table against (default benchmarks/search_targets.yaml)")
    a = ap.parse_args(argv)
    if a.seeds < 1 or a.first_seed < 0:
        ap.error(f"--seeds must be >= 1 and --first-seed >= 0 (got {a.seeds}, {a.first_seed})")
    if a.jobs < 1:
        ap.error(f"--jobs must be >= 1 (got {a.jobs})")
    if a.run_limit < 1:
        ap.error(f"--run-limit must be >= 1 second (got {a.run_limit})")
    RUN_LIMIT_S = a.run_limit
    FORGE_OPTIONS.clear()
    try:
        text = a.forge_options.strip()
        opts = json.loads(text) if text.startswith("{") else parse_pairs(text, "--forge-options")
        if not isinstance(opts, dict):
            raise ValueError("--forge-options: a JSON object or NAME=VALUE,...")
        FORGE_OPTIONS.update(opts)
        check_strategy_options("forge", FORGE_OPTIONS, "--forge-options")
    except (ValueError, TypeError) as exc:   # JSONDecodeError and ForgeInputError are ValueErrors
        ap.error(f"--forge-options: {exc}" if isinstance(exc, json.JSONDecodeError) else str(exc))
    try:
        targets = load_targets(Path(a.targets))
    except (OSError, ValueError, yaml.YAMLError) as exc:   # pydantic's ValidationError is a ValueError
        ap.error(f"--targets {a.targets}: {exc}")
    files = [Path(f) for f in a.cachefiles] or sorted(DEFAULT_DIR.rglob("*.json*"))
    budgets = parse_budgets(ap, a.budgets)
    for f in files:    # read here, before the workers fork: a bad file is named once, with exit 2
        read_or_refuse(ap, str(f))
    bmax = max(budgets)
    lines = ["| space | strategy | " + " | ".join(f"B={b} best/opt (score)" for b in budgets) + " |",
             "|---|---|" + "---|" * len(budgets)]
    t_all = time.time()
    strategies = a.strategies.split(",")
    unknown = [st for st in strategies if st not in strategy_names()]
    if unknown:
        ap.error(f"--strategies: unknown {', '.join(map(repr, unknown))}; allowed: {', '.join(strategy_names())}")
    kt_unknown = [st for st in a.kt.split(",") if st not in KT_STRATEGIES]
    if kt_unknown and not a.no_kt:
        ap.error(f"--kt: unknown {', '.join(map(repr, kt_unknown))}; allowed: {', '.join(KT_STRATEGIES)}")
    if a.reference is not None and a.reference not in strategies:
        ap.error(f"--reference {a.reference!r} is not among --strategies ({', '.join(strategies)})")
    reference = a.reference or "forge"
    if not a.no_kt:
        try:
            import kernel_tuner  # noqa: F401
            strategies += [f"KT {st}" for st in a.kt.split(",")]
        except ImportError as exc:
            print(f"kernel_tuner not available ({exc}); skipping its strategies", flush=True)
    seeds = range(a.first_seed, a.first_seed + a.seeds)
    runs_of = {st: run_budgets(st, budgets) for st in strategies}
    tasks = [(str(f), st, rb, s) for f in files for st in strategies for rb in runs_of[st] for s in seeds]
    print(f"{len(files)} spaces x {len(strategies)} strategies x {a.seeds} seeds = {len(tasks)} runs "
          f"of up to {bmax} evaluations on {a.jobs} processes"
          + "".join(f"; {st} runs at B={','.join(map(str, rb))}" for st, rb in runs_of.items() if len(rb) > 1),
          flush=True)
    got: dict[tuple[str, str, int, int], np.ndarray | str] = {}
    ratios: dict[str, dict[str, np.ndarray]] = {}     # space -> strategy -> (seeds, bmax) best/opt
    spent: dict[tuple[str, str], float] = {}
    if a.jobs > 1:
        import multiprocessing as mp

        # One torch thread per worker (optuna-gp): with torch's default of one per core, two workers
        # on two cores ran three times slower. torch is imported in the workers, after this.
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        pool = mp.get_context("fork").Pool(a.jobs)
        it = pool.imap_unordered(one_run, tasks)
    else:
        pool, it = None, map(one_run, tasks)
    for k, (key, tr, sec) in enumerate(it, 1):
        got[key] = tr
        spent[key[:2]] = spent.get(key[:2], 0.0) + sec
        if k % max(1, len(tasks) // 40) == 0 or k == len(tasks):
            print(f"  {k}/{len(tasks)} runs done, {time.time()-t_all:.0f} s", flush=True)
    if pool is not None:
        pool.close()
    notes: list[str] = []
    not_run: dict[str, str] = {}      # strategy -> why it did not run (on some space)
    for f in files:
        data = _data(str(f))
        opt = data.optimum_s
        n_fail = len(data.time_s) - data.n_ok
        rnd = {b: expected_best_random(data.time_s, 0, b) for b in budgets}
        print(f"== {data.name}: {len(data.time_s)} valid points ({n_fail} failed), optimum {opt*1e3:.4g} ms",
              flush=True)
        undefined = [b for b in budgets if score(opt, rnd[b], opt) is None]   # random surely finds the optimum: 0/0
        if undefined:
            notes.append(f"{data.name}: at B={', '.join(map(str, undefined))} random search surely finds the "
                         "optimum (the space, or its points not tied at the optimum, is used up), so the score is "
                         "0/0 and printed —")

        def scored(best: float, b: int) -> str:
            value = score(best, rnd[b], opt)
            return "—" if value is None else f"{value:.3f}"

        lines.append(f"| {data.name} | random (exact expectation) | "
                     + " | ".join(f"{rnd[b]/opt:.3f} ({scored(rnd[b], b)})" for b in budgets) + " |")
        for st in strategies:
            trs = [got[(str(f), st, rb, s)] for rb in runs_of[st] for s in seeds]
            errs = [t for t in trs if isinstance(t, str)]
            if errs:
                print(f"   {st:28s} skipped: {errs[0]}", flush=True)
                not_run[st] = errs[0].splitlines()[0][:120]
                continue
            print(f"   {st:28s} {spent[(str(f), st)]/a.seeds:6.2f} s per seed", flush=True)
            runs = {rb: np.stack([got[(str(f), st, rb, s)] for s in seeds]) for rb in runs_of[st]}
            ratio = ratios.setdefault(data.name, {})[st] = read_runs(runs) / opt
            cells = []
            for b in budgets:
                m, se = _mean_se(ratio[:, b - 1])
                err = f" ± {se:.3f}" if a.se and len(ratio) > 1 else ""
                cells.append(f"{m:.3f}{err} ({scored(m * opt, b)})")
            lines.append(f"| {data.name} | {st} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(f"\n{a.seeds} seeds ({seeds.start}-{seeds.stop - 1}); best/optimum is the mean over seeds (lower is better)"
          + ("; ± its standard error over the seeds" if a.se else "")
          + "; score = (random - strategy)/(random - optimum) with random's exact expectation\n")
    print(table)
    if notes:
        print("\n" + "\n".join(notes))
    reading = read_against(ratios, reference, budgets, targets, not_run)
    if reading:
        print("\n" + "\n".join(reading))
    print(f"\ntotal {time.time()-t_all:.0f} s")
    if a.markdown:
        Path(a.markdown).write_text(table + "\n" + ("\n" + "\n".join(reading) + "\n" if reading else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
