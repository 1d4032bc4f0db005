"""The strategy contract: propose valid, not-yet-proposed configs; learn from their outcomes.

Strategies work on the *enumerated valid space* that forge owns, so nothing they propose breaks a
hard constraint and no budget is spent on infeasible points. Values are seconds (lower is better);
`None` means the variant failed (compile error, crash, hang, wrong result).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from forge.errors import ForgeInputError, allowed_list
from forge.space import Enumeration, Space


class NoOptions(BaseModel):
    """A strategy with no options of its own: any option given is a typo."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Strategy(ABC):
    name: str = ""
    Options: ClassVar[type[BaseModel]] = NoOptions

    def __init__(self, enumeration: Enumeration, seed: int = 0, **options: Any):
        self.enum = enumeration
        self.space: Space = enumeration.space
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.options = parse_options(self.Options, options, self.name)
        self.sizes = np.array([len(p.values) for p in self.space.params], dtype=np.int64)
        self.valid = enumeration.valid.astype(np.int64)
        self.valid_flat = self._flat(self.valid)
        self.row_of = {int(f): i for i, f in enumerate(self.valid_flat)}
        self.proposed = np.zeros(len(self.valid), dtype=bool)
        self.observed: dict[int, float | None] = {}   # valid-row -> value
        # evaluations the caller means to spend (forge tune's trials, forge replay's budget), where
        # known: a strategy may size its phases by it (forge's start: forge_strategy.start_size)
        self.budget: int | None = None

    # -- the contract ------------------------------------------------------------------------
    @abstractmethod
    def ask(self, n: int) -> list[dict[str, Any]]:
        """Up to `n` distinct valid configs never proposed before (fewer when the space is spent)."""

    def tell(self, config: dict[str, Any], value: float | None) -> None:
        row = self.row(config)
        self.proposed[row] = True
        self.observed[row] = value

    def reserve(self, config: dict[str, Any]) -> None:
        """A config the caller evaluates on its own (a warm-start seed): never propose it."""
        self.proposed[self.row(config)] = True

    def warm_start(self, observations: list[tuple[dict[str, Any], float | None]]) -> None:
        """Results known before the search (resume, or earlier runs on nearby shapes)."""
        for cfg, value in observations:
            if self.contains(cfg):
                self.tell(cfg, value)

    # -- helpers -------------------------------------------------------------------------------
    def _flat(self, idx: np.ndarray) -> np.ndarray:
        if idx.size == 0:
            return np.zeros(len(idx), dtype=np.int64)
        return np.ravel_multi_index(tuple(idx.T), tuple(self.sizes)).astype(np.int64)

    def contains(self, config: dict[str, Any]) -> bool:
        try:
            return self.row(config) is not None
        except (KeyError, ValueError):
            return False

    def row(self, config: dict[str, Any]) -> int:
        idx = np.array([self.space.indices(config)], dtype=np.int64)
        return self.row_of[int(self._flat(idx)[0])]

    def config(self, row: int) -> dict[str, Any]:
        return self.space.config_from_indices(self.valid[row])

    def pending(self) -> list[int]:
        """Rows proposed and not yet told: in flight (or reserved for the caller)."""
        told = np.zeros(len(self.proposed), dtype=bool)
        told[list(self.observed)] = True
        return [int(r) for r in np.flatnonzero(self.proposed & ~told)]

    def remaining(self) -> int:
        return int(np.count_nonzero(~self.proposed))

    def nearest_unproposed(self, idx: np.ndarray) -> int | None:
        """Valid, unproposed row closest to an index vector (ordered params by normalised distance,
        categorical params by mismatch); ties broken by the seeded generator."""
        free = np.flatnonzero(~self.proposed)
        if not len(free):
            return None
        cand = self.valid[free]
        ordered = np.array([p.ordered for p in self.space.params])
        scale = np.maximum(self.sizes - 1, 1)
        d = np.where(ordered, np.abs(cand - idx) / scale, (cand != idx).astype(float)).sum(axis=1)
        best = np.flatnonzero(d == d.min())
        return int(free[best[self.rng.integers(len(best))]])

    def neighbours(self, row: int) -> np.ndarray:
        """Valid rows that differ from `row` in exactly one parameter (any other value of it)."""
        return np.flatnonzero(np.count_nonzero(self.valid != self.valid[row], axis=1) == 1)

    def repair(self, idx: np.ndarray, pick: Literal["random", "last"] = "random") -> int:
        """The valid row of an index vector, or of a valid point close to it (Kernel Tuner's repair):
        one at most one value step away in every parameter, else one differing in one parameter,
        else the nearest. `pick` chooses among the candidates: "random" (seeded), or "last" in
        the enumeration's order (the largest values, first parameter first)."""
        row = self.row_of.get(int(self._flat(idx[None, :])[0]))
        if row is not None:
            return row
        diff = np.abs(self.valid - idx)
        for near in (diff.max(axis=1) <= 1, np.count_nonzero(diff, axis=1) == 1):
            rows = np.flatnonzero(near)
            if len(rows):
                return int(rows[-1]) if pick == "last" else int(rows[self.rng.integers(len(rows))])
        return int(np.argmin(diff.sum(axis=1)))

    def best(self) -> tuple[dict[str, Any], float] | None:
        ok = [(r, v) for r, v in self.observed.items() if v is not None]
        if not ok:
            return None
        r, v = min(ok, key=lambda x: x[1])
        return self.config(r), v


def parse_options(model: type[BaseModel], options: dict[str, Any], strategy: str,
                  field: str = "sampler_options") -> BaseModel:
    """A strategy's options checked against its schema; the first bad one is a ForgeInputError
    naming `field.<option>` and what is allowed, so a typo never passes silently as a default."""
    try:
        return model(**options)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = ".".join(str(x) for x in err["loc"])
        if err["type"] == "extra_forbidden":
            raise ForgeInputError(f"{field}.{name}", f"not an option of {strategy or 'this strategy'}; "
                                                     f"{allowed_list(name, sorted(model.model_fields))}") from None
        raise ForgeInputError(f"{field}.{name}", f"{err['msg']} (got {err['input']!r})") from None
