"""Why a brute-forced space is hard to search: its code paths, where its optimum is, and which
seeds of a strategy found the optimum's path.

    .venv/bin/python benchmarks/space_anatomy.py CACHEFILE [--switches a,b,c]
        [--strategy forge] [--options JSON] [--seeds 25] [--budgets 50,100] [--jobs 2] [--no-runs]
        [--within-path]

A *code path* is one combination of the switches (by default every parameter that is unordered
or has exactly two values, as forge's strategy defines them). For each path the table gives its
valid points, failures, and best / 5th percentile / median time over the space's optimum. The
*tail* is the set of points in the optimum's path that are faster than the best point of every
other path: a search that has measured none of them has no measured reason to prefer that path
over the others, so its hit rate decides the run. The exact chance that uniform random search
(without replacement) draws one within B evaluations is printed beside what the strategy did.

The *landscape* lines count the local optima under moves that change up to k parameters at once
(any values of them), and the share of valid starting points from which steepest descent with
such moves, knowing every time exactly, ends at the optimum: how far one-parameter coordinate
moves (forge's local slots) can get on their own, and how much wider a move has to be before
the space has one basin.

`--identify 5,10,20` adds how well the optimum's path can be told from the others by sampling
each path uniformly: for k points drawn per path, the share of 400 draws in which each estimate
of a path's best time (the least time drawn, the lower quintile, and the least time a normal fit
to the path's log-times predicts among all its points) ranks the optimum's path first. It asks
whether a search that spreads its evaluations over the code paths could find the winning one
from what it measures there.

`--within-path` also runs the strategy, same seeds and budgets, on the optimum's path alone (the
space cut down to that path's points): what it would reach if it were told the path. That is the
ceiling for any way of finding the path, so a target for the whole space above it is out of reach,
and one close to it leaves only the difference for finding the path.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from itertools import combinations
from math import lgamma
from pathlib import Path

import numpy as np
from scipy.stats import norm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from forge.backends.replay import ReplayData, load_cache  # noqa: E402
from forge.errors import ForgeInputError  # noqa: E402
from forge.search.forge_strategy import switch_params  # noqa: E402
from forge.search.replay_run import run_replay  # noqa: E402

_DATA: dict[str, ReplayData] = {}


def _data(path: str) -> ReplayData:
    if path not in _DATA:
        _DATA[path] = load_cache(path)
    return _DATA[path]


def default_switches(data: ReplayData) -> list[str]:
    return [data.space.params[j].name for j in switch_params(data.space)]


def path_ids(data: ReplayData, switches: list[str]) -> np.ndarray:
    """Per valid row, the tuple of switch values as a string label."""
    names = [p.name for p in data.space.params]
    cols = [names.index(s) for s in switches]
    valid = data.enumeration.valid
    labels = []
    for row in valid:
        labels.append(",".join(f"{switches[k]}={data.space.params[c].values[row[c]]}" for k, c in enumerate(cols)))
    return np.array(labels)


def p_hit_random(n: int, k: int, budget: int) -> float:
    """P(at least one of k marked points among `budget` uniform draws without replacement of n)."""
    if k == 0:
        return 0.0
    b = min(budget, n)
    if n - k < b:
        return 1.0
    log_miss = lgamma(n - k + 1) - lgamma(n - k - b + 1) - lgamma(n + 1) + lgamma(n - b + 1)
    return float(1.0 - np.exp(log_miss))


def steepest_descent(valid: np.ndarray, t: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For moves that change at most `k` parameters: which rows are local optima (no such move
    is faster), and the row where steepest descent from each row ends. `valid` holds value
    indices per row, `t` the times (inf where a point failed).

    The best point reachable by changing the parameters in a set S is the best of the group of
    rows that agree on every other parameter, so one group-by per S of size k (which also covers
    the smaller sets inside it) gives every row's best neighbour without comparing row pairs."""
    n, d = valid.shape
    varying = [j for j in range(d) if len(np.unique(valid[:, j])) > 1]
    radix = valid.max(axis=0).astype(np.int64) + 1
    best = np.arange(n)
    for subset in combinations(varying, min(k, len(varying))):
        key = np.zeros(n, dtype=np.int64)
        for j in range(d):
            if j not in subset:
                key = key * radix[j] + valid[:, j]
        order = np.lexsort((t, key))                      # by group, fastest first
        first = np.ones(n, dtype=bool)
        first[1:] = key[order][1:] != key[order][:-1]
        group_best = order[first][np.cumsum(first) - 1]   # per position in `order`
        candidate = np.empty(n, dtype=np.int64)
        candidate[order] = group_best
        best = np.where(t[candidate] < t[best], candidate, best)
    local_optimum = best == np.arange(n)
    end = best
    while True:                                           # pointer doubling to the fixed points
        nxt = end[end]
        if np.array_equal(nxt, end):
            return local_optimum, end
        end = nxt


def path_identification(t: np.ndarray, paths: np.ndarray, k: int, draws: int,
                        rng: np.random.Generator) -> dict[str, float]:
    """Share of `draws` in which k uniform points per path rank the optimum's path first, for
    three estimates of a path's best time. Failed points drawn are skipped (they carry no time)."""
    labels = sorted(set(paths))
    members = [np.flatnonzero(paths == p) for p in labels]
    win = labels.index(paths[int(np.nanargmin(t))])
    wins = {"least drawn": 0, "lower quintile": 0, "normal-fit least": 0}
    for _ in range(draws):
        est: dict[str, list[float]] = {m: [] for m in wins}
        for rows in members:
            y = np.log(t[rng.choice(rows, min(k, len(rows)), replace=False)])
            y = y[np.isfinite(y)]
            if len(y) < 2:
                for m in est:
                    est[m].append(np.inf if not len(y) else float(y[0]))
                continue
            est["least drawn"].append(float(y.min()))
            est["lower quintile"].append(float(np.quantile(y, 0.2)))
            est["normal-fit least"].append(float(y.mean() + y.std(ddof=1) * norm.ppf(1 / (len(rows) + 1))))
        for m in wins:
            wins[m] += int(np.argmin(est[m]) == win)
    return {m: v / draws for m, v in wins.items()}


def within(data: ReplayData, rows: np.ndarray) -> ReplayData:
    """The same space cut down to `rows` (sorted valid rows), as if the others were infeasible."""
    cut = dataclasses.replace(data.enumeration, valid=data.enumeration.valid[rows])
    return dataclasses.replace(data, enumeration=cut, time_s=data.time_s[rows], status=data.status[rows],
                               cost_s=data.cost_s[rows], flat=data.flat[rows])


def _run(args: tuple[str, str, int, int, dict]) -> tuple[int, list[float], list[int]]:
    path, strategy, seed, budget, options = args
    data = _data(path)
    r = run_replay(data, strategy, budget, seed=seed, **options)
    rows = [data.row_of_config(c) for c in r.proposals]
    rows = [x for x in rows if x is not None]
    return seed, list(r.trace), rows


def _runs(cache: str, strategy: str, seeds: int, budget: int, options: dict, jobs: int) -> list:
    """One run per seed, in worker processes (in this one with jobs=1, so a test can import this file)."""
    tasks = [(cache, strategy, s, budget, options) for s in range(seeds)]
    if jobs <= 1:
        return [_run(t) for t in tasks]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(_run, tasks))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache")
    ap.add_argument("--switches", help="comma-separated parameters that define a code path")
    ap.add_argument("--strategy", default="forge")
    ap.add_argument("--seeds", type=int, default=25)
    ap.add_argument("--budgets", default="50,100")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--options", default="{}", help="strategy constructor options as JSON, e.g. '{\"niches\": true}'")
    ap.add_argument("--no-runs", action="store_true", help="only the space's anatomy, no strategy runs")
    ap.add_argument("--within-path", action="store_true",
                    help="also run the strategy on the optimum's path alone (as if told the path)")
    ap.add_argument("--identify", default="", help="points per path, comma-separated: how well uniform "
                    "samples of each path single out the optimum's path")
    a = ap.parse_args(argv)
    try:
        data = _data(a.cache)
    except ForgeInputError as e:
        ap.error(str(e))
    names = [p.name for p in data.space.params]
    switches = a.switches.split(",") if a.switches else default_switches(data)
    unknown = [s for s in switches if s not in names]
    if unknown:
        ap.error(f"--switches: unknown parameter(s) {unknown}; this space has {names}")
    try:
        budgets = [int(b) for b in a.budgets.split(",")]
    except ValueError:
        ap.error(f"--budgets: expected comma-separated whole numbers, got {a.budgets!r}")
    try:
        identify = [int(k) for k in a.identify.split(",")] if a.identify else []
    except ValueError:
        ap.error(f"--identify: expected comma-separated whole numbers, got {a.identify!r}")
    if any(k < 1 for k in identify):
        ap.error(f"--identify: every number of points must be >= 1, got {a.identify!r}")
    if a.seeds < 1 or min(budgets) < 1:
        ap.error(f"--seeds and every budget must be >= 1 (got --seeds {a.seeds}, --budgets {a.budgets})")
    t = data.time_s / data.optimum_s
    paths = path_ids(data, switches)
    n = len(t)

    print(f"{data.name}: {n} valid points, {int(np.count_nonzero(~np.isfinite(t)))} failed; code paths by {switches}")
    print(f"{'path':<50} {'points':>6} {'failed':>6} {'best':>6} {'p5':>6} {'median':>7}")
    for label in sorted(set(paths), key=lambda p: np.nanmin(np.where(paths == p, t, np.nan))
                        if np.isfinite(t[paths == p]).any() else np.inf):
        v = t[paths == label]
        ok = v[np.isfinite(v)]
        cells = (f"{ok.min():6.3f} {np.percentile(ok, 5):6.2f} {np.median(ok):7.2f}" if len(ok) else
                 f"{'-':>6} {'-':>6} {'-':>7}")
        print(f"{label:<50} {len(v):6d} {len(v) - len(ok):6d} {cells}")

    finite = np.isfinite(t)
    print("\nlandscape (moves that change up to k parameters; steepest descent from every valid start):")
    for k in (1, 2, 3):
        local_optimum, end = steepest_descent(data.enumeration.valid, np.where(finite, t, np.inf), k)
        reached = t[end[finite]]
        n_opt = int(np.count_nonzero(local_optimum & finite))
        print(f"  k={k}: {n_opt} local optim{'um' if n_opt == 1 else 'a'}; descent ends at the optimum "
              f"from {np.mean(reached <= 1.0):.1%} of starts, within 1.10x from {np.mean(reached <= 1.10):.1%}, "
              f"mean end {reached.mean():.3f}x")

    if len(set(paths)) < 2:
        print("\none code path (no switch parameters; name some with --switches): nothing more to show")
        return
    best_path = paths[int(np.nanargmin(t))]
    outside = np.nanmin(np.where(paths != best_path, t, np.nan))
    tail = np.flatnonzero((paths == best_path) & (t < outside))
    print(f"\noptimum's path: {best_path}; best elsewhere {outside:.3f}x the optimum; "
          f"tail (points of that path faster than every other path): {len(tail)} = {len(tail) / n:.2%} of the space")
    for b in budgets:
        print(f"  uniform random search draws a tail point within {b} evaluations with P = {p_hit_random(n, len(tail), b):.3f}")
    if identify:
        n_paths = len(set(paths))
        print(f"\noptimum's path ranked first from k uniform points per path ({n_paths} paths, 400 draws):")
        rng = np.random.default_rng(0)
        for k in identify:
            shares = path_identification(t, paths, k, 400, rng)
            print(f"  k={k:<3} ({k * n_paths} evaluations): " +
                  ", ".join(f"{m} {v:.0%}" for m, v in shares.items()))
    if a.no_runs:
        return

    runs = _runs(a.cache, a.strategy, a.seeds, max(budgets), json.loads(a.options), a.jobs)
    tail_set = set(int(x) for x in tail)
    print(f"\n{a.strategy}, {a.seeds} seeds:")
    print(f"{'budget':>6} {'seeds with a tail point':>24} {'mean best/opt: those':>21} {'the others':>11} {'all':>7}")
    for b in budgets:
        hit, best = [], []
        for _, trace, rows in runs:
            hit.append(any(r in tail_set for r in rows[:b]))
            best.append(trace[min(b, len(trace)) - 1] / data.optimum_s)
        hit_a, best_a = np.array(hit), np.array(best)
        with_tail = f"{best_a[hit_a].mean():.3f}" if hit_a.any() else "-"
        without = f"{best_a[~hit_a].mean():.3f}" if (~hit_a).any() else "-"
        print(f"{b:6d} {f'{hit_a.sum()} of {len(hit_a)}':>24} {with_tail:>21} {without:>11} {best_a.mean():7.3f}")
    if a.within_path:
        rows = np.flatnonzero(paths == best_path)
        _DATA[f"{a.cache}#within"] = within(data, rows)
        told = _runs(f"{a.cache}#within", a.strategy, a.seeds, max(budgets), json.loads(a.options), a.jobs)
        print(f"\n{a.strategy} told the path (run on its {len(rows)} points alone), the same seeds:")
        for b in budgets:
            best = np.array([trace[min(b, len(trace)) - 1] for _, trace, _ in told]) / data.optimum_s
            print(f"  B={b}: mean best/opt {best.mean():.3f}, within 1.10x in {np.mean(best <= 1.10):.0%} of seeds")


if __name__ == "__main__":
    main()
