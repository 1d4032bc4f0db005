"""The unfused baseline: each small op of `op.unfused_steps` as its own kernel, intermediates in
HBM, modeled by the same pipe model (each kernel pays its own launch head, ascend.md §5.2)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forge.backends.ascend.hw import AscendHW
from forge.backends.ascend.pipeline import Buffer, Pipeline, Stage
from forge.backends.ascend.pipemodel import ModelResult, Step, simulate
from forge.generators.ascendc.base import ELEM, cdiv, get_plan
from forge.ops import get_op
from forge.problem import Problem

CHUNK = 8192          # elements per UB pass of an elementwise kernel (double-buffered, all AIVs)


@dataclass
class Kernel:
    label: str
    seconds: float


def stream_kernel(hw: AscendHW, label: str, elems: int, reads: int, writes: int, passes: float,
                  elem: int, reduce: bool = False) -> Kernel:
    """A vector kernel streaming `elems` elements: `reads` inputs in, `writes` outputs out."""
    return Kernel(label, stream_model(hw, label, elems, reads, writes, passes, elem, reduce).seconds)


def stream_model(hw: AscendHW, label: str, elems: int, reads: int, writes: int, passes: float,
                 elem: int, reduce: bool = False, chunk: int = CHUNK) -> ModelResult:
    pl = Pipeline(label, "aiv", [Buffer("i", "VECIN", chunk * elem, 2), Buffer("o", "VECOUT", chunk * elem, 2)],
                  [Stage("in", "aiv", "MTE2", produces=("i",)), Stage("v", "aiv", "V", consumes=("i",), produces=("o",)),
                   Stage("out", "aiv", "MTE3", consumes=("o",))])
    cores = int(hw.aiv)
    per = cdiv(elems, cores)
    prog = []
    for t in range(cdiv(per, chunk)):
        n = min(chunk, per - t * chunk)
        factor = passes * (hw.reduce_cost_factor if reduce else 1)
        prog += [Step("in", nbytes=reads * n * elem), Step("v", cycles=hw.vector_cycles(n * 4, factor)),
                 Step("out", nbytes=max(writes * n * elem // (n if reduce else 1), 32))]
    return simulate(pl, hw, {"aiv0": prog}, cores)


# a vendor-like matmul tiling (ascend.md §2.6 recommended (128, 256, 64), big packets, dbL0 2)
VENDOR_TILES = {"baseM": 128, "baseK": 64, "stepK": 2, "dbL1": 2}


def best_model(problem: Problem, hw: AscendHW, batch: int = 1, limit: int = 12, b_share: int = 1) -> float:
    """Best modeled time of the problem's own plan over vendor-like valid configs."""
    plan = get_plan(problem, hw)
    if batch > 1:
        plan.batch = batch
    plan.b_share = b_share
    sp = plan.space()
    try:
        en = sp.restrict({k: v for k, v in VENDOR_TILES.items() if k in sp.names}).enumerate()
    except Exception:  # noqa: BLE001 - fall back to the whole space
        en = sp.enumerate()
    if not len(en):
        en = sp.enumerate()
    if not len(en):
        raise ValueError(f"no valid config for {problem.short()}")
    step = max(1, len(en) // limit)
    return min(plan.model(en.config(i)).seconds for i in range(0, len(en), step))


def unfused(problem: Problem, hw: AscendHW) -> list[Kernel]:
    s, e = problem.shape, ELEM[problem.dtype]
    if problem.op == "attention":
        rows = s["B"] * s["Hq"] * s["Sq"]
        mm = get_op("matmul")
        qk = mm.problem({"M": s["Sq"], "N": s["Skv"], "K": s["D"]}, problem.dtype, {"transpose_b": True})
        pv = mm.problem({"M": s["Sq"], "N": s["D"], "K": s["Skv"]}, problem.dtype)
        n = rows * s["Skv"]
        g = s["Hq"] // s["Hkv"]                                # GQA: G query heads read one K/V head
        return [Kernel("S = Q Kᵀ (batched matmul)", best_model(qk, hw, s["B"] * s["Hq"], b_share=g)),
                stream_kernel(hw, "S = S·scale + mask" if problem.attrs.get("causal") else "S = S·scale", n, 1, 1, 2, e),
                stream_kernel(hw, "P = softmax(S)", n, 1, 1, 7, e),    # one row-resident pass (5 fp32 ops + 2 reduces)
                Kernel("O = P V (batched matmul)", best_model(pv, hw, s["B"] * s["Hq"], b_share=g))]
    if problem.op == "rmsnorm":
        n = s["M"] * s["N"]
        ks = [stream_kernel(hw, "h = x + residual", n, 2, 1, 1, e)] if problem.attrs.get("residual") else []
        return ks + [stream_kernel(hw, "ms = mean(h²)", n, 1, 1, 2, e, reduce=True),
                     stream_kernel(hw, "r = rsqrt(ms + eps)", s["M"], 1, 1, 2, 4),
                     stream_kernel(hw, "y = h·r·w", n, 2, 1, 2, e)]
    if problem.op in ("softmax", "softmax_axis"):              # over the last or a middle axis
        n = int(np.prod(get_op(problem.op).output(problem).shape))
        return [stream_kernel(hw, "m = max(x)", n, 1, 1, 1, e, reduce=True),
                stream_kernel(hw, "e = exp(x - m)", n, 1, 1, 2, e),
                stream_kernel(hw, "s = sum(e)", n, 1, 1, 1, e, reduce=True),
                stream_kernel(hw, "y = e / s", n, 1, 1, 1, e)]
    if problem.op == "swiglu":
        n = s["M"] * s["N"]
        return [stream_kernel(hw, "s = sigmoid(a)", n, 1, 1, 4, e), stream_kernel(hw, "t = a·s", n, 2, 1, 1, e),
                stream_kernel(hw, "y = t·b", n, 2, 1, 1, e)]
    if problem.op == "matmul":
        return [Kernel("C = A @ B (single kernel)", best_model(problem, hw))]
    return []
