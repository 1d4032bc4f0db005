"""Replay evaluator: serves a brute-forced cache's measurements as if a device measured them."""
from __future__ import annotations

from typing import Any, Mapping

from forge.backends.replay.cache import ReplayData, load_cache


class ReplayBackend:
    """`evaluate(config) -> (value_s | None, status, simulated_seconds)`.

    A point absent from the cache is infeasible: (None, "invalid", 0.0) — it costs nothing, as
    forge's constraint check rejects it before any build. A failed point returns None with its
    failure status and still costs its recorded compile/benchmark time. Times are seconds.
    """

    def __init__(self, data: ReplayData | str):
        self.data = load_cache(data) if not isinstance(data, ReplayData) else data

    def evaluate(self, config: Mapping[str, Any]) -> tuple[float | None, str, float]:
        row = self.data.row_of_config(config)
        if row is None:
            return None, "invalid", 0.0
        return self.evaluate_row(row)

    def evaluate_row(self, row: int) -> tuple[float | None, str, float]:
        status = str(self.data.status[row])
        value = float(self.data.time_s[row]) if status == "ok" else None
        return value, status, float(self.data.cost_s[row])
