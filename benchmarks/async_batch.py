"""What running several evaluations at once costs forge's default strategy, and what treating the
points in flight as part of the batch buys back.

`forge tune` keeps `batch` evaluations in flight and refills each slot as it frees, asking the
strategy for one point while the others still run. The strategy damps the neighbours of points in
flight as it damps those of points chosen in one batch (forge/search/forge_strategy.py, step 3).
This benchmark replays that loop (forge/search/replay_run.py, a simulated clock from the file's
recorded build and run times) on each space, side by side in one run:

- `sequential`: batch 1, one evaluation at a time (the search-efficiency table's setting);
- `in flight damped`: batch B, the default strategy;
- `in flight ignored`: batch B, the same strategy blind to its points in flight (it only never
  proposes them again), which is what the loop gave before the damping reached them.

It prints mean best/optimum over the seeds (± standard error) at each budget, the simulated wall
clock of a run at the largest budget (what the batch buys), and the paired differences of the
damped mode from the other two over the same seeds (negative: the damped mode is better).

    .venv/bin/python benchmarks/async_batch.py                         # shipped spaces, batch 8, 25 seeds
    .venv/bin/python benchmarks/async_batch.py my_cache.json.gz --batch 4 --seeds 50
"""
from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from forge.backends.replay import load_cache
from forge.errors import ForgeInputError
from forge.search.forge_strategy import ForgeStrategy
from forge.search.replay_run import run_replay

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_efficiency import parse_budgets  # noqa: E402

SHIPPED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tuningdata"


class InFlightIgnored(ForgeStrategy):
    """The default strategy with no view of its points in flight (the ablation)."""

    def pending(self) -> list[int]:
        return []


def one_run(path: str, mode: str, batch: int, budget: int, seed: int) -> tuple[list[float], float]:
    data = load_cache(path)
    strategy = (InFlightIgnored if mode == "in flight ignored" else ForgeStrategy)(data.enumeration, seed)
    r = run_replay(data, strategy, budget, seed=seed, batch=1 if mode == "sequential" else batch)
    return list(r.trace / data.optimum_s), r.elapsed_s


MODES = ("sequential", "in flight damped", "in flight ignored")


def _mean_se(values: np.ndarray, fmt: str = ".4f") -> str:
    return f"{values.mean():{fmt}} ± {values.std(ddof=1) / np.sqrt(len(values)):.4f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cachefiles", nargs="*", help="Kernel Tuner cache files (default: the shipped spaces)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--budgets", default="50,100")
    ap.add_argument("--seeds", type=int, default=25)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    budgets = sorted(parse_budgets(ap, args.budgets))
    if args.batch < 1 or args.seeds < 2 or args.jobs < 1:
        ap.error(f"--batch and --jobs must be >= 1 and --seeds >= 2, for a standard error "
                 f"(got {args.batch}, {args.jobs}, {args.seeds})")
    files = args.cachefiles or sorted(str(p) for p in SHIPPED.glob("*/*.json*"))
    if not files:
        print(f"no cache files given and none under {SHIPPED}", file=sys.stderr)
        return 2
    for path in files:                    # read before any worker starts: a bad file is named, exit 2
        try:
            load_cache(path)
        except ForgeInputError as exc:
            ap.error(str(exc))
    print(f"batch {args.batch}, seeds 0..{args.seeds - 1}; best/optimum at each budget (± standard error over "
          "the seeds); clock: simulated wall time of a run at the largest budget")
    print(f"| space | mode | {' | '.join(f'@{b}' for b in budgets)} | clock (s) |")
    print(f"|---|---|{'---|' * len(budgets)}---|")
    with ProcessPoolExecutor(args.jobs) as pool:
        for path in files:
            name = Path(path).parent.name + "/" + Path(path).name.split(".")[0]
            at: dict[str, np.ndarray] = {}        # mode -> [seed, budget] best/optimum
            for mode in MODES:
                runs = list(pool.map(one_run, *zip(*[(path, mode, args.batch, budgets[-1], s)
                                                      for s in range(args.seeds)])))
                at[mode] = np.array([[trace[min(b, len(trace)) - 1] for b in budgets] for trace, _ in runs])
                clock = np.mean([c for _, c in runs])
                print(f"| {name} | {mode} | {' | '.join(_mean_se(col) for col in at[mode].T)} | {clock:.1f} |",
                      flush=True)
            # the same seeds in every mode: their paired differences are the precise comparison
            for other in MODES[0], MODES[2]:
                diff = at[MODES[1]] - at[other]
                print(f"| {name} | damped − {other} (paired) | {' | '.join(_mean_se(col, '+.4f') for col in diff.T)} | |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
