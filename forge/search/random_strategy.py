"""Uniform random search without replacement over the valid space (the methodology's baseline)."""
from __future__ import annotations

from typing import Any

from forge.search.strategy import Strategy


class RandomStrategy(Strategy):
    """A seeded permutation of the valid rows, served in order; never repeats, never infeasible."""

    name = "random"

    def __init__(self, enumeration, seed: int = 0, **options: Any):
        super().__init__(enumeration, seed, **options)
        self._order = self.rng.permutation(len(self.valid))
        self._next = 0

    def ask(self, n: int) -> list[dict[str, Any]]:
        out = []
        while len(out) < n and self._next < len(self._order):
            row = int(self._order[self._next])
            self._next += 1
            if not self.proposed[row]:
                self.proposed[row] = True
                out.append(self.config(row))
        return out
