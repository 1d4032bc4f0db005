"""SwiGLU for CUDA, y = silu(x[:, :N]) * x[:, N:] over x[M, 2N]: space and plan.

An elementwise kernel: its time is memory traffic (read 2MN, write MN elements), so the knobs are
the vector width of each access and how many vectors a thread keeps in flight (`unroll`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from forge.generators.cuda.plan import (ELT, Buffer, Launch, Plan, cdiv, common_header, config_header,
                                        load_space_values, reduced, render, vec_byte_values, vec_constraints, vec_elems)
from forge.ops import get_op
from forge.problem import Problem
from forge.space import Constraint, Space, choice
from forge.variant import config_text


def supports(p: Problem) -> str | None:
    return None if p.dtype in ELT else f"dtype {p.dtype} not generated for CUDA"


def vectors(c, p: Problem):
    """Vector accesses that cover y."""
    return p.shape["M"] * (p.shape["N"] // vec_elems(c, p.dtype))


def space(p: Problem, arch) -> Space:
    vals = load_space_values("swiglu")
    vals["vec_bytes"] = vec_byte_values(vals["vec_bytes"], p.dtype)
    params = [choice(k, v, ordered=True) for k, v in vals.items()]
    smallest = min(vals["threads"])   # a tiny y still gets the smallest block
    cons = [
        # both halves of a row of x start N elements apart, so the width must divide N
        *vec_constraints(p.shape["N"], p.dtype, "N"),
        Constraint("waste", lambda c: c["threads"] * c["unroll"] <= np.maximum(smallest, vectors(c, p)),
                   lambda c: f"a block of {c['threads']} threads x {c['unroll']} vectors exceeds the "
                             f"{int(vectors(c, p))} vectors of y"),
    ]
    return Space(params, cons)


def emulation_shape(p: Problem, c: dict[str, Any]) -> dict[str, int]:
    """Two blocks of vectors and part of a third: short rows whole (rows enough for that), a long
    row cut to two blocks' vectors and its own ragged tail (one row more shows the row stride)."""
    v = int(vec_elems(c, p.dtype))
    block = c["threads"] * c["unroll"]
    per_row = max(1, p.shape["N"] // v)
    if per_row >= 2 * block:
        return {"M": min(p.shape["M"], 2), "N": reduced(p.shape["N"], block * v)}
    return {**p.shape, "M": min(p.shape["M"], cdiv(2 * block, per_row) + 1)}


def plan(p: Problem, c: dict[str, Any], arch) -> Plan:
    op = get_op(p.op)
    s = p.shape
    v = int(vec_elems(c, p.dtype))
    consts = {"M": s["M"], "N": s["N"], "THREADS": c["threads"], "VEC": v, "UNROLL": c["unroll"]}
    files = {
        "kernel.cu": render("swiglu.cu.j2", problem=p.short(), config_line=config_text(c)),
        "forge_config.h": config_header(f"{p.short()} | {config_text(c)}", p.dtype, consts),
        "forge_cuda.cuh": common_header(),
    }
    elt = ELT[p.dtype]
    x, y = op.inputs(p)[0], op.output(p)
    buffers = [Buffer(x.name, "in", int(np.prod(x.shape)) * elt), Buffer(y.name, "out", int(np.prod(y.shape)) * elt)]
    grid = (cdiv(int(vectors(c, p)), c["threads"] * c["unroll"]), 1, 1)
    launches = [Launch("forge_swiglu", grid, (c["threads"], 1, 1), 0, [f"buf:{x.name}", f"buf:{y.name}"])]
    est = {"threads": c["threads"], "smem": 0, "est_regs": 16 + 3 * v * c["unroll"], "grid_blocks": grid[0],
           "flops_executed": op.flops(p), "bytes_moved": op.min_bytes(p), "tensor_core": False,
           "pipelined": True, "min_blocks": 1, "launches": 1, "vec": v}
    return Plan(files, "kernel.cu", buffers, launches, est)
