"""matmul for CUDA: the tensor-core GEMM (gemm.py) for fp16/bf16 inputs, the SIMT GEMM (sgemm.py)
for float32, which tensor cores would round (TF32)."""
from __future__ import annotations

from types import ModuleType
from typing import Any

from forge.generators.cuda import gemm, sgemm
from forge.generators.cuda.plan import Plan
from forge.problem import Problem
from forge.space import Space


def kernel_for(p: Problem) -> ModuleType:
    return sgemm if p.dtype == "float32" else gemm


def supports(p: Problem) -> str | None:
    return kernel_for(p).supports(p)


def space(p: Problem, arch) -> Space:
    return kernel_for(p).space(p, arch)


def plan(p: Problem, c: dict[str, Any], arch) -> Plan:
    return kernel_for(p).plan(p, c, arch)
