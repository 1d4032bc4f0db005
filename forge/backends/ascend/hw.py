"""The numbers of one Ascend target, read from its YAML `details` (forge/targets/data/ascend*.yaml).

Nothing numeric is typed here: every constant comes from the target file, which cites ascend.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forge.targets import Target

# TPosition -> physical memory on A2/A3 (ascend.md §2.2)
MEMORY_OF = {"VECIN": "UB", "VECOUT": "UB", "VECCALC": "UB", "A1": "L1", "B1": "L1", "C1": "L1",
             "A2": "L0A", "B2": "L0B", "CO1": "L0C"}


@dataclass(frozen=True)
class AscendHW:
    target: Target

    def __getattr__(self, key: str) -> Any:  # details.<key>
        target = self.__dict__.get("target")
        if target is None or key.startswith("__"):
            raise AttributeError(key)
        try:
            return target.details[key]
        except KeyError:
            raise AttributeError(key) from None

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def coupled(self) -> bool:
        return self.target.details.get("core_mode") == "coupled"

    @property
    def clock(self) -> float:
        return float(self.target.details["clock_hz"])

    @property
    def gm_bandwidth(self) -> float:
        return float(self.target.memory_bandwidth)

    def capacity(self, memory: str) -> int:
        """Usable bytes of one on-chip memory (UB minus the reserve, ascend.md §1.2)."""
        d = self.target.details
        if memory == "UB":
            return int(d["ub_bytes"]) - int(d.get("ub_reserved_bytes", 0))
        return int(d[f"{memory.lower()}_bytes"])

    def align(self, memory: str) -> int:
        return int(self.target.details["align_bytes"][memory.lower()])

    def user_event_ids(self) -> int:
        """Event ids a kernel may manage by hand (ascend.md §2.8: 6 and 7 are taken)."""
        return int(self.event_ids) - len(self.target.details.get("reserved_event_ids", []))

    def cube_cycles(self, m: float, n: float, k: float, dtype: str) -> float:
        """ceil(m/16)·ceil(n/16)·ceil(k/16) fractal steps at the dtype's MAC rate (ascend.md §5.2)."""
        macs = float(self.cube_macs_per_cycle.get(dtype) or self.cube_macs_per_cycle["float16"])
        frac = -(-m // 16) * -(-n // 16) * -(-k // 16)
        return frac * 4096.0 / macs

    def vector_cycles(self, nbytes: float, factor: float = 1.0) -> float:
        """c_op · ceil(bytes / 256) cycles (ascend.md §5.2)."""
        return factor * -(-nbytes // self.vector_bytes_per_cycle)
