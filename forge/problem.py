"""A problem is what is computed: operator, shape, dtype and attributes (target-independent)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Problem:
    """`shape` uses the operator's own dimension names (attention: B, Hq, Hkv, Sq, Skv, D)."""

    op: str
    shape: dict[str, int]
    dtype: str = "float32"
    attrs: dict[str, Any] = field(default_factory=dict)
    # A benchmark's own pass criterion, checked beside forge's bound (forge/ops/acceptance.py): how
    # an answer is judged, not what is computed, so it is no part of the key or of equality.
    acceptance: dict[str, Any] | None = field(default=None, compare=False)

    def key(self) -> str:
        """Stable identity of the problem, used in variant keys and the tuning bank."""
        return json.dumps(
            {"op": self.op, "shape": self.shape, "dtype": self.dtype, "attrs": self.attrs},
            sort_keys=True,
        )

    def short(self) -> str:
        dims = ",".join(f"{k}={v}" for k, v in self.shape.items())
        attrs = ",".join(f"{k}={v}" for k, v in sorted(self.attrs.items()) if v not in (None, False))
        return f"{self.op}[{dims}]{'{' + attrs + '}' if attrs else ''} {self.dtype}"

    def digest(self) -> str:
        return hashlib.sha256(self.key().encode()).hexdigest()[:16]

    def __hash__(self) -> int:
        return hash(self.key())
