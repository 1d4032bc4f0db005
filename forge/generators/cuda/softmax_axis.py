"""Softmax over the middle axis of x[B, K, I] for CUDA: space and plan.

The reduced elements of a column lie I apart, so a thread owns VEC adjacent columns (one vector
access per k, coalesced across the threads of a row of the block) and walks K; `k_threads`
threads share a column's walk and merge their running max and sum in shared memory, for columns
too few to fill the GPU (small I) or too long to walk alone (large K). x is read twice: once for
the statistics (online max and sum), once to write y."""
from __future__ import annotations

from typing import Any

import numpy as np

from forge.generators.cuda.plan import (ELT, Buffer, Launch, Plan, cdiv, common_header, config_header,
                                        load_space_values, reduced, render, vec_byte_values, vec_constraints, vec_elems)
from forge.ops import get_op
from forge.problem import Problem
from forge.space import Constraint, Space, choice, limit
from forge.variant import config_text


def supports(p: Problem) -> str | None:
    return None if p.dtype in ELT else f"dtype {p.dtype} not generated for CUDA"


def cols(c):
    """Column vectors per block."""
    return c["threads"] // c["k_threads"]


def smem_bytes(c, p: Problem):
    """Running max and sum of every thread's VEC columns, merged across k_threads (none when 1)."""
    return np.where(np.asarray(c["k_threads"]) > 1, 2 * 4 * c["threads"] * vec_elems(c, p.dtype), 0)


def space(p: Problem, arch) -> Space:
    vals = load_space_values("softmax_axis")
    vals["vec_bytes"] = vec_byte_values(vals["vec_bytes"], p.dtype)
    params = [choice(k, v, ordered=True) for k, v in vals.items()]
    smallest = min(vals["threads"])
    k, i = p.shape["K"], p.shape["I"]
    cons = [
        # a row of x (fixed b, k) is I contiguous elements: the width must divide I
        *vec_constraints(i, p.dtype, "I"),
        Constraint("k_threads", lambda c: (c["k_threads"] <= c["threads"]) & (c["k_threads"] <= k),
                   lambda c: f"k_threads={c['k_threads']} exceeds threads={c['threads']} or K={k}"),
        # (the smallest block is always allowed: a few short columns still need one)
        Constraint("waste", lambda c: (cols(c) * vec_elems(c, p.dtype) <= np.maximum(32 * vec_elems(c, p.dtype), i))
                   | (c["threads"] == smallest),
                   lambda c: f"{cols(c)} column vectors of {int(vec_elems(c, p.dtype))} per block exceed I={i}"),
        limit("smem", lambda c: smem_bytes(c, p), arch.limits.static_smem_limit, "B",
              lambda c: "2 x 4 B x threads x vec: each thread's running max and sum"),
    ]
    return Space(params, cons)


def emulation_shape(p: Problem, c: dict[str, Any]) -> dict[str, int]:
    """Two batches, two column blocks and the ragged last one, and four rows of K per thread of a
    column's share with K's own remainder (the uneven shares the merge must add up)."""
    s = p.shape
    return {"B": min(s["B"], 2), "K": reduced(s["K"], c["k_threads"], 4),
            "I": reduced(s["I"], int(cols(c) * vec_elems(c, p.dtype)))}


def plan(p: Problem, c: dict[str, Any], arch) -> Plan:
    op = get_op(p.op)
    s = p.shape
    v = int(vec_elems(c, p.dtype))
    consts = {"B": s["B"], "K": s["K"], "I": s["I"], "THREADS": c["threads"], "K_THREADS": c["k_threads"], "VEC": v}
    files = {
        "kernel.cu": render("softmax_axis.cu.j2", problem=p.short(), config_line=config_text(c),
                            merge=c["k_threads"] > 1),
        "forge_config.h": config_header(f"{p.short()} | {config_text(c)}", p.dtype, consts),
        "forge_cuda.cuh": common_header(),
    }
    elt = ELT[p.dtype]
    x, y = op.inputs(p)[0], op.output(p)
    n = int(np.prod(x.shape))
    buffers = [Buffer(x.name, "in", n * elt), Buffer(y.name, "out", n * elt)]
    grid = (s["B"] * cdiv(s["I"] // v, cols(c)), 1, 1)
    launches = [Launch("forge_softmax_axis", grid, (c["threads"], 1, 1), 0, [f"buf:{x.name}", f"buf:{y.name}"])]
    est = {"threads": c["threads"], "smem": int(smem_bytes(c, p)), "est_regs": 24 + 4 * v, "grid_blocks": grid[0],
           # the second pass reads x again (counted as memory traffic; no L2 term)
           "flops_executed": op.flops(p), "bytes_moved": op.min_bytes(p) + n * elt, "tensor_core": False,
           "pipelined": True, "min_blocks": 1, "launches": 1, "vec": v}
    return Plan(files, "kernel.cu", buffers, launches, est)
