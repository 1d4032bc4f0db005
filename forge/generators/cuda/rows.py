"""Row-wise kernels (rmsnorm with optional residual, softmax) for CUDA: space and plan."""
from __future__ import annotations

from typing import Any

import numpy as np

from forge.generators.cuda.plan import (ELT, Buffer, Launch, Plan, cdiv, common_header, config_header,
                                        load_space_values, reduced, render, vec_byte_values, vec_constraints, vec_elems)
from forge.ops import get_op
from forge.problem import Problem
from forge.space import Constraint, Space, choice, limit
from forge.variant import config_text

MAX_CACHED = 64   # floats of a row kept in registers per thread
# cache=regs: a thread keeps its slice of the row in registers, x is read once (rows up to
# MAX_CACHED x ROW_THREADS elements); cache=stream: the row is read twice, once for its statistic
# and once to write y, so any row length runs (a vocabulary softmax, N = 151936)
CACHE_MODES = ("regs", "stream")


def supports(p: Problem) -> str | None:
    return None if p.dtype in ELT else f"dtype {p.dtype} not generated for CUDA"


def vec(c, p: Problem):
    return vec_elems(c, p.dtype)


def cached(c, p: Problem):
    """Floats of the row each thread keeps in registers (none when streaming)."""
    v = vec(c, p)
    return np.where(np.asarray(c["cache"]) == "regs", -(-(p.shape["N"] // v) // c["row_threads"]) * v, 0)


def space(p: Problem, arch) -> Space:
    vals = load_space_values("rows")
    n = p.shape["N"]
    vals["vec_bytes"] = vec_byte_values(vals["vec_bytes"], p.dtype)
    smallest = min(vals["threads"])
    params = [choice(k, v, ordered=True) for k, v in vals.items()] + \
        [choice("cache", CACHE_MODES, doc="row slice kept in registers (one read of x) or streamed (two)")]
    cons = [
        Constraint("row_threads", lambda c: (c["row_threads"] <= c["threads"]) & (c["threads"] % c["row_threads"] == 0),
                   lambda c: f"row_threads={c['row_threads']} must divide threads={c['threads']}"),
        *vec_constraints(n, p.dtype, "N"),
        Constraint("waste", lambda c: c["row_threads"] * vec(c, p) <= np.maximum(32 * vec(c, p), n),
                   lambda c: f"{c['row_threads']} threads x {int(vec(c, p))} elements exceed a row of {n}"),
        limit("regs", lambda c: cached(c, p), MAX_CACHED, "floats",
              lambda c: "row slice cached per thread: ceil(N / vec / row_threads) x vec"),
        # (the smallest block is always allowed: a few short rows still need one)
        Constraint("rows_per_block", lambda c: (c["threads"] // c["row_threads"] <= np.maximum(1, p.shape["M"]))
                   | (c["threads"] == smallest), lambda c: "more rows per block than rows"),
    ]
    return Space(params, cons)


def emulation_shape(p: Problem, c: dict[str, Any]) -> dict[str, int]:
    """Two blocks of rows and the ragged last one; every row whole (its length sets the tiling)."""
    return {**p.shape, "M": reduced(p.shape["M"], c["threads"] // c["row_threads"])}


def plan(p: Problem, c: dict[str, Any], arch) -> Plan:
    op = get_op(p.op)
    s = p.shape
    v = int(vec(c, p))
    consts = {"M": s["M"], "N": s["N"], "THREADS": c["threads"], "ROW_THREADS": c["row_threads"], "VEC": v}
    residual = bool(p.attrs.get("residual"))
    if p.op == "rmsnorm":
        consts["EPS"] = float(p.attrs["eps"])
    files = {
        "kernel.cu": render("rows.cu.j2", op=p.op, residual=residual, stream=c["cache"] == "stream",
                            problem=p.short(), config_line=config_text(c)),
        "forge_config.h": config_header(f"{p.short()} | {config_text(c)}", p.dtype, consts),
        "forge_cuda.cuh": common_header(),
    }
    elt = ELT[p.dtype]
    buffers = [Buffer(t.name, "in", int(np.prod(t.shape)) * elt) for t in op.inputs(p)]
    out = op.output(p)
    buffers.append(Buffer(out.name, "out", int(np.prod(out.shape)) * elt))
    args = [f"buf:{t.name}" for t in op.inputs(p)] + [f"buf:{out.name}"]
    rpb = c["threads"] // c["row_threads"]
    grid = (cdiv(s["M"], rpb), 1, 1)
    launches = [Launch(f"forge_{p.op}", grid, (c["threads"], 1, 1), 0, args)]
    # streaming reads x (and the residual) a second time; counted as memory traffic (no L2 term)
    reread = s["M"] * s["N"] * elt * (2 if residual else 1) if c["cache"] == "stream" else 0
    est = {"threads": c["threads"], "smem": 0, "est_regs": 24 + (3 * v if c["cache"] == "stream" else int(cached(c, p))), "grid_blocks": grid[0],
           "flops_executed": op.flops(p), "bytes_moved": op.min_bytes(p) + reread, "tensor_core": False,
           "pipelined": True, "min_blocks": 1, "launches": 1, "vec": v}
    return Plan(files, "kernel.cu", buffers, launches, est)
