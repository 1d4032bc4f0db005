"""Backend registry: a target's `kind` picks the backend class (imported lazily)."""
from __future__ import annotations

import importlib

from forge.backends.base import Backend
from forge.targets import Target, get_target

BACKENDS = {
    "cpu": "forge.backends.cpu.backend:CpuBackend",
    "cuda": "forge.backends.cuda.backend:CudaBackend",
    "ascend": "forge.backends.ascend.backend:AscendBackend",
}


def get_backend(target: str | Target, **options) -> Backend:
    t = get_target(target) if isinstance(target, str) else target
    module, cls = BACKENDS[t.kind].split(":")
    return getattr(importlib.import_module(module), cls)(t, **options)
