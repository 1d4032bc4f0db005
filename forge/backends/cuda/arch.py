"""Per-compute-capability limits joined with a target's own numbers (cuda.md §1.1, §1.2).

The limits are typed once per CC in `data/compute_capabilities.yaml`; a target YAML names its CC
in `details.compute_capability`. `arch_of(target)` gives everything the occupancy calculator,
the space constraints and the model need.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from forge.errors import ForgeInputError
from forge.targets import Target

DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class CCLimits:
    """Architectural limits of one compute capability (fields as in the YAML)."""

    cc: str
    max_threads_per_block: int
    max_grid_yz: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    regs_per_block: int
    max_regs_per_thread: int
    reg_alloc_unit: int
    sub_partitions: int
    smem_per_sm: int
    smem_per_block_optin: int
    smem_per_block_default: int
    reserved_smem_per_block: int
    smem_alloc_unit: int
    static_smem_limit: int
    smem_carveout_kb: tuple[int, ...]
    barrier_limit: bool
    warp_size: int = 32

    @property
    def major(self) -> int:
        return int(self.cc.split(".")[0])


@dataclass(frozen=True)
class Arch:
    """A CUDA target: its limits, SM count, arch flag and peaks."""

    target: Target
    limits: CCLimits

    @property
    def sm(self) -> str:
        return str(self.target.details["arch"])

    @property
    def sms(self) -> int:
        return int(self.target.details["sms"])

    @property
    def l2_bytes(self) -> int:
        return int(self.target.details.get("l2_bytes", 0))

    def detail(self, key: str, default: Any = None) -> Any:
        return self.target.details.get(key, default)


@lru_cache(maxsize=None)
def _cc_table() -> dict[str, dict[str, Any]]:
    return yaml.safe_load((DATA / "compute_capabilities.yaml").read_text())


def cc_limits(cc: str) -> CCLimits:
    table = _cc_table()
    if cc not in table:
        raise ForgeInputError("details.compute_capability",
                              f"unknown compute capability {cc!r}; known: {', '.join(table)}")
    raw = dict(table[cc])
    raw["smem_carveout_kb"] = tuple(raw["smem_carveout_kb"])
    return CCLimits(cc=cc, **raw)


def arch_of(target: Target) -> Arch:
    for key in ("arch", "compute_capability", "sms"):
        if key not in target.details:
            raise ForgeInputError(f"{target.name}.details.{key}", "required for a cuda target")
    return Arch(target, cc_limits(str(target.details["compute_capability"])))
