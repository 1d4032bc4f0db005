"""Executors: `local` (process pool + one device slot) and `ray` (tasks + device actors)."""
from __future__ import annotations

from pathlib import Path

from forge.backends.base import Backend
from forge.errors import ForgeInputError, allowed_list
from forge.executor.base import Executor, Job, Outcome

EXECUTORS = ("local", "ray")


def check_placement(devices: int, executor: str, backend: Backend, ray_address: str | None = None) -> None:
    """A Ray address and several device slots need the Ray executor (the local one would ignore
    them); several slots also need a target whose device is not the host CPU (two timings at once
    on the host would disturb each other)."""
    if ray_address and executor != "ray":
        raise ForgeInputError("--ray-address", f"{ray_address!r} names a Ray cluster, which only --executor ray "
                                               "joins; add --executor ray, or leave the address out to run here")
    if devices == 1:
        return
    if executor != "ray":
        raise ForgeInputError("--devices", f"{devices} device slots need --executor ray (which starts a Ray "
                                           "cluster on this machine when given no address); the local executor "
                                           "measures on one device")
    if backend.measures_on_host:
        raise ForgeInputError("--devices", f"the {backend.target.name} target times variants on the host CPU, "
                                           "one at a time; allowed: 1")


def refuse_device_without_one(measure: str, available: tuple[bool, str]) -> None:
    """`--measure device` where no device can measure: refused before a variant is built, rather
    than a run whose variants all fail for the same reason. `available` is the device slot's own
    answer (a Ray slot answers for its node)."""
    ok, why = available
    if measure == "device" and not ok:
        raise ForgeInputError("--measure", f"device measurement requested but {why}; allowed here: auto or model "
                                         "(times then modeled, and labelled so)")


def make_executor(name: str, backend: Backend, cache_dir: Path, *, build_workers: int | None = None,
                  ray_address: str | None = None, devices: int = 1) -> Executor:
    if name == "local":
        from forge.executor.local import LocalExecutor

        return LocalExecutor(backend, cache_dir, build_workers)
    if name == "ray":
        from forge.executor.ray_executor import RayExecutor

        return RayExecutor(backend, cache_dir, build_workers, address=ray_address, devices=devices)
    raise ForgeInputError("executor", f"unknown executor {name!r}; {allowed_list(name, EXECUTORS)}")


__all__ = ["EXECUTORS", "Executor", "Job", "Outcome", "check_placement", "make_executor", "refuse_device_without_one"]
