"""Search spaces: typed parameters and hard constraints, written once, enumerated fast.

A constraint is a function of a column dict (parameter name -> numpy array, or -> scalar) that
returns which points satisfy it. The same expression therefore checks one config (scalars) and
enumerates a million-point Cartesian product (arrays) without a Python loop per point. The
explanation with numbers (e.g. "UB 201 KiB > 192 KiB: ...") comes from the same resource function.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from forge.errors import ForgeInputError, allowed_list

Cols = Mapping[str, Any]


@dataclass(frozen=True)
class Param:
    """A tunable parameter over an explicit, finite list of values.

    `ordered` says the values have a meaningful order (sizes, depths), which search strategies
    use to take neighbours; unordered choices (loop order, schedule) are categorical.
    """

    name: str
    values: tuple[Any, ...]
    ordered: bool = True
    doc: str = ""

    def index(self, value: Any) -> int:
        """The position of `value`, compared with its type: in Python true == 1 and 16.0 == 16, and
        `l0_db=true` taken as l0_db=1 would be the opposite of what was meant."""
        for i, allowed in enumerate(self.values):
            if value == allowed and _same_kind(value, allowed):
                return i
        raise ForgeInputError(f"space.{self.name}", f"value {value!r} not allowed; allowed: {list(self.values)}")


def _same_kind(value: Any, allowed: Any) -> bool:
    """A bool matches only a bool, and a float never stands for an int."""
    if isinstance(value, bool) or isinstance(allowed, bool):
        return isinstance(value, bool) and isinstance(allowed, bool)
    return not (isinstance(value, float) and isinstance(allowed, int))


def choice(name: str, values: Iterable[Any], ordered: bool = False, doc: str = "") -> Param:
    return Param(name, tuple(values), ordered, doc)


def int_range(name: str, lo: int, hi: int, step: int = 1, doc: str = "") -> Param:
    return Param(name, tuple(range(lo, hi + 1, step)), True, doc)


def pow2(name: str, lo: int, hi: int, doc: str = "") -> Param:
    if lo < 1 or lo & (lo - 1) or hi & (hi - 1):
        raise ValueError(f"pow2 bounds must be powers of two, got {lo}..{hi}")
    return Param(name, tuple(1 << e for e in range(int(math.log2(lo)), int(math.log2(hi)) + 1)), True, doc)


@dataclass(frozen=True)
class Constraint:
    """A hard rule. `ok(cols)` is vectorised; `explain(config)` says why a point fails."""

    name: str
    ok: Callable[[Cols], Any]
    explain: Callable[[dict[str, Any]], str] | None = None

    def reason(self, config: dict[str, Any]) -> str:
        return f"{self.name}: {self.explain(config)}" if self.explain else self.name


def limit(name: str, usage: Callable[[Cols], Any], cap: float, unit: str = "",
          parts: Callable[[dict[str, Any]], str] | None = None, scale: float = 1.0) -> Constraint:
    """Constraint `usage(cols) <= cap`, explained as `name usage > cap: parts` in `unit`s of `scale`."""

    def fmt(x: float) -> str:
        v = x / scale
        return f"{v:g} {unit}".strip() if v == int(v) else f"{v:.1f} {unit}".strip()

    def explain(cfg: dict[str, Any]) -> str:
        text = f"{fmt(float(usage(cfg)))} > {fmt(cap)}"
        return f"{text}: {parts(cfg)}" if parts else text

    return Constraint(name, lambda c: np.asarray(usage(c)) <= cap, explain)


@dataclass
class Enumeration:
    """All Cartesian points of a space, each either valid or tagged with its first failing rule."""

    space: "Space"
    valid: np.ndarray            # [n_valid, n_params] value indices of valid points
    reason_counts: dict[str, int]
    cartesian: int

    def __len__(self) -> int:
        return len(self.valid)

    def config(self, i: int) -> dict[str, Any]:
        return self.space.config_from_indices(self.valid[i])

    def configs(self) -> list[dict[str, Any]]:
        return [self.config(i) for i in range(len(self.valid))]


@dataclass
class Space:
    params: list[Param]
    constraints: list[Constraint] = field(default_factory=list)

    def __post_init__(self) -> None:
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate parameter names in {names}")

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise ForgeInputError(f"space.{name}", f"unknown parameter; {allowed_list(name, self.names)}")

    def cartesian_size(self) -> int:
        return math.prod(len(p.values) for p in self.params)

    def restrict(self, overrides: Mapping[str, Any]) -> "Space":
        """Fix a parameter (scalar) or restrict it to a subset (list); unknown names or values fail."""
        new = []
        for p in self.params:
            if p.name not in overrides:
                new.append(p)
                continue
            want = overrides[p.name]
            want = list(want) if isinstance(want, (list, tuple)) else [want]
            if not want:
                raise ForgeInputError(f"space.{p.name}", f"an empty list leaves no value to tune; give one or more "
                                                         f"of {list(p.values)}, or leave {p.name} out")
            keep = sorted({p.index(v) for v in want})
            new.append(Param(p.name, tuple(p.values[i] for i in keep), p.ordered, p.doc))
        for name in overrides:
            self.param(name)
        return Space(new, list(self.constraints))

    def config_from_indices(self, idx: Sequence[int]) -> dict[str, Any]:
        return {p.name: _py(p.values[int(i)]) for p, i in zip(self.params, idx)}

    def indices(self, config: Mapping[str, Any]) -> list[int]:
        missing = [n for n in self.names if n not in config]
        if missing:
            raise ForgeInputError(f"config.{missing[0]}", "missing parameter")
        return [p.index(config[p.name]) for p in self.params]

    def check(self, config: Mapping[str, Any]) -> list[str]:
        """All failed constraints of one config, with their explanations."""
        cfg = dict(config)
        return [c.reason(cfg) for c in self.constraints if not bool(np.all(c.ok(cfg)))]

    def enumerate(self, chunk: int = 1 << 20) -> Enumeration:
        """Every Cartesian point, vectorised in chunks; invalid points counted by first failing rule."""
        sizes = [len(p.values) for p in self.params]
        total = math.prod(sizes)
        counts = {c.name: 0 for c in self.constraints}
        kept: list[np.ndarray] = []
        value_arrays = [_as_array(p.values) for p in self.params]
        for start in range(0, total, chunk):
            flat = np.arange(start, min(total, start + chunk), dtype=np.int64)
            idx = np.stack(np.unravel_index(flat, sizes), axis=1) if sizes else np.zeros((len(flat), 0), np.int64)
            alive = np.ones(len(flat), dtype=bool)
            cols = {p.name: vals[idx[:, j]] for j, (p, vals) in enumerate(zip(self.params, value_arrays))}
            for c in self.constraints:
                if not alive.any():
                    break
                sub = {k: v[alive] for k, v in cols.items()}
                ok = np.broadcast_to(np.asarray(c.ok(sub), dtype=bool), (int(alive.sum()),))
                where = np.flatnonzero(alive)
                counts[c.name] += int(np.count_nonzero(~ok))
                alive[where[~ok]] = False
            kept.append(idx[alive].astype(np.int32))
        valid = np.concatenate(kept) if kept else np.zeros((0, len(sizes)), np.int32)
        return Enumeration(self, valid, {k: v for k, v in counts.items() if v}, total)

    def iter_cartesian(self) -> Iterable[dict[str, Any]]:
        for combo in itertools.product(*(p.values for p in self.params)):
            yield dict(zip(self.names, combo))


def _as_array(values: tuple[Any, ...]) -> np.ndarray:
    if all(isinstance(v, bool) for v in values):
        return np.array(values, dtype=bool)
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        return np.array(values, dtype=np.int64)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return np.array(values, dtype=np.float64)
    return np.array(values, dtype=object)


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v
