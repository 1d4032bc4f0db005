"""Modeled time for ranking where no GPU is present (always labelled "modeled").

Roofline (target peaks, cuda.md §1.2) refined by what the variant's description says: wave
quantisation and tail efficiency of its grid, occupancy from registers/smem (cuda.md §2.1) as a
latency-hiding factor, the padding of whole tiles, and overlap of loads with math only when the
tile pipeline has more than one stage. Constants are in data/model.yaml with their sources.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from forge.backends.cuda.arch import Arch
from forge.backends.cuda.occupancy import occupancy, waves
from forge.ops import get_op
from forge.ops.base import DTYPE_BYTES
from forge.problem import Problem


@lru_cache(maxsize=None)
def constants() -> dict[str, Any]:
    return yaml.safe_load((Path(__file__).parent / "data" / "model.yaml").read_text())


def kernel_time(arch: Arch, p: Problem, est: dict[str, Any], regs: int | None = None) -> tuple[float, dict[str, Any]]:
    """Seconds for one variant from its plan estimates; `regs` from ptxas when compiled."""
    k = constants()
    t = arch.target
    lim = arch.limits
    r = int(regs if regs is not None else est["est_regs"])
    occ = occupancy(lim, est["threads"], min(r, lim.max_regs_per_thread), 0, est["smem"])
    if occ.blocks_per_sm == 0:
        return float("inf"), {"reason": "0 blocks per SM", "occupancy": occ.as_dict()}
    n_waves, tail = waves(est["grid_blocks"], occ.blocks_per_sm, arch.sms)
    active_warps = occ.blocks_per_sm * occ.warps_per_block
    hide = min(1.0, active_warps / k["latency_warps"])
    if est["tensor_core"]:
        rate = t.peak(p.dtype) * k["mma_sync_fraction"].get(arch.sm, 0.5)
    else:
        rate = t.peak("float32")
    t_math = est["flops_executed"] / (rate * hide * tail)
    smem_rate = arch.sms * k["smem_bytes_per_clock_per_sm"] * arch.detail("sm_clock_mhz") * 1e6
    t_smem = est["flops_executed"] * est.get("smem_bytes_per_flop", 0.0) / (smem_rate * hide * tail)
    t_compute = max(t_math, t_smem)
    # Memory parallelism: the warps in flight at once across the GPU (the first wave's), against the
    # latency_warps per SM that keep its loads streaming. A large grid gives the per-SM residency
    # (the same as `hide`), a small one only its own warps; counting both would charge a small grid
    # twice for the same few warps.
    in_flight = min(est["grid_blocks"], occ.blocks_per_sm * arch.sms) * occ.warps_per_block
    fill = min(1.0, in_flight / (arch.sms * k["latency_warps"]))
    dram_bytes = est["bytes_moved"] + operand_rereads(arch, est, n_waves)
    t_memory = dram_bytes / (t.memory_bandwidth * k["achievable_bw_fraction"] * fill)
    body = max(t_compute, t_memory) if est["pipelined"] else max(t_compute, t_memory) + 0.5 * min(t_compute, t_memory)
    total = body + est["launches"] * k["launch_overhead_s"]
    return total, {"launch_head_s": est["launches"] * k["launch_overhead_s"], "compute_s": t_compute, "math_s": t_math, "smem_s": t_smem, "memory_s": t_memory,
                   "dram_bytes": dram_bytes, "waves": n_waves, "tail_efficiency": round(tail, 4),
                   "latency_hiding": round(hide, 4), "blocks_per_sm": occ.blocks_per_sm,
                   "binding": list(occ.binding), "regs_used": r, "roofline_s": t.roofline_seconds(
                       get_op(p.op).flops(p), get_op(p.op).min_bytes(p), p.dtype)}


def operand_rereads(arch: Arch, est: dict[str, Any], n_waves: int) -> float:
    """Bytes of a GEMM's B read again after its first read (0 for other kernels). B is streamed once
    per pass over it (`b_passes`, gemm_common.streamed_operand) unless L2 holds it; the blocks of one
    wave read the same B panels at about the same time, so it is streamed at most once per wave."""
    b = est.get("b_bytes", 0.0)
    if not b or b <= arch.l2_bytes * constants()["l2_resident_fraction"]:
        return 0.0
    return b * (max(1.0, min(est["b_passes"], n_waves)) - 1.0)


def _step(arch: Arch, dtype: str, flops: float, nbytes: float, tensor: bool) -> float:
    k = constants()
    t = arch.target
    peak = t.peak(dtype) if tensor else t.peak("float32")
    return max(flops / (peak * k["achievable_flops_fraction"]),
               nbytes / (t.memory_bandwidth * k["achievable_bw_fraction"])) + k["launch_overhead_s"]


def unfused_time(arch: Arch, p: Problem) -> tuple[float, list[dict[str, Any]]]:
    """The op's unfused small-kernel sequence (op.unfused_steps), each step a roofline at the
    achievable fractions plus one launch: what a framework runs without the fused kernel."""
    op = get_op(p.op)
    e = DTYPE_BYTES[p.dtype]
    s = p.shape
    steps: list[tuple[str, float, float, bool]] = []
    names = op.unfused_steps(p)
    if p.op == "attention":
        bh, sq, skv, d = s["B"] * s["Hq"], s["Sq"], s["Skv"], s["D"]
        S = bh * sq * skv * e
        q, kv, o = bh * sq * d * e, s["B"] * s["Hkv"] * skv * d * e, bh * sq * d * e
        steps = [(names[0], 2.0 * bh * sq * skv * d, q + kv + S, True), (names[1], bh * sq * skv, 2 * S, False),
                 (names[2], 5.0 * bh * sq * skv, 2 * S, False), (names[3], 2.0 * bh * sq * skv * d, S + kv + o, True)]
    elif p.op == "rmsnorm":
        mn = s["M"] * s["N"] * e
        if p.attrs.get("residual"):
            steps.append((names[0], s["M"] * s["N"], 3 * mn, False))
            names = names[1:]
        steps += [(names[0], 2.0 * s["M"] * s["N"], mn, False), (names[1], s["M"], 8.0 * s["M"], False),
                  (names[2], 2.0 * s["M"] * s["N"], 2 * mn + s["N"] * e, False)]
    elif p.op in ("softmax", "softmax_axis"):                 # over the last or a middle axis
        n = int(np.prod(op.output(p).shape))
        mn = n * e
        steps = [(names[0], n, mn, False), (names[1], 2.0 * n, 2 * mn, False),
                 (names[2], n, mn, False), (names[3], n, 2 * mn, False)]
    elif p.op == "swiglu":                                      # the split is a view: no kernel
        mn = s["M"] * s["N"] * e
        steps = [(names[1], 4.0 * s["M"] * s["N"], 2 * mn, False), (names[2], s["M"] * s["N"], 3 * mn, False),
                 (names[3], s["M"] * s["N"], 3 * mn, False)]
    else:
        steps = [(names[0], op.flops(p), op.min_bytes(p), True)]
    out = [{"step": n, "flops": f, "bytes": b, "seconds": _step(arch, p.dtype, f, b, tc)} for n, f, b, tc in steps]
    return sum(x["seconds"] for x in out), out
