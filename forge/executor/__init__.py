"""Executors: `local` (process pool + one device slot) and `ray` (tasks + a device actor)."""
from __future__ import annotations

from pathlib import Path

from forge.backends.base import Backend
from forge.errors import ForgeInputError
from forge.executor.base import Executor, Job, Outcome

EXECUTORS = ("local", "ray")


def make_executor(name: str, backend: Backend, cache_dir: Path, *, build_workers: int | None = None,
                  ray_address: str | None = None) -> Executor:
    if name == "local":
        from forge.executor.local import LocalExecutor

        return LocalExecutor(backend, cache_dir, build_workers)
    if name == "ray":
        from forge.executor.ray_executor import RayExecutor

        return RayExecutor(backend, cache_dir, build_workers, address=ray_address)
    raise ForgeInputError("executor", f"unknown executor {name!r}; allowed: {', '.join(EXECUTORS)}")


__all__ = ["EXECUTORS", "Executor", "Job", "Outcome", "make_executor"]
