"""FA2-style attention forward for CUDA: space, resource formulas and plan (cuda.md §4.1, §4.2, §4.5)."""
from __future__ import annotations

from typing import Any

import numpy as np

from forge.generators.cuda.plan import (ELT, SMEM_PAD, Buffer, Launch, Plan, cdiv, common_header,
                                        config_header, load_space_values, log2e, reduced, render)
from forge.ops.attention import Attention
from forge.problem import Problem
from forge.space import Constraint, Space, choice, limit
from forge.variant import config_text

REG_OVERHEAD = 40   # registers besides the accumulators (addresses, row stats, fragments): an estimate


def supports(p: Problem) -> str | None:
    if p.dtype not in ("float16", "bfloat16"):
        return f"CUDA attention uses fp16/bf16 tensor cores; dtype {p.dtype} is not generated"
    d = p.shape["D"]
    if d % 16 or d > 256:
        return f"head dim D={d} must be a multiple of 16 and at most 256"
    return None


# -- resource formulas: used by the constraints (vectorised), the estimates and the launch ---------
def smem_bytes(c, p: Problem):
    return ELT[p.dtype] * (c["block_m"] + 2 * c["stages"] * c["block_n"]) * (p.shape["D"] + SMEM_PAD)


def acc_regs(c, p: Problem):
    """fp32 accumulator registers per thread: O (rows/warp x D) + S (rows/warp x BLOCK_N) over 32 lanes."""
    return (c["block_m"] // c["num_warps"]) * (p.shape["D"] + c["block_n"]) // 32


def row_heads(p: Problem, c) -> Any:
    """Query heads sharing a block's rows: the GQA group with rows=group, else 1 (vectorised)."""
    return np.where(np.asarray(c.get("rows", "head")) == "group", p.shape["Hq"] // p.shape["Hkv"], 1)


def base_grid(c, p: Problem):
    """Blocks before split-KV: row blocks of the packed rows (heads x Sq) x head sets x batch."""
    s = p.shape
    rh = row_heads(p, c)
    return -(-(rh * s["Sq"]) // c["block_m"]) * (s["Hq"] // rh) * s["B"]


def space(p: Problem, arch) -> Space:
    vals = load_space_values("attention")
    lim = arch.limits
    group = p.shape["Hq"] // p.shape["Hkv"]
    # Packing a group's heads into the rows pays where one head's queries leave a tile's rows
    # partly empty (decode, short prefill chunks): a block of block_m rows then serves up to
    # block_m / Sq heads, reading each K/V tile once for all of them. Where one head's queries fill
    # the largest tile, packing changes neither the blocks nor the K/V reads.
    packable = group > 1 and p.shape["Sq"] < max(vals["block_m"])
    params = [choice(k, v, ordered=True) for k, v in vals.items() if k != "rows"]
    if packable:
        params.append(choice("rows", vals["rows"],
                             doc="a block's query rows: one query head's queries (head) or the GQA group's "
                                 "heads x queries, row r = query r / group of head r % group (group)"))
    kv_tiles = lambda c: -(-p.shape["Skv"] // c["block_n"])  # noqa: E731
    cons = [
        Constraint("warps", lambda c: c["block_m"] % (16 * c["num_warps"]) == 0,
                   lambda c: f"block_m={c['block_m']} is not a whole number of m16 tiles per warp ({c['num_warps']} warps)"),
        limit("smem", lambda c: smem_bytes(c, p), lim.smem_per_block_optin, "B",
              lambda c: f"{ELT[p.dtype]} B x (block_m {c['block_m']} + 2 x stages {c['stages']} x block_n "
                        f"{c['block_n']}) x (D {p.shape['D']} + pad {SMEM_PAD}) vs opt-in max per block"),
        limit("regs", lambda c: acc_regs(c, p), lim.max_regs_per_thread, "regs",
              lambda c: "fp32 accumulators alone: (block_m/warps) x (D + block_n) / 32 per thread"),
        limit("occupancy", lambda c: c["min_blocks"] * (smem_bytes(c, p) + lim.reserved_smem_per_block),
              lim.smem_per_sm, "B",
              lambda c: f"min_blocks={c['min_blocks']} blocks x smem per block exceed the SM's shared memory"),
        limit("occupancy", lambda c: c["min_blocks"] * c["num_warps"] * 32 * (acc_regs(c, p) + REG_OVERHEAD),
              lim.regs_per_sm, "regs",
              lambda c: f"min_blocks={c['min_blocks']} x {c['num_warps'] * 32} threads x estimated regs"),
        limit("grid", lambda c: p.shape["B"] * c["splits"], lim.max_grid_yz, "blocks",
              lambda c: f"gridDim.z = batch {p.shape['B']} x splits {c['splits']}"),
        Constraint("split_kv",
                   lambda c: (c["splits"] == 1) | ((c["splits"] <= kv_tiles(c))
                                                   & (base_grid(c, p) * c["splits"] <= 2 * arch.sms)),
                   lambda c: f"splits={c['splits']}: grid of {base_grid(c, p)} blocks already fills "
                             f"{arch.sms} SMs, or more splits than {kv_tiles(c)} KV tiles"),
    ]
    return Space(params, cons)


def executed_flops(p: Problem, c: dict[str, Any]) -> float:
    """FLOPs the kernel actually issues: whole tiles, causal tiles skipped per block."""
    s = p.shape
    bm, bn, d = c["block_m"], c["block_n"], s["D"]
    rh = int(row_heads(p, c))
    tiles = 0
    for mb in range(cdiv(rh * s["Sq"], bm)):
        n_end = s["Skv"]
        if p.attrs.get("causal"):   # up to the last key the block's last query sees
            n_end = max(0, min(s["Skv"], (mb * bm + bm - 1) // rh + 1 + s["Skv"] - s["Sq"]))
        tiles += cdiv(n_end, bn)
    return 4.0 * s["B"] * (s["Hq"] // rh) * tiles * bm * bn * d


def emulation_shape(p: Problem, c: dict[str, Any]) -> dict[str, int]:
    """One batch; up to two KV heads with up to two query heads each (the head mapping of GQA);
    with rows=group the whole group, as its heads share a block's rows; two query blocks and two KV
    tiles per split, each with its ragged tail. Sq = Skv stays equal
    (a causal mask on the diagonal), Sq < Skv stays so (bottom-right alignment) and Sq > Skv too
    (rows the causal mask leaves without a key), each by whole blocks."""
    s = p.shape
    bm, bn = c["block_m"], c["block_n"]
    if s["Sq"] == s["Skv"]:
        sq = skv = reduced(s["Sq"], max(bm, bn), max(2, c["splits"]))
    else:
        sq, skv = reduced(s["Sq"], bm), reduced(s["Skv"], bn, 2 * c["splits"])
        while s["Sq"] < s["Skv"] and sq >= skv:
            skv = min(s["Skv"], skv + bn)
        while s["Sq"] > s["Skv"] and sq <= skv:
            sq = min(s["Sq"], sq + bm)
    hkv = min(s["Hkv"], 2)
    group = s["Hq"] // s["Hkv"]
    if c.get("rows") != "group":     # packed rows keep the whole group: row r's head is r % group
        group = min(group, 2)
    return {"B": 1, "Hq": hkv * group, "Hkv": hkv, "Sq": sq, "Skv": skv, "D": s["D"]}


def plan(p: Problem, c: dict[str, Any], arch) -> Plan:
    s = p.shape
    op = Attention()
    threads = c["num_warps"] * 32
    smem = int(smem_bytes(c, p))
    splits = c["splits"]
    rh = int(row_heads(p, c))
    consts = {
        "B": s["B"], "HQ": s["Hq"], "HKV": s["Hkv"], "SQ": s["Sq"], "SKV": s["Skv"], "HEAD_DIM": s["D"],
        "BLOCK_M": c["block_m"], "BLOCK_N": c["block_n"], "NUM_WARPS": c["num_warps"], "STAGES": c["stages"],
        "MIN_BLOCKS": c["min_blocks"], "SPLITS": splits, "ROW_HEADS": rh, "SMEM_PAD": SMEM_PAD,
        "SCALE_LOG2": float(op.scale(p) * log2e()),
    }
    causal = bool(p.attrs.get("causal"))
    title = f"{p.short()} | {config_text(c)}"
    files = {
        "kernel.cu": render("attention.cu.j2", problem=p.short(), config_line=config_text(c), causal=causal,
                            splits=splits),
        "forge_config.h": config_header(title, p.dtype, consts),
        "forge_cuda.cuh": common_header(),
    }
    elt = ELT[p.dtype]
    rows = s["B"] * s["Hq"] * s["Sq"]
    buffers = [Buffer(t.name, "in", int(np.prod(t.shape)) * elt) for t in op.inputs(p)]
    buffers.append(Buffer("o", "out", rows * s["D"] * elt))
    grid = (cdiv(rh * s["Sq"], c["block_m"]), s["Hq"] // rh, s["B"] * splits)
    if splits > 1:
        buffers += [Buffer("o_part", "scratch", splits * rows * s["D"] * 4),
                    Buffer("lse_part", "scratch", splits * rows * 4)]
        launches = [Launch("forge_attention", grid, (threads, 1, 1), smem,
                           ["buf:q", "buf:k", "buf:v", "null", "buf:o_part", "buf:lse_part"]),
                    Launch("forge_attention_combine", (cdiv(rows, 4), 1, 1), (128, 1, 1), 0,
                           ["buf:o_part", "buf:lse_part", "buf:o"])]
    else:
        launches = [Launch("forge_attention", grid, (threads, 1, 1), smem,
                           ["buf:q", "buf:k", "buf:v", "buf:o", "null", "null"])]
    wm = c["block_m"] // c["num_warps"]
    extra_bytes = 2 * (splits * rows * (s["D"] + 1) * 4) if splits > 1 else 0
    est = {"threads": threads, "smem": smem, "est_regs": int(acc_regs(c, p)) + REG_OVERHEAD,
           "grid_blocks": grid[0] * grid[1] * grid[2], "flops_executed": executed_flops(p, c),
           "bytes_moved": op.min_bytes(p) + extra_bytes, "tensor_core": True, "pipelined": c["stages"] > 1,
           "min_blocks": c["min_blocks"], "launches": len(launches),
           # fragments read from smem per FLOP: each warp reads its Q rows, K and V per tile
           "smem_bytes_per_flop": (wm + 2 * c["block_n"]) * elt / (4.0 * wm * c["block_n"])}
    return Plan(files, "kernel.cu", buffers, launches, est)
