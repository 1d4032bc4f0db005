"""What a benchmark suite is made of: cases forge can tune, and the ones it cannot (with why).

A case keeps the benchmark's own identity (source, problem/operator name, id, workload uuid or
case_id, the var-axis values) next to the forge problem it maps to, so every report row can be
traced back to the public benchmark (benchmark-formats.md §5, "Identity").
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from forge.ops import get_op
from forge.problem import Problem


def slug(text: str) -> str:
    """Filesystem-safe name (run folders are named after cases)."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_")[:120]


@dataclass
class BenchCase:
    source: str                    # "sol_execbench" | "cannbench"
    source_name: str               # SOL definition name, or cann-bench operator (task folder) name
    source_id: str                 # SOL leaderboard id / example path, or cann-bench task path
    case_id: str                   # SOL workload uuid (or index), cann-bench case_id
    op: str
    shape: dict[str, int]
    dtype: str
    attrs: dict[str, Any] = field(default_factory=dict)
    axes: dict[str, Any] = field(default_factory=dict)       # the benchmark's own axis values
    tolerance: dict[str, Any] = field(default_factory=dict)  # the benchmark's tolerance spec
    notes: list[str] = field(default_factory=list)           # where forge's problem differs
    synthesized: dict[str, Any] = field(default_factory=dict)  # inputs forge made up, and how

    @property
    def key(self) -> str:
        return slug(f"{self.source}-{self.source_name}-{self.case_id}")

    def problem(self) -> Problem:
        return get_op(self.op).problem(dict(self.shape), self.dtype, dict(self.attrs))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Unsupported:
    source: str
    source_name: str
    source_id: str
    case_id: str
    reason: str
    axes: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Suite:
    name: str
    description: str = ""
    cases: list[BenchCase] = field(default_factory=list)
    unsupported: list[Unsupported] = field(default_factory=list)
    origin: str = ""               # file or folder it was loaded from

    def extend(self, other: "Suite") -> None:
        self.cases += other.cases
        self.unsupported += other.unsupported

    def select(self, ops: list[str] | None) -> "Suite":
        """Keep the cases whose forge op or benchmark operator/problem name matches one of `ops`."""
        if not ops:
            return self
        wanted = {o.lower() for o in ops}
        return Suite(self.name, self.description,
                     [c for c in self.cases if _matches(c.op, c.source_name, wanted)],
                     [u for u in self.unsupported if _matches(None, u.source_name, wanted)], self.origin)

    def unmatched(self, ops: list[str]) -> list[str]:
        """The names in `ops` that select no case (a typo beside a good name would go unnoticed)."""
        return [o for o in ops if not any(_matches(c.op, c.source_name, {o.lower()}) for c in self.cases)
                and not any(_matches(None, u.source_name, {o.lower()}) for u in self.unsupported)]

    def select_cases(self, ids: list[str]) -> "Suite":
        """Keep the cases (and unsupported entries) whose case_id is one of `ids`."""
        wanted = set(ids)
        return Suite(self.name, self.description, [c for c in self.cases if c.case_id in wanted],
                     [u for u in self.unsupported if u.case_id in wanted], self.origin)

    def case_ids(self) -> list[str]:
        """Every case_id of the suite, numbers in numeric order."""
        ids = {c.case_id for c in self.cases} | {u.case_id for u in self.unsupported}
        return sorted(ids, key=lambda i: (not i.isdigit(), int(i) if i.isdigit() else 0, i))


def _matches(op: str | None, name: str, wanted: set[str]) -> bool:
    """A forge op, a benchmark name, or that name without its number prefix or its variant suffix."""
    base = re.sub(r"^\d+_", "", name.lower())
    return (op or "").lower() in wanted or name.lower() in wanted or base in wanted or any(
        base.startswith(w + "_") for w in wanted)
