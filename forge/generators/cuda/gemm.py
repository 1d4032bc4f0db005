"""Tiled tensor-core GEMM for CUDA: space, resource formulas and plan (cuda.md §4.6)."""
from __future__ import annotations

from typing import Any

from forge.generators.cuda.gemm_common import (gemm_consts, gemm_emulation_shape, gemm_io, padded_flops,
                                               split_k_bytes, split_k_rule, streamed_operand, tile_rule, tiles)
from forge.generators.cuda.plan import (ELT, SMEM_PAD, Plan, cdiv, common_header, config_header, load_space_values,
                                        render)
from forge.ops.matmul import Matmul
from forge.problem import Problem
from forge.space import Constraint, Space, choice, limit
from forge.variant import config_text

REG_OVERHEAD = 48


def supports(p: Problem) -> str | None:
    if p.dtype not in ("float16", "bfloat16"):
        return f"the tensor-core GEMM takes fp16/bf16 inputs; {p.dtype} takes the SIMT GEMM (sgemm)"
    return None


def operand_vec(p: Problem) -> tuple[int, int]:
    """Elements per global->shared copy of A and of B: a 16-byte cp.async where the operand's rows
    are a multiple of 16 bytes long (cp.async's source must be aligned to its size, PTX ISA), else
    one element at a time (GPT-2's vocabulary projection, N = 50257)."""
    s, per16 = p.shape, 16 // ELT[p.dtype]
    b_row = s["K"] if p.attrs.get("transpose_b") else s["N"]
    return (per16 if s["K"] % per16 == 0 else 1), (per16 if b_row % per16 == 0 else 1)


def threads(c):
    return (c["block_m"] // c["warp_m"]) * (c["block_n"] // c["warp_n"]) * 32


def smem_bytes(c, p: Problem):
    a = c["block_m"] * (c["block_k"] + SMEM_PAD)
    b = c["block_n"] * (c["block_k"] + SMEM_PAD) if p.attrs.get("transpose_b") else c["block_k"] * (c["block_n"] + SMEM_PAD)
    return c["stages"] * ELT[p.dtype] * (a + b)


def acc_regs(c):
    return c["warp_m"] * c["warp_n"] // 32


def space(p: Problem, arch) -> Space:
    lim = arch.limits
    vals = load_space_values("gemm")
    params = [choice(k, v, ordered=True) for k, v in vals.items()]
    cons = [
        Constraint("warps", lambda c: (c["warp_m"] <= c["block_m"]) & (c["warp_n"] <= c["block_n"]),
                   lambda c: "warp tile larger than the block tile"),
        limit("threads", threads, lim.max_threads_per_block, "threads",
              lambda c: "(block_m/warp_m) x (block_n/warp_n) x 32"),
        tile_rule(p, 64),
        limit("smem", lambda c: smem_bytes(c, p), lim.smem_per_block_optin, "B",
              lambda c: f"stages {c['stages']} x {ELT[p.dtype]} B x (A {c['block_m']}x{c['block_k']} + B tile), padded rows"),
        limit("regs", acc_regs, lim.max_regs_per_thread, "regs", lambda c: "fp32 accumulators warp_m x warp_n / 32"),
        limit("occupancy", lambda c: c["min_blocks"] * (smem_bytes(c, p) + lim.reserved_smem_per_block),
              lim.smem_per_sm, "B", lambda c: f"min_blocks={c['min_blocks']} x smem per block"),
        limit("occupancy", lambda c: c["min_blocks"] * threads(c) * (acc_regs(c) + REG_OVERHEAD), lim.regs_per_sm,
              "regs", lambda c: f"min_blocks={c['min_blocks']} x threads x estimated regs"),
        split_k_rule(p, arch),
        Constraint("group_m", lambda c: (c["group_m"] == 1) | (-(-p.shape["M"] // c["block_m"]) > 1),
                   lambda c: "grouped rasterisation needs more than one row of tiles"),
    ]
    return Space(params, cons)


emulation_shape = gemm_emulation_shape  # the same emulated problem for every gemm kernel


def plan(p: Problem, c: dict[str, Any], arch) -> Plan:
    s = p.shape
    op = Matmul()
    tb = bool(p.attrs.get("transpose_b"))
    consts = {**gemm_consts(p, c), "WARP_M": c["warp_m"], "WARP_N": c["warp_n"], "STAGES": c["stages"],
              "GROUP_M": c["group_m"], "SMEM_PAD": SMEM_PAD}
    a_vec, b_vec = operand_vec(p)
    consts.update(A_VEC=a_vec, B_VEC=b_vec)
    files = {
        "kernel.cu": render("gemm.cu.j2", problem=p.short(), config_line=config_text(c), transpose_b=tb,
                            split_k=c["split_k"]),
        "forge_config.h": config_header(f"{p.short()} | {config_text(c)}", p.dtype, consts),
        "forge_cuda.cuh": common_header(),
    }
    elt = ELT[p.dtype]
    n_tiles = int(tiles(c, p))
    smem = int(smem_bytes(c, p))
    buffers, launches = gemm_io(p, c, "forge_gemm", n_tiles, int(threads(c)), smem)
    tm, tn = cdiv(s["M"], c["block_m"]), cdiv(s["N"], c["block_n"])
    # DRAM traffic: each operand and the output once, the split-K partials, and B's re-reads, which
    # the model charges from `streamed_operand` (they depend on the blocks resident at once)
    est = {"threads": int(threads(c)), "smem": smem, "est_regs": int(acc_regs(c)) + REG_OVERHEAD,
           "grid_blocks": n_tiles * c["split_k"], "flops_executed": padded_flops(p, c),
           "bytes_moved": op.min_bytes(p) + split_k_bytes(p, c), **streamed_operand(p, c, elt), "tensor_core": True,
           # element-wise copies are synchronous: loads no longer overlap the math
           "pipelined": a_vec > 1 and b_vec > 1,
           "min_blocks": c["min_blocks"], "launches": len(launches), "tiles": (tm, tn),
           # A and B fragments read from smem per FLOP of a warp tile
           "smem_bytes_per_flop": (c["warp_m"] + c["warp_n"]) * elt / (2.0 * c["warp_m"] * c["warp_n"])}
    return Plan(files, "kernel.cu", buffers, launches, est)
