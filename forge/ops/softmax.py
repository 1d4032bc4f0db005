"""Softmax over the last axis of x[M, N]."""
from __future__ import annotations

import numpy as np

from forge.ops.base import Op, TensorSpec
from forge.problem import Problem


class Softmax(Op):
    name = "softmax"
    description = "numerically stable softmax over the last axis of x[M, N]"
    dims = ("M", "N")
    attr_defaults: dict = {}
    sums_to_one_axis = 1              # y[M, N] sums to 1 along N
    default_shape = {"M": 4096, "N": 4096}

    def inputs(self, p: Problem) -> list[TensorSpec]:
        return [TensorSpec("x", (p.shape["M"], p.shape["N"]), p.dtype)]

    def output(self, p: Problem) -> TensorSpec:
        return TensorSpec("y", (p.shape["M"], p.shape["N"]), p.dtype)

    def scale_input(self, name: str, x: np.ndarray) -> np.ndarray:
        return 3.0 * x

    def reference_rows(self, p: Problem, inputs: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        x = inputs["x"].astype(np.float64)[rows]
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def flops(self, p: Problem) -> float:
        return float(5 * p.shape["M"] * p.shape["N"])

    def unfused_steps(self, p: Problem) -> list[str]:
        return ["m = max(x) (row reduce)", "e = exp(x - m)", "s = sum(e) (row reduce)", "y = e / s"]
