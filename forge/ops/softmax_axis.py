"""Softmax over the middle axis of x[B, K, I], for each of the B·I columns of K elements.

It is softmax along any axis d of an n-D tensor viewed as [outer, K, inner] (B = the product of the
axes before d, K = x.shape[d], I = the product of those after): cann-bench's level-2 softmax task
runs 7 of its 20 cases along an axis other than the last (benchmark-formats.md §3.1). The view
moves no data; the reduced elements lie I apart in memory.
"""
from __future__ import annotations

import numpy as np

from forge.ops.base import Op, TensorSpec
from forge.problem import Problem


class SoftmaxAxis(Op):
    name = "softmax_axis"
    description = "numerically stable softmax over the middle axis of x[B, K, I] (cann-bench softmax, dim not last)"
    dims = ("B", "K", "I")
    attr_defaults: dict = {}
    sums_to_one_axis = 1              # y[B, K, I] sums to 1 along K
    default_shape = {"B": 4, "K": 255, "I": 2049}

    def inputs(self, p: Problem) -> list[TensorSpec]:
        return [TensorSpec("x", (p.shape["B"], p.shape["K"], p.shape["I"]), p.dtype)]

    def output(self, p: Problem) -> TensorSpec:
        return TensorSpec("y", (p.shape["B"], p.shape["K"], p.shape["I"]), p.dtype)

    def scale_input(self, name: str, x: np.ndarray) -> np.ndarray:
        return 3.0 * x

    def reference_rows(self, p: Problem, inputs: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        """Output rows are (b, k) pairs of I elements; each needs its b's whole [K, I] slab."""
        K = p.shape["K"]
        x = inputs["x"]
        out = np.empty((len(rows), p.shape["I"]))
        for b in np.unique(rows // K):
            slab = x[b].astype(np.float64)
            e = np.exp(slab - slab.max(axis=0, keepdims=True))
            sm = e / e.sum(axis=0, keepdims=True)
            sel = rows // K == b
            out[sel] = sm[rows[sel] % K]
        return out

    def flops(self, p: Problem) -> float:
        return float(5 * p.shape["B"] * p.shape["K"] * p.shape["I"])

    def unfused_steps(self, p: Problem) -> list[str]:
        return ["m = max(x) (axis reduce)", "e = exp(x - m)", "s = sum(e) (axis reduce)", "y = e / s"]
