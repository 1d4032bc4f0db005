"""What it would take for one strategy to read *ahead* of another on one space and budget, the way
search_efficiency.py reads its targets (means of best/optimum apart by more than twice their
standard error over the seeds).

For each budget: both strategies' mean ± standard error, the share of seeds that ended at the
optimum, the reference's misses (seed: best/optimum), and the reading if every miss of the
reference had instead ended at the k-th best point of the space, for the few best points: the
smallest k that still reads "ahead" says how close to perfect the reference must be.

    python benchmarks/target_reach.py ../shared/data/tuningdata/pnpoly/RTX_3090.json.gz \\
        [--reference forge] [--rival optuna-gp] [--budgets 50,100] [--seeds 100] [--jobs 2]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import search_efficiency as se  # noqa: E402

BEST_POINTS = 8      # the reading is tried with the misses at each of the space's best points


def ratios(path: str, strategy: str, budgets: list[int], seeds: int, jobs: int) -> dict[int, np.ndarray]:
    """best/optimum per seed (rows in seed order) at each budget."""
    data = se._data(path)
    tasks = [(path, strategy, max(budgets), s) for s in range(seeds)]
    with mp.get_context("fork").Pool(jobs) as pool:
        runs = sorted(pool.map(se.one_run, tasks), key=lambda r: r[0][2])
    bad = [f"seed {key[2]}: {tr}" for key, tr, _ in runs if isinstance(tr, str)]
    if bad:
        raise SystemExit(f"{strategy} failed: {bad[0]}")
    return {b: np.array([tr[b - 1] for _, tr, _ in runs]) / data.optimum_s for b in budgets}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cachefile")
    ap.add_argument("--reference", default="forge")
    ap.add_argument("--rival", default="optuna-gp")
    ap.add_argument("--budgets", default="50,100")
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    budgets = se.parse_budgets(ap, a.budgets)
    if a.seeds < 2 or a.jobs < 1:
        ap.error(f"--seeds must be >= 2 (a standard error needs two) and --jobs >= 1 (got {a.seeds}, {a.jobs})")
    unknown = [s for s in (a.reference, a.rival) if s not in se.strategy_names()]
    if unknown:
        ap.error(f"unknown strategy {', '.join(map(repr, unknown))}; allowed: {', '.join(se.strategy_names())}")
    data = se.read_or_refuse(ap, a.cachefile)
    times = data.time_s[np.isfinite(data.time_s)]
    best_points = np.sort(times)[:BEST_POINTS] / data.optimum_s
    print(f"{a.cachefile}: {len(times)} points ran; the best {BEST_POINTS} at "
          + ", ".join(f"{x:.4f}" for x in best_points) + " of the optimum")
    ref = ratios(a.cachefile, a.reference, budgets, a.seeds, a.jobs)
    rival = ratios(a.cachefile, a.rival, budgets, a.seeds, a.jobs)
    for b in budgets:
        r, v = ref[b], rival[b]
        (mr, sr), (mv, sv) = se._mean_se(r), se._mean_se(v)
        print(f"\nB={b}: {a.reference} {mr:.5f} ± {sr:.5f} (at the optimum in {np.mean(r <= 1 + 1e-9):.0%} of seeds), "
              f"{a.rival} {mv:.5f} ± {sv:.5f} ({np.mean(v <= 1 + 1e-9):.0%}): {a.reference} reads "
              f"{se.compare(r, v)}")
        misses = {s: round(float(x), 4) for s, x in enumerate(r) if x > 1 + 1e-9}
        print(f"  {a.reference}'s misses (seed: best/optimum): {misses or 'none'}")
        for k, cap in enumerate(best_points[1:], 2):
            print(f"  every miss at best point #{k} ({cap:.4f}): {se.compare(np.minimum(r, cap), v)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
