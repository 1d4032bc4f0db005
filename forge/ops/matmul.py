"""Matrix multiply C[M, N] = A[M, K] @ B, with B stored [K, N] or, when `transpose_b`, [N, K]."""
from __future__ import annotations

from typing import Any

import numpy as np

from forge.errors import ForgeInputError
from forge.ops.base import Op, TensorSpec
from forge.problem import Problem


class Matmul(Op):
    name = "matmul"
    description = "dense matrix multiply A[M,K] @ B[K,N] (or B stored transposed [N,K])"
    dims = ("M", "N", "K")
    attr_defaults = {"transpose_b": False}
    default_shape = {"M": 512, "N": 512, "K": 512}

    def validate(self, shape: dict[str, int], attrs: dict[str, Any]) -> None:
        if not isinstance(attrs["transpose_b"], bool):
            raise ForgeInputError("attrs.transpose_b", f"must be true or false, got {attrs['transpose_b']!r}")

    def inputs(self, p: Problem) -> list[TensorSpec]:
        M, N, K = p.shape["M"], p.shape["N"], p.shape["K"]
        b_shape = (N, K) if p.attrs.get("transpose_b") else (K, N)
        return [TensorSpec("a", (M, K), p.dtype), TensorSpec("b", b_shape, p.dtype)]

    def output(self, p: Problem) -> TensorSpec:
        return TensorSpec("c", (p.shape["M"], p.shape["N"]), p.dtype)

    def reference_rows(self, p: Problem, inputs: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        a = inputs["a"].astype(np.float64)[rows]
        b = inputs["b"].astype(np.float64)
        if p.attrs.get("transpose_b"):
            b = b.T
        return a @ b

    def accumulation_length(self, p: Problem) -> int:
        return p.shape["K"]

    def flops(self, p: Problem) -> float:
        return 2.0 * p.shape["M"] * p.shape["N"] * p.shape["K"]

    def unfused_steps(self, p: Problem) -> list[str]:
        return ["C = A @ B (single kernel; no fusion)"]
