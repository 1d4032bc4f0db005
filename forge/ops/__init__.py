"""Operator registry."""
from __future__ import annotations

import importlib

from forge.errors import ForgeInputError
from forge.ops.attention import Attention
from forge.ops.base import Op, TensorSpec
from forge.ops.matmul import Matmul
from forge.ops.rmsnorm import RMSNorm
from forge.ops.softmax import Softmax
from forge.ops.softmax_axis import SoftmaxAxis

OPS: dict[str, Op] = {op.name: op for op in (Attention(), RMSNorm(), Softmax(), SoftmaxAxis(), Matmul())}
# Operators that live beside a target's generators and register themselves when imported.
PLUGINS = ("forge.generators.ascendc.swiglu_op",)


def load_plugins() -> None:
    for module in PLUGINS:
        importlib.import_module(module)


def register(op: Op) -> None:
    """Add an operator (e.g. a target-specific one such as swiglu) to the registry."""
    OPS[op.name] = op


def get_op(name: str) -> Op:
    if name not in OPS:
        load_plugins()
    try:
        return OPS[name]
    except KeyError:
        raise ForgeInputError("op", f"unknown operator {name!r}; allowed: {', '.join(sorted(OPS))}") from None


__all__ = ["OPS", "Op", "TensorSpec", "get_op", "load_plugins", "register"]
