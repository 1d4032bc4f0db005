"""What the two CUDA GEMMs (tensor-core gemm.py, SIMT sgemm.py) share: the rules on their tiles
and split-K, the shape constants, and the buffers and launches of a tiled GEMM with optional
split-K reduction."""
from __future__ import annotations

from typing import Any

from forge.generators.cuda.plan import ELT, Buffer, Launch, cdiv, reduced
from forge.problem import Problem
from forge.space import Constraint

REDUCE_THREADS = 256   # threads per block of the split-K reduction kernel


def fit_pow2(n: int, least: int) -> int:
    """Smallest power of two >= n (at least `least`): larger output blocks than this only compute padding."""
    v = least
    while v < n:
        v *= 2
    return v


def tile_rule(p, least: int) -> Constraint:
    """A GEMM's block tile no larger than the output it covers, rounded up to a power of two."""
    m, n = fit_pow2(p.shape["M"], least), fit_pow2(p.shape["N"], least)
    return Constraint("tile", lambda c: (c["block_m"] <= m) & (c["block_n"] <= n),
                      lambda c: f"block {c['block_m']}x{c['block_n']} much larger than the {p.shape['M']}x{p.shape['N']} output")


def tiles(c, p: Problem):
    """Output tiles of a config (block_m x block_n blocks covering M x N)."""
    return -(-p.shape["M"] // c["block_m"]) * -(-p.shape["N"] // c["block_n"])


def split_k_rule(p, arch) -> Constraint:
    """Split-K only where the output tiles do not fill the SMs (cuda.md §4.6: a skinny GEMM has
    1-4 tiles on 132 SMs) and every split keeps at least 4 k-tiles of work."""
    def k_tiles(c):
        return -(-p.shape["K"] // c["block_k"])

    return Constraint("split_k", lambda c: (c["split_k"] == 1) | ((tiles(c, p) < arch.sms) & (c["split_k"] * 4 <= k_tiles(c))),
                      lambda c: f"split_k={c['split_k']}: {tiles(c, p)} output tiles already cover {arch.sms} SMs "
                                f"or K has too few tiles")


def gemm_consts(p: Problem, c: dict[str, Any]) -> dict[str, int]:
    """forge_config.h constants both GEMM templates read."""
    s = p.shape
    return {"M": s["M"], "N": s["N"], "K": s["K"], "BLOCK_M": c["block_m"], "BLOCK_N": c["block_n"],
            "BLOCK_K": c["block_k"], "SPLIT_K": c["split_k"], "MIN_BLOCKS": c["min_blocks"]}


def gemm_emulation_shape(p: Problem, c: dict[str, Any]) -> dict[str, int]:
    """A row and a column block with M's and N's ragged tails, two k-tiles per split and more than
    the pipeline holds, with K's tail: the tile loop's full and edge paths, the pipeline's fill and
    drain and the split-K reduction run. (Fewer k-tiles per split than split_k_rule asks: that
    rule is about speed, so PERFORMANCE_RULES exempts it here.)"""
    s = p.shape
    return {"M": reduced(s["M"], c["block_m"], 1), "N": reduced(s["N"], c["block_n"], 1),
            "K": reduced(s["K"], c["block_k"], max(2 * c["split_k"], c.get("stages", 1) + 1))}


def gemm_io(p: Problem, c: dict[str, Any], kernel: str, n_tiles: int, threads: int,
            smem: int) -> tuple[list[Buffer], list[Launch]]:
    """A, B and C, and with split-K an fp32 workspace of SPLIT_K partial C's summed by `kernel`_reduce."""
    s, elt = p.shape, ELT[p.dtype]
    buffers = [Buffer("a", "in", s["M"] * s["K"] * elt), Buffer("b", "in", s["K"] * s["N"] * elt),
               Buffer("c", "out", s["M"] * s["N"] * elt)]
    grid = (n_tiles, 1, c["split_k"])
    if c["split_k"] == 1:
        return buffers, [Launch(kernel, grid, (threads, 1, 1), smem, ["buf:a", "buf:b", "buf:c", "null"])]
    buffers.append(Buffer("workspace", "scratch", c["split_k"] * s["M"] * s["N"] * ELT["float32"]))
    return buffers, [Launch(kernel, grid, (threads, 1, 1), smem, ["buf:a", "buf:b", "null", "buf:workspace"]),
                     Launch(f"{kernel}_reduce", (cdiv(s["M"] * s["N"], REDUCE_THREADS), 1, 1), (REDUCE_THREADS, 1, 1),
                            0, ["buf:workspace", "buf:c"])]


def split_k_bytes(p: Problem, c: dict[str, Any]) -> float:
    """DRAM traffic of the fp32 partials: written by the GEMM, read by the reduction (0 without split-K)."""
    return 2 * c["split_k"] * p.shape["M"] * p.shape["N"] * ELT["float32"] if c["split_k"] > 1 else 0


def streamed_operand(p: Problem, c: dict[str, Any], elt: int) -> dict[str, float]:
    """The operand traffic the model charges beyond one read (model.py `operand_rereads`). Blocks
    run in launch order: a row of output tiles (with grouped rasterisation, a group of GROUP_M rows,
    walked column by column) runs in consecutive blocks, so its A panels (GROUP_M x BLOCK_M x K)
    stay in L2 while it runs and A is taken as read once; B is streamed once per row of tiles, or
    per group, unless L2 holds all of it."""
    s = p.shape
    return {"b_bytes": float(s["K"] * s["N"] * elt),
            "b_passes": cdiv(s["M"], c["block_m"]) / c.get("group_m", 1)}


def padded_flops(p: Problem, c: dict[str, Any]) -> float:
    """FLOPs the tiles execute, padding included."""
    s = p.shape
    return 2.0 * cdiv(s["M"], c["block_m"]) * c["block_m"] * cdiv(s["N"], c["block_n"]) * c["block_n"] * \
        cdiv(s["K"], c["block_k"]) * c["block_k"]
