"""Backend registry: a target's `kind` picks the backend class (imported lazily)."""
from __future__ import annotations

import functools
import hashlib
import importlib
from pathlib import Path

from forge.backends.base import Backend
from forge.errors import ForgeInputError
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


# The code behind a backend's variants and times (relative to the forge package): the backend with
# its model and emulator, and its generators. A tuning-bank entry made by other code is stale.
CODE_DIRS = {"cpu": ("backends/cpu", "generators/c"), "cuda": ("backends/cuda", "generators/cuda"),
             "ascend": ("backends/ascend", "generators/ascendc")}


@functools.cache
def code_fingerprint(kind: str) -> str:
    """A short hash of every source file of the `kind` backend and its generators."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for d in CODE_DIRS.get(kind, ()):
        for f in sorted((root / d).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(str(f.relative_to(root)).encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def target_code(target: str) -> str:
    """code_fingerprint of the backend a target name uses ("" for a target this forge does not know)."""
    try:
        return code_fingerprint(get_target(target).kind)
    except ForgeInputError:
        return ""
