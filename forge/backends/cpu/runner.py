"""Run a built kernel in its own process group with a timeout, check its output, read timings.

Fresh inputs come from the operator's seeded maker; the harness poisons the output with NaN, so
anything the kernel fails to write shows up in the check. A signal becomes `runtime_error` with
the signal's name, the timeout kills the whole process group.
"""
from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from forge.backends.base import Measurement
from forge.backends.child import dies_with_parent
from forge.backends.cpu.hwinfo import available_memory_bytes
from forge.ops import get_op
from forge.problem import Problem


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


RUN_DIR_PREFIX = "forge-run-"
IN_USE = ".in-use"               # held locked (flock) by the process using the run folder
UNLOCKED_STALE_S = 3600.0        # a run folder without IN_USE this long unchanged is no one's


@functools.cache
def _remove_left_behind() -> None:
    """Once per process: the run folders (inputs the size of the problem) of forge processes that
    were killed before they could remove them. A folder is in use while its process holds the lock
    on its IN_USE file, which the kernel lets go when the process dies, wherever it ran (a /tmp
    shared between containers shows no process ids of the others). A folder without the file was
    being made a moment ago, or its process died in that moment: left alone, unless untouched for
    UNLOCKED_STALE_S."""
    for d in Path(tempfile.gettempdir()).glob(f"{RUN_DIR_PREFIX}*"):
        try:
            with open(d / IN_USE, "rb") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except FileNotFoundError:
            try:
                if not d.is_dir() or time.time() - d.stat().st_mtime < UNLOCKED_STALE_S:
                    continue
            except OSError:
                continue
        except OSError:          # in use, or not a folder of ours
            continue
        shutil.rmtree(d, ignore_errors=True)


def write_inputs(problem: Problem, seed: int, path: Path) -> dict[str, np.ndarray]:
    op = get_op(problem.op)
    inputs = op.make_inputs(problem, seed)
    with open(path, "wb") as f:
        for spec in op.inputs(problem):
            f.write(np.ascontiguousarray(inputs[spec.name], dtype=np.float32).tobytes())
    return inputs


def run_executable(exe: str, problem: Problem, *, seed: int, warmup: int, reps: int, timeout: float,
                   flush_bytes: int, check: bool = True) -> Measurement:
    """Run, check against the float64 reference, return the timings. `check=False` is only for
    re-timing an executable whose output was already checked (benchmarks interleaving runs); the
    measurement then says so in extra["unchecked"]."""
    op = get_op(problem.op)
    # A run interrupted mid-measurement leaves this directory to the exit-time cleanup while the
    # kernel (its own session, so Ctrl-C does not reach it) may still be writing its output there:
    # a failed removal then must not print a traceback over the run's "how to resume" message.
    _remove_left_behind()
    with tempfile.TemporaryDirectory(prefix=RUN_DIR_PREFIX, ignore_cleanup_errors=True) as d, \
            open(Path(d) / IN_USE, "wb") as in_use:
        fcntl.flock(in_use, fcntl.LOCK_EX)
        in_path, out_path = Path(d) / "inputs.bin", Path(d) / "output.bin"
        inputs = write_inputs(problem, seed, in_path)
        cmd = [exe, str(in_path), str(out_path), str(warmup), str(reps), str(flush_bytes)]
        avail = available_memory_bytes()
        if avail is not None:   # the harness refuses buffers that would not fit (exit 3, says why)
            cmd.append(str(avail))
        try:
            proc = subprocess.Popen(dies_with_parent(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
        except OSError as exc:
            return Measurement("runtime_error", f"could not start {exe}: {exc}")
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return Measurement("timeout", f"no result within {timeout:g} s; process group killed")
        if proc.returncode < 0:
            name = _signal_name(-proc.returncode)
            return Measurement("runtime_error", f"killed by {name}" + (f": {stderr.strip()[-300:]}" if stderr.strip() else ""))
        if proc.returncode == 3 and "forge harness: not run:" in stderr:
            return Measurement("runtime_error", stderr.strip().removeprefix("forge harness: "))
        if proc.returncode != 0:
            return Measurement("runtime_error", f"exit code {proc.returncode}: {stderr.strip()[-500:]}")
        spec = op.output(problem)
        expected = int(np.prod(spec.shape))
        raw = np.fromfile(out_path, dtype=np.float32) if out_path.exists() else np.zeros(0, np.float32)
        if raw.size != expected:
            return Measurement("runtime_error", f"output has {raw.size} values, expected {expected}")
        errors: dict = {}
        if check:
            metrics = op.check(problem, inputs, raw.reshape(spec.shape), seed=seed)
            if not metrics.ok:
                return Measurement("incorrect", metrics.reason, errors=metrics.as_dict())
            errors = metrics.as_dict()
        try:
            timings = [float(t) for t in json.loads(stdout.strip().splitlines()[-1])["timings"]]
        except (ValueError, KeyError, IndexError) as exc:
            return Measurement("runtime_error", f"unreadable timing line ({exc}): {stdout[-200:]!r}")
        extra = {"median_s": float(np.median(timings)) if timings else None}
        if not check:
            extra["unchecked"] = True
        return Measurement("ok", timings=timings, errors=errors, time_kind="measured", extra=extra)
