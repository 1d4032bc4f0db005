"""Run a strategy over a replayed brute-forced space with forge's budget accounting.

Budget = unique valid evaluations: every proposal that is in the space (successful or failed)
costs one; an infeasible proposal (not in the cache) costs nothing and is not told; a repeated
proposal is served from what was already measured and costs nothing. An optional simulated time
budget adds up the recorded compile + verify + benchmark time of each evaluation.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from forge.backends.replay import ReplayBackend, ReplayData
from forge.backends.replay.cache import COST_FIELDS
from forge.errors import ForgeInputError
from forge.search.strategies import get_strategy
from forge.search.strategy import Strategy


@dataclass
class ReplayResult:
    strategy: str
    seed: int
    best_s: float                     # best successful time found (worst successful if none)
    found: bool                       # at least one success
    evaluations: int                  # unique valid evaluations spent
    failures: int                     # of which failed (compile/runtime)
    infeasible: int                   # infeasible proposals (free)
    simulated_s: float                # recorded build + benchmark seconds spent, over all slots
    elapsed_s: float                  # simulated wall clock: the last evaluation's finish
    trace: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))  # best-so-far per evaluation
    proposals: list[dict[str, Any]] = field(repr=False, default_factory=list)


def run_replay(data: ReplayData, strategy: str | Strategy, budget: int, seed: int = 0, batch: int = 1,
               time_budget_s: float | None = None, **options: Any) -> ReplayResult:
    """Ask/tell `strategy` on `data` until `budget` unique valid evaluations (or the time budget,
    or the space) are spent. `strategy` is a registry name or an already built Strategy over
    `data.enumeration`.

    `batch` evaluations run at once, as `forge tune`'s loop runs them (forge/tuner.py `_search`):
    the strategy is asked for as many points as there are free slots, each evaluation holds its
    slot for its recorded cost, and each one that finishes is told and its slot refilled while the
    others still run. The clock is simulated, so the run — which points finish first, hence what
    the strategy knows at each ask — is the same for the same seed. With batch 1 this is plain
    sequential ask/tell; a time budget is on this simulated wall clock, as `--time-budget` is."""
    if time_budget_s is not None and data.costless:
        # Kernel Tuner refuses a time limit on such a file too: its evaluations would cost nothing
        raise ForgeInputError("time_budget_s", f"{data.path}: {data.costless} of its records have none of "
                                               f"{', '.join(COST_FIELDS)}, so a time budget cannot be spent "
                                               "as on hardware; give a budget of evaluations only")
    backend = ReplayBackend(data)
    strat = strategy if isinstance(strategy, Strategy) else get_strategy(strategy, data.enumeration, seed, **options)
    strat.budget = budget
    seen: dict[int, float | None] = {}
    worst = float(np.nanmax(data.time_s))
    best, started, evals, fails, infeasible, spent, clock = np.inf, 0, 0, 0, 0, 0.0, 0.0
    trace: list[float] = []
    proposals: list[dict[str, Any]] = []
    running: list[tuple[float, int, int, dict[str, Any], float | None]] = []   # heap: (finish, order, row, ...)
    stalled, exhausted = 0, False
    while True:
        room = min(batch, budget - evals) - len(running)
        if room > 0 and not exhausted and (time_budget_s is None or clock < time_budget_s):
            configs = strat.ask(room)
            exhausted = not configs
            submitted = False
            for cfg in configs:
                proposals.append(cfg)
                row = data.row_of_config(cfg)
                if row is None:
                    infeasible += 1
                    continue
                if row in seen:
                    strat.tell(cfg, seen[row])
                    continue
                if any(r == row for _, _, r, _, _ in running):
                    continue     # proposed again while it runs: told when it finishes
                value, status, cost = backend.evaluate_row(row)
                heapq.heappush(running, (clock + cost, started, row, cfg, value))
                started += 1
                spent += cost
                submitted = True
            stalled = 0 if submitted else stalled + 1
            if not running and not exhausted and stalled <= 1000:
                continue         # only infeasible or repeated points: ask again (a strategy that
                                 # does nothing else is stopped after 1000 tries)
        if not running:
            break
        clock, _, row, cfg, value = heapq.heappop(running)
        seen[row] = value
        evals += 1
        if value is None:
            fails += 1
        else:
            best = min(best, value)
        trace.append(best if np.isfinite(best) else worst)
        strat.tell(cfg, value)
    found = bool(np.isfinite(best))
    return ReplayResult(strat.name or type(strat).__name__, seed, best if found else worst, found, evals, fails, infeasible,
                        spent, clock, np.array(trace), proposals)
