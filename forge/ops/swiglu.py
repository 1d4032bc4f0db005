"""The `swiglu` operator: y = silu(x[:, :N]) * x[:, N:].

x[M, 2N] -> y[M, N], as cann-bench's level-1 swi_glu task defines it on the last axis
(benchmark-formats.md §3.1; CANN built-in kernel `SwiGlu`). silu(a) = a / (1 + exp(-a)).
"""
from __future__ import annotations

import numpy as np

from forge.ops.base import Op, TensorSpec
from forge.problem import Problem


class SwiGLU(Op):
    name = "swiglu"
    description = "SwiGLU activation y = silu(x[:, :N]) * x[:, N:] over x[M, 2N] (cann-bench swi_glu)"
    dims = ("M", "N")
    attr_defaults: dict = {}
    default_shape = {"M": 1024, "N": 1024}          # x[1024, 2048], cann-bench swi_glu case 1

    def inputs(self, p: Problem) -> list[TensorSpec]:
        return [TensorSpec("x", (p.shape["M"], 2 * p.shape["N"]), p.dtype)]

    def output(self, p: Problem) -> TensorSpec:
        return TensorSpec("y", (p.shape["M"], p.shape["N"]), p.dtype)

    def reference_rows(self, p: Problem, inputs: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        x = inputs["x"].astype(np.float64)[rows]
        n = p.shape["N"]
        a, b = x[:, :n], x[:, n:]
        with np.errstate(over="ignore"):              # exp(-a) = inf for a far below 0: silu(a) = -0
            return a / (1.0 + np.exp(-a)) * b

    def flops(self, p: Problem) -> float:
        return float(5 * p.shape["M"] * p.shape["N"])

    def unfused_steps(self, p: Problem) -> list[str]:
        return ["a, b = split(x)", "s = sigmoid(a)", "t = a * s", "y = t * b"]

