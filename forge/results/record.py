"""A Record is one outcome of one variant (or baseline). Records are appended, never changed."""
from __future__ import annotations

import json
import math
import platform
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass
class Record:
    run_id: str
    variant_key: str
    op: str
    shape: dict[str, int]
    dtype: str
    target: str
    config: dict[str, Any]
    status: str                      # ok | invalid | compile_error | runtime_error | timeout | incorrect
    reason: str = ""
    phase: str = "search"            # search | final (re-measure of the top) | baseline
    attrs: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, Any] = field(default_factory=dict)
    timings: list[float] = field(default_factory=list)
    median: float | None = None
    spread: float | None = None      # interquartile range of timings (seconds)
    speedup_unfused: float | None = None
    speedup_vendor: float | None = None
    source_hash: str = ""
    toolchain: str = ""
    flags: list[str] = field(default_factory=list)
    host: str = field(default_factory=platform.node)
    device: str = ""
    time_kind: str = "measured"      # measured | modeled
    trial: int | None = None
    resources: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    timestamp: float = field(default_factory=time.time)
    id: int | None = None

    def __post_init__(self) -> None:
        if self.timings and self.median is None:
            self.median, self.spread = summarize(self.timings)

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        for k in ("shape", "config", "attrs", "errors", "timings", "flags", "resources", "extra"):
            row[k] = json.dumps(row[k], sort_keys=True, default=_json_default)
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Record":
        data = dict(row)
        for k in ("shape", "config", "attrs", "errors", "timings", "flags", "resources", "extra"):
            data[k] = json.loads(data[k]) if isinstance(data[k], str) else data[k]
        return cls(**data)


def failed_finalists(records: list[Record]) -> dict[str, Record]:
    """The finalists whose (latest) final re-measure crashed, hung or went wrong, by variant key: a
    variant that fails once is neither ranked nor banked, however fast its search run was."""
    return {r.variant_key: r for r in records if r.phase == "final" and r.status != "ok"}


def convergence(records: list[Record]) -> list[tuple[int, float]]:
    """(evaluation number, best median so far) over the search, in trial order: invalid points cost
    no evaluation, and a finalist that failed its re-measure is no best."""
    failed = failed_finalists(records)
    search = [r for r in records if r.phase == "search" and r.status != "invalid"]
    search.sort(key=lambda r: (r.trial if r.trial is not None else 1 << 30, r.id or 0))
    best, out = math.inf, []
    for n, r in enumerate(search, 1):
        if r.status == "ok" and r.median is not None and r.median < best and r.variant_key not in failed:
            best = r.median
        if math.isfinite(best):
            out.append((n, best))
    return out


def summarize(timings: list[float]) -> tuple[float, float]:
    """Median and interquartile range: robust to the odd interrupted repetition."""
    t = np.asarray(timings, dtype=float)
    q1, med, q3 = np.percentile(t, [25, 50, 75])
    return float(med), float(q3 - q1)


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
