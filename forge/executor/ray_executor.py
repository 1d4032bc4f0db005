"""Ray executor: builds as Ray tasks on any CPU of the cluster, measurement on one actor per device.

`ray.init()` starts a local cluster, or joins the one at `address` (`--ray-address` or
RAY_ADDRESS). Each device slot is an actor that runs one measurement at a time (an actor executes
its calls in order), so a device is never shared; `devices` slots measure that many variants at
once. When the cluster has the backend's device (`Backend.device_resource`: Ray's "GPU" or
"NPU"), each slot reserves one, wherever in the cluster it is, and Ray makes only that device
visible to it (CUDA_VISIBLE_DEVICES / ASCEND_RT_VISIBLE_DEVICES); more slots than such devices is
an input error before anything is measured. Whether times are measured or modeled is asked on a
slot, which also times the baselines: the machine running forge needs no device.

A kernel that crashes or hangs does so in a process of its own (the backend's run), so a device
slot that dies was lost to its node (out of memory, a node gone), not to the variant it measured:
a fresh actor takes the slot and measures that variant once more; only a variant whose slot dies
twice becomes a failed outcome, with the reason. A build task whose worker dies is retried once by
Ray (`max_retries`; an exception the build raises is not retried).

When the device is the host CPU (`Backend.measures_on_host`), measurement and compilation take
turns as in the local executor: built variants wait for the running builds to finish and are then
measured one after another while new builds are held back; the held builds go out when no
measurement is waiting. The driver cannot tell which node a build task lands on, so on a
multi-node cluster builds on other nodes are held too: a cost in throughput, never in accuracy.
"""
from __future__ import annotations

import os
import platform
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from forge.backends.base import Artifact, Backend, Measurement, Verdict
from forge.errors import ForgeInputError
from forge.executor import check_placement
from forge.executor.base import Executor, Job, Outcome, after_build, build, measure, precheck


def _ray():
    import ray

    return ray


VISIBLE_DEVICES_ENV = ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES")


def _where() -> str:
    """The node, and the device Ray gave this process, for the record's `host`."""
    return " ".join([platform.node(), *(f"{v}={os.environ[v]}" for v in VISIBLE_DEVICES_ENV if os.environ.get(v))])


class _DeviceSlot:
    """Owns one device: measures one built variant at a time."""

    def __init__(self, backend: Backend, cache_dir: str):
        self.backend = backend
        self.cache_dir = Path(cache_dir)

    def run(self, job: Job, artifact: Artifact) -> tuple[Verdict, Artifact, Measurement, str]:
        verdict = self.backend.check(job.variant)
        if artifact.ok and artifact.path and not Path(artifact.path).exists():
            # Built on another node: build here from the same source (cached by source hash).
            artifact = build(self.backend, job.variant, self.cache_dir)
        early = after_build(job, verdict, artifact)
        if early is not None:
            return verdict, artifact, early.measurement, _where()
        return verdict, artifact, measure(self.backend, job, artifact), _where()

    def ping(self) -> str:
        return _where()

    def measure_available(self) -> tuple[bool, str]:
        return self.backend.measure_available()

    def baselines(self, problem, kwargs: dict[str, Any]) -> list:
        return [replace(b, host=_where()) for b in self.backend.baselines(problem, self.cache_dir, **kwargs)]


def ray_address(flag: str | None) -> tuple[str | None, str]:
    """The cluster address a run joins (`--ray-address`, else RAY_ADDRESS, else none: a local
    cluster) and the name an error about it gives, the one the user set."""
    return flag or os.environ.get("RAY_ADDRESS"), "--ray-address" if flag else "RAY_ADDRESS"


def check_reachable(flag: str | None, timeout: float = 5.0) -> None:
    """Fail fast on a Ray address (`flag`, else RAY_ADDRESS) nothing answers at: ray.init would
    otherwise retry for minutes. Only `host:port` and `ray://host:port` forms are checked ("auto"
    and "local" are Ray's own)."""
    import socket

    from forge.errors import ForgeInputError

    address, field = ray_address(flag)
    if not address or address in ("auto", "local"):
        return
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ForgeInputError(field, f"{address!r}: expected host:port, ray://host:port, auto or local")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ForgeInputError(field, f"no Ray cluster answers at {address} ({exc.strerror or exc}); "
                                               "start one with `ray start --head` or leave the address unset "
                                               "for a local cluster") from None


def _start_ray(ray: Any, address: str | None, field: str) -> None:
    """ray.init: a local cluster sized to this machine, or the one at `address`. Where `ray start`
    already runs a cluster on this machine, ray.init joins it by itself and takes no size; a
    cluster that cannot be joined is the address's input error, not a traceback."""
    from forge.errors import ForgeInputError

    def start(**kwargs: Any) -> None:
        _keeping_signal_handlers(lambda: ray.init(ignore_reinit_error=True, log_to_driver=False,
                                                  logging_level="ERROR", **kwargs))

    try:
        if address:
            start(address=address)
            return
        try:
            start(num_cpus=max(2, len(os.sched_getaffinity(0))), include_dashboard=False)
        except ValueError as exc:
            if "existing cluster" not in str(exc):
                raise
            start()
    except (ValueError, ConnectionError, RuntimeError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if address:
            raise ForgeInputError(field, f"cannot join the Ray cluster at {address}: {why}") from None
        raise ForgeInputError("--executor", f"ray could not start a cluster on this machine ({why}); use "
                                            "--executor local, or --ray-address to join a running one") from None


def _build_task(backend: Backend, variant, cache_dir: str) -> Artifact:
    return build(backend, variant, Path(cache_dir))


def _keeping_signal_handlers(start) -> None:
    """Run `start` (ray.init), then put back the caller's SIGTERM and SIGINT handlers: Ray's core
    worker installs its own, which ends the process at once, where forge's stops the run cleanly
    (records kept, the resume line printed). Handlers can only be set from the main thread."""
    if threading.current_thread() is not threading.main_thread():
        start()
        return
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    start()
    for sig, handler in before.items():
        if handler is not None:
            signal.signal(sig, handler)


def slot_options(backend: Backend, cluster: dict[str, float],
                 device_resources: dict[str, float] | None = None) -> dict[str, Any]:
    """What one device slot reserves: `device_resources` when given, else one of the backend's
    devices when the cluster has any and times are not to be modeled, else nothing. Whether the
    slot can then measure is asked on the slot, not here: the machine running forge may have no
    device while the cluster's nodes do."""
    if device_resources:
        return {"resources": dict(device_resources)}
    name = backend.device_resource
    if not name or backend.measure == "model" or cluster.get(name, 0) < 1:
        return {}
    return {"num_gpus": 1} if name == "GPU" else {"resources": {name: 1}}   # Ray takes GPUs only as num_gpus


def _check_capacity(have: dict[str, float], options: dict[str, Any], devices: int) -> None:
    wanted = {"GPU": options["num_gpus"]} if "num_gpus" in options else options.get("resources", {})
    for name, each in wanted.items():
        if have.get(name, 0) < each * devices:
            raise ForgeInputError("--devices", f"{devices} device slot(s) need {each * devices:g} {name} and the "
                                               f"Ray cluster has {have.get(name, 0):g}")


class RayExecutor(Executor):
    def __init__(self, backend: Backend, cache_dir: Path, build_workers: int | None = None,
                 address: str | None = None, device_resources: dict[str, float] | None = None, devices: int = 1):
        super().__init__(backend, cache_dir, build_workers)
        ray = _ray()
        if not ray.is_initialized():
            check_reachable(address)
            _start_ray(ray, *ray_address(address))
        self.ray = ray
        self._exclusive = bool(getattr(backend, "measures_on_host", False))
        check_placement(devices, "ray", backend)
        self.devices = devices
        cluster = ray.cluster_resources()
        if build_workers is None:
            # every build is a one-CPU task anywhere in the cluster: the tuner keeps this many (plus
            # one per device slot) in flight, so the whole cluster compiles, not one worker's worth
            self.build_workers = max(1, int(cluster.get("CPU", 1)))
        options = slot_options(backend, cluster, device_resources)
        _check_capacity(cluster, options, devices)
        self._build = ray.remote(num_cpus=1, max_retries=1)(_build_task)
        self._slot_cls = ray.remote(num_cpus=0, max_restarts=0, **options)(_DeviceSlot)
        self.slots = [self._new_slot() for _ in range(devices)]
        self.builds: dict = {}      # build ref -> job
        self.runs: dict = {}        # run ref -> (job, artifact, slot index)
        self.ready: list[Outcome] = []
        self._built: list = []      # (job, artifact) waiting for the device (exclusive mode)
        self._held: list[Job] = []  # jobs whose build waits for the device to go idle
        self._lost_once: set[int] = set()   # id() of jobs whose device slot died under them once

    def _new_slot(self):
        return self._slot_cls.remote(self.backend, str(self.cache_dir))

    def measure_available(self) -> tuple[bool, str]:
        return self.ray.get(self.slots[0].measure_available.remote())

    def baselines(self, problem, *, seed: int, reps: int, timeout: float, warmup: int = 2, vendor: bool = True) -> list:
        return self.ray.get(self.slots[0].baselines.remote(problem, {"seed": seed, "reps": reps, "timeout": timeout,
                                                                     "warmup": warmup, "vendor": vendor}))

    def submit(self, job: Job) -> None:
        early = precheck(self.backend, job)
        if early:
            self.ready.append(early)
            return
        if self._exclusive and (self.runs or self._built):
            self._held.append(job)
            return
        self._dispatch(job)

    def _dispatch(self, job: Job) -> None:
        ref = self._build.remote(self.backend, job.variant, str(self.cache_dir))
        self.builds[ref] = job

    def _measure(self, job: Job, artifact: Artifact) -> None:
        """On the slot with the fewest measurements queued; the final re-measure all on slot 0, where
        the baselines are timed, so the ranking's last word compares times from one device."""
        queued = [0] * len(self.slots)
        for _, _, i in self.runs.values():
            queued[i] += 1
        i = 0 if job.phase == "final" else queued.index(min(queued))
        self.runs[self.slots[i].run.remote(job, artifact)] = (job, artifact, i)

    def _pump(self) -> None:
        """Exclusive mode: start the next measurement once no build runs; release held builds
        once no measurement waits."""
        if not self._exclusive or self.runs:
            return
        if self._built and not self.builds:
            self._measure(*self._built.pop(0))
        elif not self._built:
            held, self._held = self._held, []
            for job in held:
                self._dispatch(job)

    def pending(self) -> int:
        return len(self.builds) + len(self.runs) + len(self.ready) + len(self._built) + len(self._held)

    def _poll(self, timeout: float) -> None:
        refs = list(self.builds) + list(self.runs)
        if not refs:
            return
        done, _ = self.ray.wait(refs, num_returns=1, timeout=timeout)
        for ref in done:
            if ref in self.builds:
                job = self.builds.pop(ref)
                try:
                    artifact = self.ray.get(ref)
                except Exception as exc:  # worker lost, task error
                    artifact = Artifact(job.variant.key(), "", ok=False, error=f"build task lost: {type(exc).__name__}: {exc}")
                if self._exclusive:
                    self._built.append((job, artifact))
                else:
                    self._measure(job, artifact)
            else:
                job, artifact, slot = self.runs.pop(ref)
                try:
                    verdict, artifact, m, host = self.ray.get(ref)
                except self.ray.exceptions.RayActorError as exc:  # the device actor died mid-measurement
                    self._replace_slot(slot)
                    if id(job) not in self._lost_once:
                        self._lost_once.add(id(job))
                        self.runs[self.slots[slot].run.remote(job, artifact)] = (job, artifact, slot)
                        continue
                    verdict, host = Verdict(True), ""
                    m = Measurement("runtime_error", "device worker lost twice while measuring this variant: "
                                                     f"{type(exc).__name__}: {str(exc)[:500]}")
                except Exception as exc:  # the slot's own code failed (the actor lives on): this variant's
                    cause = getattr(exc, "cause", None) or exc          # a RayTaskError wraps what was raised
                    verdict, host = Verdict(True), ""
                    m = Measurement("runtime_error", f"device slot error: {type(cause).__name__}: {str(cause)[:500]}")
                self._lost_once.discard(id(job))
                self.ready.append(Outcome(job, verdict, artifact, m, host=host))
        self._pump()

    def _replace_slot(self, i: int) -> None:
        try:
            self.ray.kill(self.slots[i])
        except Exception:
            pass
        self.slots[i] = self._new_slot()
        # Measurements queued on the dead actor are resubmitted to the new one.
        for ref, (job, artifact, slot) in list(self.runs.items()):
            if slot == i:
                self.runs.pop(ref)
                self.runs[self.slots[i].run.remote(job, artifact)] = (job, artifact, i)

    def next_result(self, timeout: float | None = None) -> Outcome | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.ready:
            self._pump()
            if not (self.builds or self.runs):
                return None
            left = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
            self._poll(left)
            if deadline is not None and time.monotonic() >= deadline and not self.ready:
                return None
        return self.ready.pop(0)

    def close(self) -> None:
        for slot in self.slots:
            try:
                self.ray.kill(slot)
            except Exception:
                pass
