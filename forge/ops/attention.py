"""Attention forward: O = softmax(scale * Q K^T + mask) V, with MHA/GQA/MQA head sharing.

Layout is BHSD: Q[B, Hq, Sq, D], K and V [B, Hkv, Skv, D], O[B, Hq, Sq, D]. Query head h reads
key/value head h // (Hq // Hkv). The causal mask is aligned to the bottom-right corner (query i
sees keys j <= i + Skv - Sq), as cann-bench's gqa task defines it (benchmark-formats.md §3.1).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from forge.errors import ForgeInputError
from forge.ops.base import Op, TensorSpec, round_to_dtype
from forge.problem import Problem


class Attention(Op):
    name = "attention"
    description = "fused scaled-dot-product attention forward (MHA/GQA/MQA, optional causal mask)"
    dims = ("B", "Hq", "Hkv", "Sq", "Skv", "D")
    attr_defaults = {"causal": False, "scale": None}
    default_shape = {"B": 1, "H": 8, "S": 512, "D": 64}

    def aliases(self) -> tuple[str, ...]:
        return ("S", "H")

    def expand_aliases(self, shape: dict[str, int]) -> dict[str, int]:
        for alias, dims in (("H", ("Hq", "Hkv")), ("S", ("Sq", "Skv"))):
            both = [d for d in dims if d in shape]
            if alias in shape and both:
                raise ForgeInputError(f"shape.{alias}", f"sets both {' and '.join(dims)}, and {both[0]} is given too; "
                                                        f"give either {alias} or {'/'.join(dims)}")
        if "H" in shape:
            h = shape.pop("H")
            shape.setdefault("Hq", h)
            shape.setdefault("Hkv", h)
        if "S" in shape:
            s = shape.pop("S")
            shape.setdefault("Sq", s)
            shape.setdefault("Skv", s)
        if "Hq" in shape and "Hkv" not in shape:
            shape["Hkv"] = shape["Hq"]
        return shape

    def validate(self, shape: dict[str, int], attrs: dict[str, Any]) -> None:
        if shape["Hq"] % shape["Hkv"]:
            raise ForgeInputError("shape.Hkv", f"Hq={shape['Hq']} must be a multiple of Hkv={shape['Hkv']}")
        if attrs["scale"] is not None and not isinstance(attrs["scale"], (int, float)):
            raise ForgeInputError("attrs.scale", f"must be a number, got {attrs['scale']!r}")
        if not isinstance(attrs["causal"], bool):
            raise ForgeInputError("attrs.causal", f"must be true or false, got {attrs['causal']!r}")

    @staticmethod
    def scale(p: Problem) -> float:
        s = p.attrs.get("scale")
        return float(s) if s is not None else 1.0 / math.sqrt(p.shape["D"])

    def inputs(self, p: Problem) -> list[TensorSpec]:
        s = p.shape
        return [TensorSpec("q", (s["B"], s["Hq"], s["Sq"], s["D"]), p.dtype),
                TensorSpec("k", (s["B"], s["Hkv"], s["Skv"], s["D"]), p.dtype),
                TensorSpec("v", (s["B"], s["Hkv"], s["Skv"], s["D"]), p.dtype)]

    def output(self, p: Problem) -> TensorSpec:
        s = p.shape
        return TensorSpec("o", (s["B"], s["Hq"], s["Sq"], s["D"]), p.dtype)

    def reference_rows(self, p: Problem, inputs: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        return self._rows(p, inputs, rows, same_dtype=False)

    def same_dtype_rows(self, p: Problem, inputs: dict[str, np.ndarray], rows: np.ndarray,
                        expected: np.ndarray) -> np.ndarray:
        """cann-bench's gqa golden run in the problem's dtype on a CPU ([CB] tasks/level4/gqa/
        golden.py: torch.matmul, `* scaleValue`, softmax, torch.matmul): each step's result is
        rounded to the dtype, the matmuls and the softmax computing in float32 inside as torch's CPU
        kernels do for float16/bfloat16. Its scores and probabilities are rounded where a fused
        kernel keeps them in float32, so it is off where the output cancels."""
        return self._rows(p, inputs, rows, same_dtype=True)

    def _rows(self, p: Problem, inputs: dict[str, np.ndarray], rows: np.ndarray, same_dtype: bool) -> np.ndarray:
        """The float64 reference, or with `same_dtype` the steps rounded to p.dtype in float32."""
        s = p.shape
        B, Hq, Hkv, Sq, Skv, D = (s[k] for k in self.dims)
        group = Hq // Hkv
        b, rem = np.divmod(rows, Hq * Sq)
        h, i = np.divmod(rem, Sq)
        out = np.empty((len(rows), D))
        scale = self.scale(p)
        work = np.float32 if same_dtype else np.float64

        def step(x: np.ndarray) -> np.ndarray:
            return round_to_dtype(x, p.dtype) if same_dtype else x

        # One matmul per (batch, head) among the requested rows keeps memory at one head's scores
        # instead of gathering K and V per row.
        for bh in np.unique(b * Hq + h):
            sel = np.flatnonzero(b * Hq + h == bh)
            bb, hh = divmod(int(bh), Hq)
            q = inputs["q"][bb, hh, i[sel]].astype(work)             # [r, D]
            k = inputs["k"][bb, hh // group].astype(work)            # [Skv, D]
            v = inputs["v"][bb, hh // group].astype(work)
            scores = step(step(q @ k.T) * work(scale))
            if p.attrs.get("causal"):
                j = np.arange(Skv)[None, :]
                scores = np.where(j <= (i[sel] + Skv - Sq)[:, None], scores, -np.inf)
            m = scores.max(axis=1, keepdims=True)
            m = np.where(np.isfinite(m), m, 0.0)
            w = np.exp(scores - m)
            denom = w.sum(axis=1, keepdims=True)
            # A fully masked row (Sq > Skv, causal) has no keys: its output is defined as zero.
            if same_dtype:
                out[sel] = step(step(w / np.where(denom > 0, denom, 1.0)) @ v)
            else:
                out[sel] = (w @ v) / np.where(denom > 0, denom, 1.0)
        return out

    def flops(self, p: Problem) -> float:
        s = p.shape
        pairs = float(s["Sq"]) * s["Skv"]
        if p.attrs.get("causal"):
            pairs = float(causal_pairs(s["Sq"], s["Skv"]))
        return 4.0 * s["B"] * s["Hq"] * pairs * s["D"]

    def unfused_steps(self, p: Problem) -> list[str]:
        steps = ["S = Q K^T (matmul)", "S = S * scale" + (" + causal mask" if p.attrs.get("causal") else ""),
                 "P = softmax(S) (last axis)", "O = P V (matmul)"]
        return steps


def causal_pairs(sq: int, skv: int) -> int:
    """Number of (query, key) pairs a bottom-right-aligned causal mask keeps."""
    total = 0
    off = skv - sq
    for i in range(sq):
        total += max(0, min(skv, i + off + 1))
    return total
