"""A generational genetic algorithm over the enumerated valid space (Kernel Tuner 1.5's, in forge).

Why forge has one: on spaces whose optimum sits in a small corner of one code path — the
shipped convolution_milo/A100 file is the example — a GA reaches that corner more often than a
surrogate does, because its children land where recombinations of good points land rather than
where a model fitted to all points predicts well (benchmarks/search_design_log.md, fourth and
fourteenth passes). It is not the default: on spaces a model can rank (gemm, pnpoly, the CPU
spaces) forge's default is better at every budget.

The algorithm follows Kernel Tuner 1.5's `genetic_algorithm` (kernel_tuner/strategies/
genetic_algorithm.py), so its rows in benchmarks/README.md can be read against Kernel Tuner's:
- generation 0: `pop_size` uniform random valid points;
- each next generation: `pop_size` distinct children; each pair of parents is drawn from the
  previous generation ranked best first, at index int(Beta(1, 2.5) * size) (Kernel Tuner's rank
  selection: the best third is drawn about half the time), crossed over at one random point of
  the parameter list (`crossover="single_point"`) or gene by gene (`"uniform"`);
- an invalid child is repaired to a random valid point at most one value step away in every
  parameter, else to a random valid point differing in one parameter, else to the nearest valid
  point (Kernel Tuner: strictly-adjacent, adjacent, Hamming neighbours);
- with chance 1 / `mutation_chance` a child moves to a random valid point differing in one
  parameter;
- no elitism: a generation replaces the previous one. A child measured before is a member at no
  cost (forge's budget counts unique evaluations, as Kernel Tuner's `max_fevals` does).

What forge adds: proposals are always valid and never repeated (the enumeration), failures rank
last, and batches: when a generation is fully proposed but not yet fully measured, the next one
is bred from the members measured so far (random points while fewer than two are), so an executor
with several slots is never left idle. With `ask(1)` the algorithm is exactly generational.
Deterministic for a fixed seed.

Defaults are Kernel Tuner's (`pop_size=26`, single-point crossover, `mutation_chance=55`); the
fourteenth pass of the design log measured `pop_size` 8–36 and the other choices.
"""
from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from forge.search.strategy import Strategy


class GeneticOptions(BaseModel):
    """GeneticStrategy's options (`sampler_options` in a tune config, `--options` of `forge replay`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pop_size: int = Field(26, ge=2, description="points per generation")
    crossover: Literal["single_point", "uniform"] = "single_point"
    mutation_chance: int = Field(55, ge=1, description="a child mutates with chance 1 in this")


class GeneticStrategy(Strategy):
    name = "ga"
    Options = GeneticOptions
    options: GeneticOptions

    def __init__(self, enumeration, seed: int = 0, **options: Any):
        super().__init__(enumeration, seed, **options)
        self._generation: list[int] = []      # rows of the current generation
        self._queue: list[int] = []           # its members not yet proposed
        self._stale = 0                        # consecutive generations with nothing new

    # -- the contract --------------------------------------------------------------------------
    def ask(self, n: int) -> list[dict[str, Any]]:
        out: list[int] = []
        while len(out) < n and not self.proposed.all():
            if not self._queue:
                self._next_generation()
            while self._queue and len(out) < n:
                row = self._queue.pop(0)
                if not self.proposed[row]:
                    self.proposed[row] = True
                    out.append(row)
        return [self.config(r) for r in out]

    # -- generations -----------------------------------------------------------------------------
    def _next_generation(self) -> None:
        parents = [r for r in self._generation if r in self.observed]
        if not self._generation or len(parents) < 2:
            # the first generation, or too few measured members to breed from: random valid points
            # (every point measured so far, warm-start points included, joins the parents of the next
            # generation; none of them is in `pick`, which is drawn from the unproposed points)
            free = np.flatnonzero(~self.proposed)
            pick = self.rng.choice(free, min(self.options.pop_size, len(free)), replace=False)
            self._generation = [int(r) for r in pick] + list(self.observed)
            self._queue = [int(r) for r in pick]
            return
        ranked = sorted(parents, key=self._sort_key)
        children: list[int] = []
        for _ in range(50 * self.options.pop_size):
            if len(children) >= self.options.pop_size:
                break
            a, b = self._select(ranked)
            for child in self._crossover(self.valid[a], self.valid[b]):
                row = self._mutate(self.repair(child))
                if row not in children:
                    children.append(row)
                if len(children) >= self.options.pop_size:
                    break
        self._stale = self._stale + 1 if all(self.proposed[r] for r in children) else 0
        if self._stale > 10:
            # ten generations in a row of points measured before (a converged population): one
            # random unmeasured point joins, so the search cannot stall
            free = np.flatnonzero(~self.proposed)
            children.append(int(free[self.rng.integers(len(free))]))
            self._stale = 0
        self._generation = children
        self._queue = list(children)

    def _sort_key(self, row: int) -> tuple[int, float]:
        value = self.observed.get(row)
        return (1, 0.0) if value is None else (0, float(value))

    def _select(self, ranked: list[int]) -> tuple[int, int]:
        """Two distinct parents by Kernel Tuner's rank selection: index int(Beta(1, 2.5) * size)."""
        size = len(ranked)
        i = int(self.rng.beta(1.0, 2.5) * size)
        j = i
        while j == i:
            j = int(self.rng.beta(1.0, 2.5) * size)
        return ranked[i], ranked[j]

    def _crossover(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.options.crossover == "uniform":
            take = self.rng.random(len(a)) > 0.5
            return np.where(take, a, b), np.where(take, b, a)
        cut = int(self.rng.random() * len(a))
        return np.concatenate([a[:cut], b[cut:]]), np.concatenate([b[:cut], a[cut:]])

    def _mutate(self, row: int) -> int:
        if int(self.rng.random() * self.options.mutation_chance) != 0:
            return row
        rows = self.neighbours(row)
        return int(rows[self.rng.integers(len(rows))]) if len(rows) else row
