"""matmul for CUDA: the tensor-core GEMM (gemm.py) for fp16/bf16 inputs, the SIMT GEMM (sgemm.py)
for float32, which tensor cores would round (TF32)."""
from __future__ import annotations

from types import ModuleType
from typing import Any

from forge.generators.cuda import gemm, sgemm
from forge.generators.cuda.plan import Plan
from forge.problem import Problem
from forge.space import Space


# Rules that keep slow configs out, not wrong ones: a config is checked on the host at a reduced
# shape (emulation_shape) where these need not hold.
PERFORMANCE_RULES = ("split_k", "group_m", "tile")


def kernel_for(p: Problem) -> ModuleType:
    return sgemm if p.dtype == "float32" else gemm


def supports(p: Problem) -> str | None:
    return kernel_for(p).supports(p)


def space(p: Problem, arch) -> Space:
    return kernel_for(p).space(p, arch)


def emulation_shape(p: Problem, c: dict[str, Any]) -> dict[str, int]:
    return kernel_for(p).emulation_shape(p, c)


def plan(p: Problem, c: dict[str, Any], arch) -> Plan:
    return kernel_for(p).plan(p, c, arch)
