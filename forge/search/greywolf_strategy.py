"""Adaptive tabu-guided grey-wolf search over the enumerated valid space (Kernel Tuner 1.5's, in forge).

Why forge has one: Kernel Tuner's `adaptive_tabu_greywolf` is the strongest of its strategies on
the shipped gemm and convolution spaces at 50 and 100 evaluations (benchmarks/README.md, "Results
over 100 seeds"); with it in forge, it runs in `forge tune` (batched, resumable, on every
backend) and its rows can be read against Kernel Tuner's own.

The algorithm follows kernel_tuner/strategies/gen_adaptive_tabu_greywolf.py:
- a pack of `pack_size` uniform random valid points;
- each iteration, the three best members (alpha, beta, delta) survive; every other member's child
  takes each parameter from one of alpha, beta, delta or itself, at random; with probability
  `shake_rate` (raised with stagnation, at most 0.5) it is shaken: with probability `jump_rate`
  one parameter takes a random valid point's value, else the child moves to a random valid point
  at most one value step away in every parameter;
- an invalid child is repaired to a valid point at most one value step away in every parameter,
  else one differing in one parameter, else the nearest; a child among the last
  `pack_size * tabu_factor` points visited moves to a random point differing in one parameter.
  Kernel Tuner repairs to the *first* such neighbour in its search-space order, which
  python-constraint builds from each parameter's last value down: of the candidates, the one with
  the largest values, first parameter first (`repair="last"`, the last in forge's ascending
  order). That order is a bias toward each parameter's last (usually largest, or switched-on)
  value, and it matters: on the shipped gemm/RTX_3090 file this port reads 1.085 / 1.029 at 50 /
  100 evaluations with it (Kernel Tuner 1.077 / 1.027) and 1.169 / 1.089 with a uniformly random
  candidate (`repair="random"`; seeds 0–99, benchmarks/search_design_log.md, sixteenth pass);
- simulated-annealing acceptance of each child against its parent, on the time difference in
  `time_unit_s` units (Kernel Tuner's milliseconds) at temperature
  max(`t_min`, `t0` exp(-`t_decay` · evaluations / `schedule_evals`)), reheated by 0.2 `t0` every
  `stagn_limit` / 2 iterations without a new best; after `stagn_limit` of them the worst
  `restart_ratio` of the pack is replaced by random points.

What forge adds: proposals are always valid and never repeated (a child measured before is a
member at no cost, as with Kernel Tuner's cache), failures rank last, and batches: the children of
one iteration are proposed together, and an `ask` that finds every child in flight fills the rest
with random points, which join the pack in place of its worst member when they beat it. With
`ask(1)` the algorithm is Kernel Tuner's. `start="measured"` starts the pack from the best points
already measured instead of new random ones (forge's default strategy, with `pack_every`, uses it
after its space-filling start). Defaults are Kernel Tuner's (its `budget` option, 5000, is
`schedule_evals`). Deterministic for a fixed seed.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from forge.search.strategy import Strategy


class GreyWolfOptions(BaseModel):
    """GreyWolfStrategy's options (`sampler_options` in a tune config, `--options` of `forge replay`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pack_size: int = Field(8, ge=4, description="wolves in the pack (three lead)")
    tabu_factor: int = Field(3, ge=1, description="tabu list length in packs")
    shake_rate: float = Field(0.2, ge=0, le=1, description="base chance a child is shaken")
    jump_rate: float = Field(0.15, ge=0, le=1, description="chance a shake is a one-parameter random jump")
    stagn_limit: int = Field(80, ge=2, description="iterations without a new best before a partial restart")
    restart_ratio: float = Field(0.3, gt=0, le=1, description="share of the pack a restart replaces")
    t0: float = Field(1.0, gt=0, description="initial annealing temperature")
    t_decay: float = Field(5.0, ge=0, description="temperature decay over schedule_evals")
    t_min: float = Field(1e-4, gt=0, description="lowest temperature")
    schedule_evals: int = Field(5000, ge=1, description="evaluations the temperature schedule spans")
    time_unit_s: float = Field(1e-3, gt=0, description="unit of the time difference in the acceptance")
    repair: Literal["last", "random"] = "last"
    start: Literal["random", "measured"] = "random"


class GreyWolfStrategy(Strategy):
    name = "greywolf"
    Options = GreyWolfOptions
    options: GreyWolfOptions

    def __init__(self, enumeration, seed: int = 0, **options: Any):
        super().__init__(enumeration, seed, **options)
        o = self.options
        self._tabu: deque[int] = deque(maxlen=o.pack_size * o.tabu_factor)
        self._pack: list[list[Any]] = []        # [row, value] per wolf (value inf: failed)
        self._children: dict[int, int] = {}     # wolf index -> child row awaiting its value
        self._fill: list[int] = []              # wolves (by index) being replaced: start or restart
        self._queue: list[int] = []             # rows of the current step not yet proposed
        self._iterating = False                 # an iteration's children are out
        self._extra: set[int] = set()           # batch fillers in flight
        self._best = math.inf
        self._stagn = 0
        self._evals = 0

    # -- the contract --------------------------------------------------------------------------
    def ask(self, n: int) -> list[dict[str, Any]]:
        out: list[int] = []
        while len(out) < n and not self.proposed.all():
            if self._queue:
                row = self._queue.pop(0)
                if not self.proposed[row]:
                    self.proposed[row] = True
                    out.append(row)
            elif self._waiting():
                free = np.flatnonzero(~self.proposed)
                row = int(free[self.rng.integers(len(free))])
                self.proposed[row] = True
                self._extra.add(row)
                out.append(row)
            else:
                self._step()
        return [self.config(r) for r in out]

    def tell(self, config: dict[str, Any], value: float | None) -> None:
        super().tell(config, value)
        row = self.row(config)
        if row in self._extra:
            self._extra.discard(row)
            if self._pack:
                worst = max(range(len(self._pack)), key=lambda i: self._pack[i][1])
                if self._value(row) < self._pack[worst][1]:
                    self._pack[worst] = [row, self._value(row)]
        if not self._waiting():
            self._finish_step()

    # -- steps ---------------------------------------------------------------------------------
    def _value(self, row: int) -> float:
        v = self.observed.get(row)
        return math.inf if v is None else float(v)

    def _known(self, row: int) -> bool:
        return row in self.observed

    def _waiting(self) -> bool:
        rows = [self._pack[i][0] for i in self._fill] + list(self._children.values())
        return any(not self._known(r) for r in rows)

    def _random_rows(self, k: int) -> list[int]:
        free = np.flatnonzero(~self.proposed)
        pool = free if len(free) >= k else np.arange(len(self.valid))
        return [int(r) for r in self.rng.choice(pool, min(k, len(pool)), replace=False)]

    def _step(self) -> None:
        """Start the next step: the first pack, or one iteration's children."""
        if not self._pack:
            measured = sorted(self.observed, key=self._value)[: self.options.pack_size]
            if self.options.start == "measured" and len(measured) >= 4:
                # the pack starts from the best points already measured (a caller's space-filling
                # start), so no evaluations go to a second random start
                self._pack = [[r, self._value(r)] for r in measured]
                self._tabu.extend(measured)
                self._best = self._pack[0][1]
                self._step()
                return
            rows = self._random_rows(self.options.pack_size)
            self._pack = [[r, math.inf] for r in rows]
            self._fill = list(range(len(rows)))
            self._queue = [r for r in rows if not self._known(r)]
            self._tabu.extend(rows)
            self._settle()
            return
        self._pack.sort(key=lambda w: w[1])
        leaders = [w[0] for w in self._pack[:3]]
        shake_p = min(0.5, self.options.shake_rate * (1 + self._stagn / self.options.stagn_limit))
        self._iterating = True
        for i, (row, _) in enumerate(self._pack):
            if row in leaders:
                continue
            child = self._child(leaders, row, shake_p)
            self._tabu.append(child)
            self._children[i] = child
            if not self._known(child) and not self.proposed[child]:
                self._queue.append(child)
        self._settle()

    def _settle(self) -> None:
        """Close the step at once when nothing of it needs measuring (every child known)."""
        if not self._waiting():
            self._finish_step()

    def _finish_step(self) -> None:
        if self._fill:
            for i in self._fill:
                self._pack[i][1] = self._value(self._pack[i][0])
            self._evals += len(self._fill)
            self._fill = []
            self._pack.sort(key=lambda w: w[1])
            self._best = min(self._best, self._pack[0][1])
        elif self._iterating:
            self._iterating = False
            temp = max(self.options.t_min, self.options.t0 * math.exp(-self.options.t_decay * self._evals
                                                                      / self.options.schedule_evals))
            if self._stagn and self._stagn % max(1, self.options.stagn_limit // 2) == 0:
                temp += self.options.t0 * 0.2
            for i, child in self._children.items():
                self._evals += 1
                d = self._value(child) - self._pack[i][1]
                de = 0.0 if math.isnan(d) else d / self.options.time_unit_s
                if de <= 0 or self.rng.random() < math.exp(-de / temp):
                    self._pack[i] = [child, self._value(child)]
            self._children = {}
            self._pack.sort(key=lambda w: w[1])
            if self._pack[0][1] < self._best:
                self._best, self._stagn = self._pack[0][1], 0
            else:
                self._stagn += 1
            if self._stagn >= self.options.stagn_limit:
                k = math.ceil(len(self._pack) * self.options.restart_ratio)
                rows = self._random_rows(k)
                self._fill = list(range(len(self._pack) - len(rows), len(self._pack)))
                for i, r in zip(self._fill, rows):
                    self._pack[i] = [r, math.inf]
                self._queue = [r for r in rows if not self._known(r)]
                self._tabu.extend(rows)
                self._stagn = 0
                self._settle()

    def _child(self, leaders: list[int], row: int, shake_p: float) -> int:
        """A non-leader's child: recombined with the leaders, perhaps shaken, repaired, off the tabu list."""
        idx = np.array([self.valid[self.rng.choice([*leaders, row])][j] for j in range(len(self.sizes))])
        if self.rng.random() < shake_p:
            if self.rng.random() < self.options.jump_rate:
                j = int(self.rng.integers(len(idx)))
                idx[j] = self.valid[int(self.rng.integers(len(self.valid))), j]
            else:
                diff = np.abs(self.valid - idx)
                # Kernel Tuner: "adjacent" neighbours in the first half of its schedule, then
                # "strictly-adjacent"; over valid points both are at most one step in every parameter
                near = np.flatnonzero((diff.max(axis=1) <= 1) & (diff.sum(axis=1) > 0))
                if len(near):
                    idx = self.valid[int(near[self.rng.integers(len(near))])].copy()
        child = self.repair(idx, self.options.repair)
        if child in self._tabu:
            hamming = self.neighbours(child)
            if len(hamming):
                child = int(hamming[self.rng.integers(len(hamming))])
        return child
