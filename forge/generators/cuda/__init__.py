"""CUDA C++ generators (Jinja2 templates in `templates/`): attention (FA2-style), matmul (tensor-core
GEMM for fp16/bf16, SIMT GEMM for float32), rmsnorm, softmax, softmax over a middle axis, swiglu.

`for_op(name)` returns the module with `supports(problem)`, `space(problem, arch)` and
`plan(problem, config, arch) -> Plan`.
"""
from __future__ import annotations

from types import ModuleType

from forge.errors import ForgeInputError
from forge.generators.cuda import attention, matmul, rows, softmax_axis, swiglu
from forge.generators.cuda.plan import Buffer, Launch, Plan

MODULES: dict[str, ModuleType] = {"attention": attention, "matmul": matmul, "rmsnorm": rows, "softmax": rows,
                                  "softmax_axis": softmax_axis, "swiglu": swiglu}


def for_op(op: str) -> ModuleType:
    if op not in MODULES:
        raise ForgeInputError("op", f"no CUDA generator for {op!r}; available: {', '.join(sorted(MODULES))}")
    return MODULES[op]


__all__ = ["Buffer", "Launch", "MODULES", "Plan", "for_op"]
