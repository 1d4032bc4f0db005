"""Occupancy calculator: the rules of the toolkit's include/cuda_occupancy.h (CUDA 13.0).

Paraphrased in cuda.md §2.1 and tested against its reference vectors (§2.3):
registers are allocated per warp in units of 256 and each of the 4 register-file quarters holds
whole warps; 1 KB of shared memory is reserved per block (CC >= 8) and blocks are rounded to
128 B; warps are allocated whole; a per-CC cap on resident blocks; on CC >= 9 a barrier limit.
The function is assumed to have opted in to the largest dynamic smem (forge's harness sets
cudaFuncAttributeMaxDynamicSharedMemorySize), and the carveout is the driver default (all of it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from forge.backends.cuda.arch import CCLimits


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _ceil_div(a, b) * b


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM and which limits bind (names as cuda.md §2.3: warps, regs, smem, blocks)."""

    blocks_per_sm: int
    limits: dict[str, int]
    binding: tuple[str, ...]
    warps_per_block: int
    occupancy: float                    # active warps / max warps per SM
    regs_per_block: int = 0
    smem_per_block: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"blocks_per_sm": self.blocks_per_sm, "binding": list(self.binding),
                "occupancy": round(self.occupancy, 4), "limits": self.limits,
                "regs_per_block": self.regs_per_block, "smem_per_block": self.smem_per_block,
                "warps_per_block": self.warps_per_block, "notes": self.notes}


def occupancy(lim: CCLimits, threads: int, regs: int, static_smem: int = 0, dynamic_smem: int = 0,
              barriers: int = 1) -> Occupancy:
    """Blocks per SM for a kernel of `threads` threads using `regs` registers per thread."""
    big = 1 << 30
    notes: list[str] = []
    warps = _ceil_div(threads, lim.warp_size)
    max_warps = lim.max_threads_per_sm // lim.warp_size

    # 1. warps (cudaOccMaxBlocksPerSMWarpsLimit)
    if threads > lim.max_threads_per_block:
        lw = 0
        notes.append(f"{threads} threads > {lim.max_threads_per_block} per block")
    else:
        lw = max_warps // warps

    # 2. registers, per warp and per sub-partition (cudaOccMaxBlocksPerSMRegsLimit)
    regs_per_warp = _round_up(regs * lim.warp_size, lim.reg_alloc_unit)
    regs_block = regs_per_warp * warps
    regs_assumed = regs_per_warp * _round_up(warps, lim.sub_partitions)
    if regs_assumed > lim.regs_per_block or regs_block > lim.regs_per_block or regs > lim.max_regs_per_thread + 1:
        lr = 0
        notes.append(f"{regs} regs x {threads} threads exceed the {lim.regs_per_block} registers per block")
    elif regs_per_warp == 0:
        lr = big
    else:
        per_sub = (lim.regs_per_sm // lim.sub_partitions) // regs_per_warp
        lr = (per_sub * lim.sub_partitions) // warps

    # 3. resident blocks
    lb = lim.max_blocks_per_sm

    # 4. shared memory (cudaOccMaxBlocksPerSMSmemLimit), opted in, default carveout
    smem_block = _round_up(static_smem + dynamic_smem + lim.reserved_smem_per_block, lim.smem_alloc_unit)
    per_block_cap = lim.smem_per_block_optin + lim.reserved_smem_per_block
    if smem_block > per_block_cap:
        ls = 0
        notes.append(f"smem {smem_block} B per block > {per_block_cap} B (opt-in max + reserved)")
    elif static_smem > lim.static_smem_limit:
        ls = 0
        notes.append(f"static smem {static_smem} B > {lim.static_smem_limit} B static limit")
    else:
        ls = lim.smem_per_sm // smem_block if smem_block else big

    limits = {"warps": lw, "regs": lr, "blocks": lb, "smem": ls}
    # 5. block barriers (CC >= 9 only): 2 x block limit shared among the barriers used
    if lim.barrier_limit and barriers > 0:
        limits["barriers"] = (2 * lb) // barriers

    active = min(limits.values())
    binding = tuple(k for k, v in limits.items() if v == active)
    return Occupancy(active, {k: (v if v < big else -1) for k, v in limits.items()}, binding, warps,
                     active * warps / max_warps, regs_block, smem_block, notes)


def waves(grid_blocks: int, blocks_per_sm: int, sms: int) -> tuple[int, float]:
    """(waves, tail efficiency) of a grid: efficiency = blocks / (waves x slots) (cuda.md §2.1)."""
    slots = max(1, blocks_per_sm) * sms
    w = max(1, _ceil_div(grid_blocks, slots))
    return w, grid_blocks / (w * slots)
