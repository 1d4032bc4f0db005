"""Operator registry."""
from __future__ import annotations

from forge.errors import ForgeInputError, allowed_list
from forge.ops.attention import Attention
from forge.ops.base import Op, TensorSpec
from forge.ops.matmul import Matmul
from forge.ops.rmsnorm import RMSNorm
from forge.ops.softmax import Softmax
from forge.ops.softmax_axis import SoftmaxAxis
from forge.ops.swiglu import SwiGLU

OPS: dict[str, Op] = {op.name: op for op in (Attention(), RMSNorm(), Softmax(), SoftmaxAxis(), Matmul(), SwiGLU())}


def get_op(name: str) -> Op:
    try:
        return OPS[name]
    except KeyError:
        raise ForgeInputError("op", f"unknown operator {name!r}; {allowed_list(name, sorted(OPS))}") from None


__all__ = ["OPS", "Op", "TensorSpec", "get_op"]
