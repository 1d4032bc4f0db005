"""float32 GEMM for CUDA on the SIMT cores (no tensor cores: fp32 stays fp32, as cuBLAS computes
an fp32 matmul unless TF32 is allowed): space, resource formulas and plan.

Classic register blocking: a block computes a block_m x block_n tile of C, each thread a
thread_m x thread_n sub-tile held in registers; per k-step the block stages a block_k slice of A
(stored transposed, so a thread's column of A is contiguous) and of B in shared memory, and every
thread does thread_m x thread_n FMAs for thread_m + thread_n shared-memory reads. Loads are
element-wise with bounds checks, so any M, N, K and either layout of B runs."""
from __future__ import annotations

from typing import Any

from forge.generators.cuda.gemm_common import (gemm_consts, gemm_emulation_shape, gemm_io, padded_flops,
                                               split_k_bytes, split_k_rule, streamed_operand, tile_rule, tiles)
from forge.generators.cuda.plan import ELT, Plan, cdiv, common_header, config_header, load_space_values, render
from forge.ops.matmul import Matmul
from forge.problem import Problem
from forge.space import Constraint, Space, choice, limit
from forge.variant import config_text

F32 = ELT["float32"]
REG_OVERHEAD = 40   # indices, pointers, the staged loads


def threads(c):
    return (c["block_m"] // c["thread_m"]) * (c["block_n"] // c["thread_n"])


def smem_bytes(c):
    return F32 * c["block_k"] * (c["block_m"] + c["block_n"])


def regs(c):
    """Accumulators plus one column of A and one row of B per k."""
    return c["thread_m"] * c["thread_n"] + c["thread_m"] + c["thread_n"] + REG_OVERHEAD


def supports(p: Problem) -> str | None:
    return None if p.dtype == "float32" else f"the SIMT GEMM is for float32; {p.dtype} takes the tensor-core GEMM"


def space(p: Problem, arch) -> Space:
    lim = arch.limits
    params = [choice(k, v, ordered=True) for k, v in load_space_values("sgemm").items()]
    cons = [
        limit("threads", threads, lim.max_threads_per_block, "threads",
              lambda c: "(block_m/thread_m) x (block_n/thread_n)"),
        Constraint("threads_min", lambda c: threads(c) >= 32, lambda c: f"{threads(c)} threads: less than a warp"),
        tile_rule(p, 32),
        limit("smem", smem_bytes, lim.static_smem_limit, "B", lambda c: "4 B x block_k x (block_m + block_n)"),
        limit("regs", regs, lim.max_regs_per_thread, "regs",
              lambda c: "thread_m x thread_n accumulators + a column of A + a row of B + overhead"),
        limit("occupancy", lambda c: c["min_blocks"] * threads(c) * regs(c), lim.regs_per_sm, "regs",
              lambda c: f"min_blocks={c['min_blocks']} x threads x estimated regs"),
        split_k_rule(p, arch),
    ]
    return Space(params, cons)


emulation_shape = gemm_emulation_shape  # the same emulated problem for every gemm kernel


def plan(p: Problem, c: dict[str, Any], arch) -> Plan:
    s = p.shape
    op = Matmul()
    tb = bool(p.attrs.get("transpose_b"))
    consts = {**gemm_consts(p, c), "THREAD_M": c["thread_m"], "THREAD_N": c["thread_n"]}
    files = {
        "kernel.cu": render("sgemm.cu.j2", problem=p.short(), config_line=config_text(c), transpose_b=tb,
                            split_k=c["split_k"]),
        "forge_config.h": config_header(f"{p.short()} | {config_text(c)}", p.dtype, consts),
        "forge_cuda.cuh": common_header(),
    }
    n_tiles = int(tiles(c, p))
    buffers, launches = gemm_io(p, c, "forge_sgemm", n_tiles, int(threads(c)), 0)
    tm, tn = cdiv(s["M"], c["block_m"]), cdiv(s["N"], c["block_n"])
    # DRAM traffic as the tensor-core GEMM's (gemm.py), rows of tiles in launch order
    est = {"threads": int(threads(c)), "smem": int(smem_bytes(c)), "est_regs": int(regs(c)),
           "grid_blocks": n_tiles * c["split_k"], "flops_executed": padded_flops(p, c),
           "bytes_moved": op.min_bytes(p) + split_k_bytes(p, c), **streamed_operand(p, c, F32), "tensor_core": False,
           # loads are synchronous (registers -> shared memory, then a barrier): no overlap with the math
           "pipelined": False, "min_blocks": c["min_blocks"], "launches": len(launches), "tiles": (tm, tn),
           "smem_bytes_per_flop": (c["thread_m"] + c["thread_n"]) * F32 / (2.0 * c["thread_m"] * c["thread_n"])}
    return Plan(files, "kernel.cu", buffers, launches, est)
