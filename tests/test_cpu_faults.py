"""Crash, hang, wrong result and compile error become the right statuses; builds are cached."""
from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from forge.backends import get_backend
from forge.backends.child import dies_with_parent
from forge.ops import get_op
from forge.targets import get_target
from forge.testing import FaultyCpuBackend
from forge.variant import Variant

P = get_op("softmax").problem(dict(M=8, N=40))
BASE = dict(algo="online", rows_per_task=1, vec=8, unroll=1, threads=1, schedule="static")


@pytest.fixture(scope="module")
def faulty():
    return FaultyCpuBackend(get_target("cpu"), {"crash": {"unroll": 2}, "hang": {"unroll": 4},
                                                "wrong": {"vec": 16, "unroll": 1}, "compile": {"rows_per_task": 4}})


def _outcome(backend, cache_dir, cfg, timeout=20.0):
    v = Variant(P, "cpu", cfg)
    art = backend.build(v, cache_dir)
    return art, backend.run(art, v, seed=0, warmup=0, reps=1, timeout=timeout)


def test_crash_is_runtime_error_with_signal(faulty, cache_dir):
    _, m = _outcome(faulty, cache_dir, BASE | {"unroll": 2})
    assert m.status == "runtime_error" and "SIGSEGV" in m.reason


def test_hang_is_timeout(faulty, cache_dir):
    _, m = _outcome(faulty, cache_dir, BASE | {"unroll": 4}, timeout=1.5)
    assert m.status == "timeout" and "1.5 s" in m.reason


def test_wrong_result_is_incorrect_with_reason(faulty, cache_dir):
    _, m = _outcome(faulty, cache_dir, BASE | {"vec": 16})
    assert m.status == "incorrect" and "row 0 col 0" in m.reason and m.errors["max_abs"] >= 0.5


def test_compile_error_carries_compiler_message(faulty, cache_dir):
    art, m = _outcome(faulty, cache_dir, BASE | {"rows_per_task": 4})
    assert not art.ok and "error" in art.error and "this is not C" in art.error
    assert m.status == "compile_error"
    assert not list(cache_dir.glob(f"{art.source_hash}*")), "a failed build must leave nothing in the cache"


def test_unmatched_variant_is_healthy_and_backend_pickles(faulty, cache_dir):
    _, m = _outcome(faulty, cache_dir, BASE)
    assert m.status == "ok", m.reason
    clone = pickle.loads(pickle.dumps(faulty))
    assert clone.faults == faulty.faults and clone.fault_for(Variant(P, "cpu", BASE | {"unroll": 2})) == "crash"


def test_build_cache_hit(cache_dir):
    be = get_backend("cpu")
    v = Variant(P, "cpu", BASE | {"algo": "twopass"})
    first = be.build(v, cache_dir)
    second = be.build(v, cache_dir)
    assert first.ok and second.cached and second.path == first.path and second.source_hash == first.source_hash
    assert second.build_seconds == 0.0


@pytest.mark.parametrize("damage", ["program missing", "program cut short"])
def test_a_damaged_cache_entry_is_built_again(tmp_path, damage):
    """A cache folder without its program used to fail every later build ("Directory not empty"),
    and a truncated program ran as a kernel crash; either is now built again and runs."""
    be = get_backend("cpu")
    v = Variant(P, "cpu", BASE | {"algo": "twopass"})
    first = be.build(v, tmp_path)
    exe = Path(first.path)
    if damage == "program missing":
        exe.unlink()
    else:
        exe.write_bytes(exe.read_bytes()[:4096])
    again = be.build(v, tmp_path)
    assert again.ok and not again.cached and again.path == first.path, again.error
    assert be.run(again, v, seed=0, warmup=0, reps=1, timeout=20).status == "ok"
    assert be.build(v, tmp_path).cached


def _build_in_process(args):
    cache_dir, cfg = args
    art = get_backend("cpu").build(Variant(P, "cpu", cfg), cache_dir)
    return art.ok, art.path


def test_parallel_builds_of_one_source_agree(tmp_path):
    cfg = BASE | {"unroll": 4, "vec": 16}
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(_build_in_process, [(tmp_path, cfg)] * 2))
    assert all(ok for ok, _ in results) and results[0][1] == results[1][1]
    assert [p.name for p in tmp_path.iterdir()] == [results[0][1].split("/")[-2]]   # no temp dirs left


def test_model_is_roofline_and_scales_with_threads():
    be = get_backend("cpu")
    p = get_op("attention").problem(dict(B=1, H=8, S=1024, D=64))
    cfg = dict(block_q=64, block_kv=64, vec=16, kr=4, qv=2, mr=4, order="head", threads=1, schedule="static")
    one, two = be.model(Variant(p, "cpu", cfg)), be.model(Variant(p, "cpu", cfg | {"threads": 2}))
    assert one > 0 and (two < one or get_target("cpu").details["cores"] == 1)


def test_generated_source_is_readable_with_config_on_top():
    be = get_backend("cpu")
    p = get_op("attention").problem(dict(B=1, Hq=4, Hkv=2, S=64, D=32), "float32", {"causal": True})
    cfg = dict(block_q=32, block_kv=64, vec=16, kr=4, qv=2, mr=2, order="group", threads=1, schedule="dynamic")
    text = be.generate(Variant(p, "cpu", cfg)).text
    head = text[:1500]
    for k, val in cfg.items():
        assert f"{k}" in head and str(val) in head
    assert "schedule(dynamic)" in text and "#define CAUSAL 1" in text


def test_unchecked_rerun_times_without_the_reference(cache_dir):
    """check=False (benchmarks re-timing an already checked variant) skips only the comparison, and says so."""
    from forge.backends.cpu.runner import run_executable
    faulty = FaultyCpuBackend(get_target("cpu"), {"wrong": {"unroll": 1}})
    art, m = _outcome(faulty, cache_dir, BASE)
    assert m.status == "incorrect"
    again = run_executable(art.path, P, seed=0, warmup=0, reps=2, timeout=20, flush_bytes=1 << 20, check=False)
    assert again.status == "ok" and len(again.timings) == 2 and again.extra["unchecked"] is True


def test_a_run_whose_buffers_exceed_free_memory_is_not_started_and_says_so(cache_dir, monkeypatch):
    """The unfused attention's score matrix [B, H, Sq, Skv] (8 MiB here) is paged in before the
    timed calls: past the memory available it would bring on the OOM killer, so the harness is told
    what is available and refuses. The same run starts when the memory is there."""
    from forge.backends.cpu.runner import run_executable
    backend = get_backend("cpu")
    p = get_op("attention").problem(dict(B=1, H=2, S=1024, D=8))
    art = backend.unfused_artifact(p, cache_dir, threads=1)
    assert art.ok, art.error
    run = lambda: run_executable(art.path, p, seed=0, warmup=0, reps=1, timeout=60, flush_bytes=0)  # noqa: E731
    monkeypatch.setattr("forge.backends.cpu.runner.available_memory_bytes", lambda: 4 << 20)
    m = run()
    assert m.status == "runtime_error", m.reason
    assert m.reason.startswith("not run: needs 8.") and "a 8.2 MiB workspace" in m.reason, m.reason
    assert m.reason.endswith("4.0 MiB of memory available"), m.reason
    monkeypatch.setattr("forge.backends.cpu.runner.available_memory_bytes", lambda: 1 << 30)
    assert run().status == "ok"


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its new parent to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(dies_with_parent(["true"]) == ["true"], reason="no setpriv --pdeathsig on this machine")
@pytest.mark.parametrize("started_by", ["main thread", "device-slot thread"])
def test_a_kernel_running_when_forge_is_killed_dies_with_it(tmp_path, started_by):
    """A kernel runs in a session of its own (a Ctrl-C for forge must not reach it mid-timing), so
    a forge killed with SIGKILL used to leave a hanging kernel running for ever. The local
    executor measures from a thread of its own, as here in the second case."""
    hang = tmp_path / "hang.sh"
    hang.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/pid\nexec sleep 600\n")
    hang.chmod(0o755)
    run = (f"run_executable({str(hang)!r}, get_op('softmax').problem(dict(M=8, N=40)), seed=0, warmup=0, reps=1, "
           "timeout=600, flush_bytes=0)")
    code = ("import threading, time; from forge.backends.cpu.runner import run_executable; "
            "from forge.ops import get_op\n"
            + (run if started_by == "main thread" else
               f"threading.Thread(target=lambda: {run}, daemon=True).start()\ntime.sleep(600)"))
    forge = subprocess.Popen([sys.executable, "-c", code])
    pid_file = tmp_path / "pid"
    deadline = time.monotonic() + 60
    while not (pid_file.is_file() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    assert _alive(pid)
    forge.kill()
    forge.wait()
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(pid)
    if alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, "the kernel outlived the forge that started it"


def test_run_folders_of_killed_forge_processes_are_removed(tmp_path, monkeypatch):
    """A forge killed outright leaves its run folder (inputs the size of the problem) in the
    temporary folder; the next forge removes those no process holds, and no other."""
    import fcntl
    import tempfile

    from forge.backends.cpu import runner

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    left, held, making = (tmp_path / f"forge-run-{name}" for name in ("left", "held", "making"))
    for d in (left, held, making):
        d.mkdir()
        (d / "inputs.bin").write_bytes(b"0" * 16)
    (left / runner.IN_USE).touch()
    old = tmp_path / "forge-run-from-an-older-forge"         # no lock file, untouched for hours
    old.mkdir()
    os.utime(old, (time.time() - 2 * runner.UNLOCKED_STALE_S,) * 2)
    with open(held / runner.IN_USE, "wb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        runner._remove_left_behind.__wrapped__()
    assert not left.exists() and held.exists() and making.exists() and not old.exists()


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_a_control_groups_memory_limit_bounds_the_memory_available(tmp_path, version):
    """In a container or a Ray worker the OOM killer goes by the group's limit, not the host's
    free memory."""
    from forge.backends.cpu.hwinfo import _cgroup_headroom

    if version == "v2":
        (tmp_path / "proc").write_text("0::/job\n")
        group, names = tmp_path / "cg" / "job", ("memory.max", "memory.current")
    else:
        (tmp_path / "proc").write_text("9:cpu:/x\n4:memory:/job\n")
        group, names = tmp_path / "cg" / "memory" / "job", ("memory.limit_in_bytes", "memory.usage_in_bytes")
    group.mkdir(parents=True)
    (group / names[0]).write_text(f"{8 << 30}\n")
    (group / names[1]).write_text(f"{3 << 30}\n")
    assert _cgroup_headroom(tmp_path / "proc", tmp_path / "cg") == 5 << 30
    (group / names[0]).write_text("max\n" if version == "v2" else f"{2**63 - 4096}\n")   # no limit
    assert _cgroup_headroom(tmp_path / "proc", tmp_path / "cg") is None
