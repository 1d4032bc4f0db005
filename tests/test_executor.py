"""One executor suite, run against the local executor and a real local Ray cluster.

Every submitted variant yields exactly one outcome; a crash, a hang, a wrong result and a compile
error become failed outcomes with their reasons, and the good variants around them still finish.
"""
from __future__ import annotations

import pytest

from forge.backends import get_backend
from forge.backends.child import dies_with_parent
from forge.errors import ForgeInputError

from forge.executor import Job, make_executor
from forge.ops import get_op
from forge.targets import get_target
from forge.results import Store
from forge.testing import DriverlessCpuBackend, DyingSlotCpuBackend, FaultyCpuBackend, IntervalLogCpuBackend, SlotLogCpuBackend
from forge.variant import Variant

PROBLEM = get_op("softmax").problem({"M": 64, "N": 96})


@pytest.fixture(scope="module")
def ray_cluster():
    import ray
    ray.init(num_cpus=2, resources={"forge_test_device": 2}, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    yield ray
    ray.shutdown()


@pytest.fixture(params=["local", "ray"])
def executor_name(request):
    if request.param == "ray":
        request.getfixturevalue("ray_cluster")
    return request.param


def run_all(ex, configs, reps: int, timeout: float) -> list:
    """Submit one job per config, collect every outcome, close the executor."""
    try:
        for i, c in enumerate(configs):
            ex.submit(Job(Variant(PROBLEM, "cpu", c), seed=i, reps=reps, warmup=1, timeout=timeout))
        return list(ex.results())
    finally:
        ex.close()


def planted(configs):
    faults = {"crash": configs[0], "hang": configs[1], "wrong": configs[2], "compile": configs[3]}
    return FaultyCpuBackend(get_target("cpu"), faults=faults)


def test_faults_become_failed_outcomes_and_the_rest_finishes(executor_name, tmp_path):
    base = FaultyCpuBackend(get_target("cpu"), faults={})
    configs = base.space(PROBLEM).enumerate().configs()[:6]
    backend = planted(configs)
    jobs = [Job(Variant(PROBLEM, "cpu", c), seed=i, reps=3, warmup=1, timeout=3.0) for i, c in enumerate(configs)]
    ex = make_executor(executor_name, backend, tmp_path / "cache", build_workers=2)
    try:
        for j in jobs:
            ex.submit(j)
        outcomes = {o.job.variant.key(): o for o in ex.results()}
    finally:
        ex.close()
    assert len(outcomes) == len(jobs)
    status = [outcomes[j.variant.key()].measurement.status for j in jobs]
    assert status == ["runtime_error", "timeout", "incorrect", "compile_error", "ok", "ok"]
    assert "SIG" in outcomes[jobs[0].variant.key()].measurement.reason
    assert "error" in outcomes[jobs[3].variant.key()].measurement.reason.lower()
    good = outcomes[jobs[4].variant.key()].measurement
    assert len(good.timings) == 3 and good.time_kind == "measured"


def test_invalid_variant_never_reaches_the_compiler(executor_name, tmp_path):
    backend = FaultyCpuBackend(get_target("cpu"), faults={})
    sp = backend.space(PROBLEM)
    bad = next(c for c in sp.iter_cartesian() if sp.check(c))
    ex = make_executor(executor_name, backend, tmp_path / "cache", build_workers=1)
    try:
        ex.submit(Job(Variant(PROBLEM, "cpu", bad), seed=0))
        (o,) = list(ex.results())
    finally:
        ex.close()
    assert o.measurement.status == "invalid" and o.artifact is None
    assert o.measurement.reason == "; ".join(sp.check(bad))


def test_cpu_measurement_never_overlaps_a_compilation(executor_name, tmp_path):
    """On the CPU target a compiler beside a timed run would steal its cores: the executors make
    compilation and measurement take turns."""
    log = tmp_path / "intervals.log"
    backend = IntervalLogCpuBackend(get_target("cpu"), str(log))
    assert backend.measures_on_host
    configs = backend.space(PROBLEM).enumerate().configs()[:8]
    outcomes = run_all(make_executor(executor_name, backend, tmp_path / "cache", build_workers=2), configs,
                       reps=5, timeout=10.0)
    assert [o.measurement.status for o in outcomes] == ["ok"] * len(configs)
    spans = [line.split() for line in log.read_text().splitlines()]
    builds = [(float(a), float(b)) for kind, a, b in spans if kind == "build"]
    runs = [(float(a), float(b)) for kind, a, b in spans if kind == "run"]
    assert len(builds) == len(runs) == len(configs)
    overlaps = [(b, r) for b in builds for r in runs if b[0] < r[1] and r[0] < b[1]]
    assert not overlaps


def test_local_close_during_a_measurement_raises_nowhere(tmp_path, monkeypatch):
    """close() while the device slot measures and holds builds back (what Ctrl-C does): the held
    builds are dropped instead of going to a shut-down pool, and the device thread ends cleanly."""
    import threading

    errors = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    backend = IntervalLogCpuBackend(get_target("cpu"), str(tmp_path / "intervals.log"))
    configs = backend.space(PROBLEM).enumerate().configs()[:6]
    ex = make_executor("local", backend, tmp_path / "cache", build_workers=2)
    jobs = [Job(Variant(PROBLEM, "cpu", c), seed=i, reps=200, warmup=1, timeout=30.0) for i, c in enumerate(configs)]
    for j in jobs[:2]:
        ex.submit(j)
    assert ex.next_result(timeout=120) is not None          # one measured; the second one is under way
    for j in jobs[2:]:
        ex.submit(j)                                        # held back while it is measured
    ex.close()
    ex.device.join(timeout=60)
    assert not ex.device.is_alive() and errors == []


def test_ray_a_variant_whose_device_slot_dies_is_measured_again_once(ray_cluster, tmp_path):
    """A dead device actor was lost to its node, not to the variant (kernels crash in a process of
    their own): the variant is measured again on a fresh slot; a second death records it as failed."""
    base = DyingSlotCpuBackend(get_target("cpu"), str(tmp_path), once={}, always={"__none__": 1})
    configs = base.space(PROBLEM).enumerate().configs()[:4]
    backend = DyingSlotCpuBackend(get_target("cpu"), str(tmp_path), once=configs[0], always=configs[1],
                                  raises=configs[2])
    outcomes = run_all(make_executor("ray", backend, tmp_path / "cache", build_workers=2), configs,
                       reps=2, timeout=10.0)
    by_key = {o.job.variant.key(): o.measurement for o in outcomes}
    assert len(outcomes) == len(configs)
    keys = [Variant(PROBLEM, "cpu", c).key() for c in configs]
    assert (tmp_path / f"died-{keys[0]}").exists()                  # it did die once
    assert by_key[keys[0]].status == "ok"
    assert by_key[keys[1]].status == "runtime_error" and "lost twice" in by_key[keys[1]].reason
    # an error of the slot's own code is that variant's, with its reason: the slot lives on, nothing retried
    assert by_key[keys[2]].status == "runtime_error" and "device slot error: " in by_key[keys[2]].reason
    assert "check failed in the slot" in by_key[keys[2]].reason and by_key[keys[3]].status == "ok"


def _kernels_under(folder) -> list[int]:
    """Processes running a program built under `folder` (kernels run from the build cache)."""
    import os

    pids = []
    for entry in os.listdir("/proc"):
        try:
            argv0 = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")[0].decode()
            state = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[0]
        except (OSError, ValueError, IndexError):
            continue
        if argv0.startswith(str(folder)) and state != "Z":
            pids.append(int(entry))
    return pids


@pytest.mark.skipif(dies_with_parent(["true"]) == ["true"], reason="no setpriv --pdeathsig on this machine")
def test_ray_a_kernel_running_when_its_device_slot_dies_dies_with_it(ray_cluster, tmp_path):
    """On Ray a kernel is started by the device slot's worker process, from the thread Ray runs the
    actor's task on: a slot whose worker is killed outright (by the OOM killer, say; Ray's own
    `ray.kill` also ends the worker's children) must not leave the kernel it was timing running
    for ever."""
    import os
    import signal
    import time

    configs = get_backend("cpu").space(PROBLEM).enumerate().configs()[:1]
    backend = FaultyCpuBackend(get_target("cpu"), faults={"hang": configs[0]})
    cache = tmp_path / "cache"
    ex = make_executor("ray", backend, cache, build_workers=1)
    try:
        ex.submit(Job(Variant(PROBLEM, "cpu", configs[0]), seed=0, reps=1, warmup=0, timeout=600))
        deadline = time.monotonic() + 120
        while not _kernels_under(cache) and time.monotonic() < deadline:
            ex.next_result(timeout=0.2)
        hanging = _kernels_under(cache)
        assert len(hanging) == 1, "the hanging kernel never started"
        worker = int(open(f"/proc/{hanging[0]}/stat").read().rsplit(")", 1)[1].split()[1])
        os.kill(worker, signal.SIGKILL)                 # the slot's worker process, as the OOM killer would
        deadline = time.monotonic() + 20
        while hanging[0] in _kernels_under(cache) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert hanging[0] not in _kernels_under(cache), "the kernel outlived the slot that started it"
    finally:
        ex.close()
        time.sleep(0.5)
        for pid in _kernels_under(cache):      # the re-measure's kernel, or a survivor of a failed check
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_ray_device_slots_measure_at_once_each_on_its_own_device(ray_cluster, tmp_path):
    """`devices` slots each reserve one of the backend's devices (a custom Ray resource here, as
    "GPU" / "NPU" are on real targets) and measure at the same time in separate actors; more slots
    than the cluster has devices is an input error before anything is measured."""
    from forge.executor.ray_executor import RayExecutor

    log = tmp_path / "intervals.log"
    backend = SlotLogCpuBackend(get_target("cpu"), str(log), run_seconds=1.0)
    with pytest.raises(ForgeInputError, match=r"--devices: 3 device slot\(s\) need 3 forge_test_device and the "
                                              r"Ray cluster has 2"):
        RayExecutor(backend, tmp_path / "cache", devices=3)
    configs = backend.space(PROBLEM).enumerate().configs()[:6]
    outcomes = run_all(make_executor("ray", backend, tmp_path / "cache", build_workers=2, devices=2), configs,
                       reps=3, timeout=30.0)
    assert [o.measurement.status for o in outcomes] == ["ok"] * 6
    runs = [(float(a), float(b), pid) for kind, a, b, pid in (line.split() for line in log.read_text().splitlines())
            if kind == "run"]
    assert len({pid for _, _, pid in runs}) == 2                                   # two actors measured
    assert any(a0 < b1 and a1 < b0 for a0, b0, p0 in runs for a1, b1, p1 in runs if p0 != p1)   # at once
    # The final re-measure goes to one slot (the baselines' too), whatever the queues.
    log.write_text("")
    ex = make_executor("ray", backend, tmp_path / "cache", build_workers=2, devices=2)
    try:
        for i, c in enumerate(configs[:3]):
            ex.submit(Job(Variant(PROBLEM, "cpu", c), seed=i, reps=3, warmup=1, timeout=30.0, phase="final"))
        assert len(list(ex.results())) == 3
    finally:
        ex.close()
    assert len({line.split()[3] for line in log.read_text().splitlines() if line.startswith("run ")}) == 1
    # Builds are one-CPU tasks anywhere in the cluster: unless told otherwise, the tuner may keep as
    # many in flight as the cluster has CPUs (forge/tuner.py default_batch).
    import ray

    ex = make_executor("ray", backend, tmp_path / "cache", devices=2)
    try:
        assert ex.build_workers == int(ray.cluster_resources()["CPU"])
    finally:
        ex.close()


def test_a_device_slot_reserves_the_targets_device_when_the_cluster_has_one():
    from forge.backends import get_backend
    from forge.executor.ray_executor import slot_options

    cuda, ascend, cpu = (get_backend(get_target(t)) for t in ("h100", "ascend910b2", "cpu"))
    bare, devices = {"CPU": 8.0}, {"CPU": 8.0, "GPU": 4.0, "NPU": 8.0}
    assert slot_options(cuda, bare) == {} and slot_options(ascend, bare) == {}   # no such device in the cluster
    assert slot_options(cuda, devices) == {"num_gpus": 1}                       # Ray takes GPUs as num_gpus
    assert slot_options(ascend, devices) == {"resources": {"NPU": 1}}
    assert slot_options(get_backend(get_target("h100"), measure="model"), devices) == {}   # modeled: none
    assert slot_options(cpu, devices) == {}                                     # the host CPU is no Ray resource
    assert slot_options(cpu, bare, {"x": 1}) == {"resources": {"x": 1}}


def test_on_ray_the_device_slot_decides_measured_or_modeled_and_times_the_baselines(ray_cluster, tmp_path):
    """Driven from a machine without the device, a Ray run still measures on the cluster's: the
    measured-or-modeled question and the baselines go to a device slot, and run.json says what
    the slot found."""
    import json
    import os

    from forge.config import TuneSettings
    from forge.tuner import tune
    from rich.console import Console

    backend = DriverlessCpuBackend(get_target("cpu"), str(tmp_path / "intervals.log"))
    assert backend.measure_available()[0] is False                      # here, in the driving process
    local = make_executor("local", backend, tmp_path / "cache", build_workers=1)
    try:
        assert local.measure_available()[0] is False
    finally:
        local.close()
    run = tune(TuneSettings(op="softmax", shape={"M": 64, "N": 96}, trials=2, top_k=0, reps=2, warmup=0,
                            sampler="random", executor="ray", bank=False, vendor=False, out=tmp_path / "run"),
               console=Console(file=open(os.devnull, "w")), backend=backend)
    assert json.loads((run / "run.json").read_text())["measured"] is True
    store = Store.for_run(run)
    (base,) = store.records(phase="baseline")
    assert base.extra["label"].startswith("timed in pid ") and base.extra["label"] != f"timed in pid {os.getpid()}"
    assert base.host and base.host == store.records(phase="search")[0].host     # the slot's, as the variants'
    store.close()


def test_a_device_slot_says_where_it_timed_the_baselines(tmp_path, monkeypatch):
    """Baselines timed by a Ray slot on a GPU node carry that node and device, as its variants do: the
    report's "MEASURED on …" named the driving machine for them."""
    from forge.executor.ray_executor import _DeviceSlot

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    slot = _DeviceSlot(get_backend("cpu"), str(tmp_path / "cache"))
    p = get_op("softmax").problem({"M": 8, "N": 64})
    bases = slot.baselines(p, {"seed": 0, "reps": 1, "timeout": 60})
    assert bases and all(b.host.endswith("CUDA_VISIBLE_DEVICES=3") for b in bases)


def test_on_ray_a_slot_that_cannot_measure_refuses_measure_device_and_leaves_no_folder(ray_cluster, tmp_path):
    """`--measure device` on Ray is refused once a slot says it has no device (the slot answers for
    its node, so only then): an input error naming the field, and no half-made run folder left."""
    import os

    from forge.backends import get_backend
    from forge.config import TuneSettings
    from forge.tuner import tune
    from rich.console import Console

    if get_backend("h100").measure_available()[0]:
        pytest.skip("this machine has a GPU that can measure h100 variants: nothing to refuse")
    with pytest.raises(ForgeInputError, match=r"measure"):
        tune(TuneSettings(op="softmax", target="h100", shape={"M": 64, "N": 96}, trials=2, measure="device",
                          executor="ray", bank=False, out=tmp_path / "run"),
             console=Console(file=open(os.devnull, "w")))
    assert not (tmp_path / "run").exists()
