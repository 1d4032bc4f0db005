"""RMSNorm over the last axis, optionally fused with a residual add: y = norm(x [+ r]) * w.

With the residual the op's one output is y; the sum x + r is kept on chip and not written back,
which the unfused sequence (and torch's `rms_norm(x + r)`) does write as an intermediate."""
from __future__ import annotations

from typing import Any

import numpy as np

from forge.errors import ForgeInputError
from forge.ops.base import Op, TensorSpec
from forge.problem import Problem


class RMSNorm(Op):
    name = "rmsnorm"
    description = "RMS normalisation of rows (x[M, N] * weight[N]), optional fused residual add (writes y only)"
    dims = ("M", "N")
    attr_defaults = {"eps": 1e-6, "residual": False}
    default_shape = {"M": 4096, "N": 4096}

    def validate(self, shape: dict[str, int], attrs: dict[str, Any]) -> None:
        if not isinstance(attrs["eps"], (int, float)) or attrs["eps"] <= 0:
            raise ForgeInputError("attrs.eps", f"must be a positive number, got {attrs['eps']!r}")
        if not isinstance(attrs["residual"], bool):
            raise ForgeInputError("attrs.residual", f"must be true or false, got {attrs['residual']!r}")

    def inputs(self, p: Problem) -> list[TensorSpec]:
        M, N = p.shape["M"], p.shape["N"]
        specs = [TensorSpec("x", (M, N), p.dtype)]
        if p.attrs.get("residual"):
            specs.append(TensorSpec("residual", (M, N), p.dtype))
        specs.append(TensorSpec("weight", (N,), p.dtype))
        return specs

    def output(self, p: Problem) -> TensorSpec:
        return TensorSpec("y", (p.shape["M"], p.shape["N"]), p.dtype)

    def scale_input(self, name: str, x: np.ndarray) -> np.ndarray:
        return 1.0 + 0.1 * x if name == "weight" else x

    def reference_rows(self, p: Problem, inputs: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        x = inputs["x"].astype(np.float64)[rows]
        if p.attrs.get("residual"):
            x = x + inputs["residual"].astype(np.float64)[rows]
        w = inputs["weight"].astype(np.float64)
        rms = np.sqrt(np.mean(x * x, axis=1, keepdims=True) + float(p.attrs["eps"]))
        return x / rms * w

    def flops(self, p: Problem) -> float:
        per = 4 + (1 if p.attrs.get("residual") else 0)
        return float(per * p.shape["M"] * p.shape["N"])

    def unfused_steps(self, p: Problem) -> list[str]:
        steps = ["h = x + residual"] if p.attrs.get("residual") else []
        return steps + ["ms = mean(h^2) (row reduce)", "r = rsqrt(ms + eps)", "y = h * r * w"]
