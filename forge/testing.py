"""Test doubles for executors and reports: a CPU backend that plants faults in chosen variants, and
`run_forge`, the command line run in the test's own process.

`FaultyCpuBackend(target, {"crash": {"block_q": 16}, "hang": {...}})` generates the normal kernel,
then, for variants whose config contains the given partial config, wraps `forge_kernel` so that
it segfaults, never returns, corrupts its output, or fails to compile. Module-level class with plain
attributes, so executors can pickle it to worker processes.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any
from unittest import mock

from forge.backends.base import Artifact, Baseline, Measurement, Source
from forge.backends.cpu.backend import CpuBackend
from forge.errors import ForgeInputError, allowed_list
from forge.report.progress import make_console
from forge.targets import Target
from forge.variant import Variant


def run_forge(*argv: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """`forge *argv` as the console script runs it (`forge.cli.main`: its error handling, exit codes
    and output), but in this process: a `python -m forge.cli` costs a second or two of imports, paid
    again by every command a test runs. `env` is laid over os.environ; the consoles the CLI made at
    import are made again under it, so COLUMNS applies as in a new process. An exception main() does
    not turn into an exit code propagates (a new process would print its traceback). What needs a
    process of its own still takes one: a signal, a kill, a second forge beside the first, or an
    environment that what this process already loaded or cached would not see (a `cc` first on
    PATH that refuses every build did not reach a tune run here after other tests had run)."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}   # as before forge.cli's import
    import forge.cli
    import forge.commands.show

    stdout, stderr = io.StringIO(), io.StringIO()
    code: Any = 0
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.dict(os.environ, env or {}))
        stack.enter_context(mock.patch.object(sys, "argv", ["forge", *argv]))
        stack.enter_context(contextlib.redirect_stdout(stdout))
        stack.enter_context(contextlib.redirect_stderr(stderr))
        for module in (forge.cli, forge.commands.show):
            stack.enter_context(mock.patch.object(module, "out", make_console()))
            stack.enter_context(mock.patch.object(module, "err", make_console(stderr=True)))
        try:
            forge.cli.main()
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
    if not isinstance(code, int):        # sys.exit("message"): printed, exit status 1
        stderr.write(f"{code}\n")
        code = 1
    return subprocess.CompletedProcess(["forge", *argv], code, stdout.getvalue(), stderr.getvalue())


# C statements run before / after the real kernel, per fault kind.
_FAULTS: dict[str, tuple[str, str]] = {
    "crash": ("*(volatile int *)0 = 1;  /* segfault */", ""),
    "hang": ("volatile int spin = 1; while (spin) { }  /* never returns */", ""),
    "wrong": ("", "out[0] += 1.0f;  /* wrong result */"),
    "compile": ("this is not C;  /* syntax error */", ""),
}


def matches(variant: Variant, partial: dict[str, Any]) -> bool:
    """Whether the variant's config holds every name=value of `partial` (how a test picks variants)."""
    return all(variant.config.get(k) == v for k, v in partial.items())


def plant_fault(kernel: str, kind: str) -> str:
    """Rename the kernel and wrap it with the fault's statements."""
    before, after = _FAULTS[kind]
    return ("#define forge_kernel forge_kernel_unfaulted\n" + kernel + "\n#undef forge_kernel\n"
            f"/* forge.testing: planted fault '{kind}' */\n"
            "void forge_kernel(const float *const *in, float *out, float *ws)\n{\n"
            f"    {before}\n    forge_kernel_unfaulted(in, out, ws);\n    {after}\n}}\n")


class FaultyCpuBackend(CpuBackend):
    def __init__(self, target: Target, faults: dict[str, dict[str, Any]], measure: str = "auto", **options: Any):
        super().__init__(target, measure=measure, **options)
        unknown = set(faults) - set(_FAULTS)
        if unknown:
            raise ForgeInputError("faults", f"unknown fault {sorted(unknown)[0]!r}; {allowed_list(sorted(unknown)[0], _FAULTS)}")
        self.faults = {k: dict(v) for k, v in faults.items()}

    def fault_for(self, variant: Variant) -> str | None:
        return next((kind for kind, partial in self.faults.items() if matches(variant, partial)), None)

    def generate(self, variant: Variant) -> Source:
        src = super().generate(variant)
        kind = self.fault_for(variant)
        if kind is None:
            return src
        files = dict(src.files)
        files[src.main] = plant_fault(files[src.main], kind)
        return Source(files, src.main, src.language)


class DiskFullCpuBackend(CpuBackend):
    """CPU backend whose build cache disk fills up after `builds` builds: every later build fails
    as a compiler does when it cannot write its output. Builds are counted by files in
    `marker_dir`, since they run in worker processes."""

    def __init__(self, target: Target, marker_dir: str, builds: int, **options: Any):
        super().__init__(target, **options)
        self.marker_dir, self.builds = marker_dir, builds

    def build(self, variant: Variant, cache_dir):  # noqa: ANN001, ANN201 - CpuBackend's signature
        if len(os.listdir(self.marker_dir)) >= self.builds:
            return Artifact(variant.key(), "", ok=False,
                            error="/usr/bin/ld: final link failed: No space left on device")
        open(os.path.join(self.marker_dir, variant.key()), "w").close()
        return super().build(variant, cache_dir)


class IntervalLogCpuBackend(CpuBackend):
    """CPU backend that appends `build|run <start> <end>` wall-clock lines to `log_path`, so a
    test can check that no compilation overlapped a measurement (builds run in other processes,
    hence a file, with one short append per interval)."""

    def __init__(self, target: Target, log_path: str, **options: Any):
        super().__init__(target, **options)
        self.log_path = log_path

    def _log(self, kind: str, start: float) -> None:
        with open(self.log_path, "a") as f:
            f.write(f"{kind} {start!r} {time.time()!r}\n")

    def build(self, variant: Variant, cache_dir):
        start = time.time()
        try:
            return super().build(variant, cache_dir)
        finally:
            self._log("build", start)

    def run(self, artifact, variant: Variant, **kwargs: Any):
        start = time.time()
        try:
            return super().run(artifact, variant, **kwargs)
        finally:
            self._log("run", start)


class SlotLogCpuBackend(IntervalLogCpuBackend):
    """CPU backend measured as if on a device of its own: it asks Ray for one `forge_test_device`
    per device slot, takes `run_seconds` per measurement, and logs the measuring process, so a test
    can see several slots measure at once, each in its own actor."""

    measures_on_host = False
    device_resource = "forge_test_device"

    def __init__(self, target: Target, log_path: str, run_seconds: float = 1.0, **options: Any):
        super().__init__(target, log_path, **options)
        self.run_seconds = run_seconds

    def _log(self, kind: str, start: float) -> None:
        with open(self.log_path, "a") as f:
            f.write(f"{kind} {start!r} {time.time()!r} {os.getpid()}\n")

    def run(self, artifact, variant: Variant, **kwargs: Any):
        start = time.time()
        try:
            time.sleep(self.run_seconds)
            return CpuBackend.run(self, artifact, variant, **kwargs)
        finally:
            self._log("run", start)


class DriverlessCpuBackend(SlotLogCpuBackend):
    """Measures only away from the process that made it, as a GPU cluster does when driven from a
    machine without a GPU; its baseline says which process timed it."""

    def __init__(self, target: Target, log_path: str, **options: Any):
        super().__init__(target, log_path, run_seconds=0.0, **options)
        self.made_in = os.getpid()

    def measure_available(self) -> tuple[bool, str]:
        if os.getpid() == self.made_in:
            return False, "no device in the process that runs forge"
        return True, ""

    def baselines(self, problem, cache_dir, *, seed: int, reps: int, timeout: float, **_: Any) -> list[Baseline]:
        return [Baseline("unfused", f"timed in pid {os.getpid()}", Measurement("ok", timings=[1.0]))]


class SlowerAtTheEndCpuBackend(CpuBackend):
    """CPU backend whose variants run `factor` times slower from the final re-measure on (a run
    with the final phase's inputs for the run seed `run_seed`); with `baselines_too`, the baselines
    timed after that are slower by the same factor, as on a host that slowed down, and without it
    they are not, as when only the search times were low draws. Every variant and baseline keeps the
    median of its first run as its time, with no spread: on a loaded host three repetitions of a
    0.1 ms kernel can have an interquartile range of many times their median, which the shift rule
    would rightly read as a tie whatever the factor. A test can so check what the tuner and the
    report do in each case without depending on this machine's noise. Measured in the process that
    runs forge (the local executor's device slot), so the state is plain attributes."""

    def __init__(self, target: Target, run_seed: int, factor: float, baselines_too: bool, fault_when_slow: str = "",
                 **options: Any):
        super().__init__(target, **options)
        self.run_seed, self.factor, self.baselines_too = run_seed, factor, baselines_too
        self.fault_when_slow = fault_when_slow    # the reason every baseline timed once slow fails with
        self.slow = False
        self.first: dict[str, float] = {}     # variant key or baseline name -> median of its first run

    def _steady(self, key: str, m: Measurement, slowed: bool) -> Measurement:
        if m.status == "ok" and m.timings:
            t = self.first.setdefault(key, statistics.median(m.timings))
            m.timings = [t * (self.factor if slowed and self.slow else 1.0)] * len(m.timings)
        return m

    def run(self, artifact, variant: Variant, **kwargs: Any) -> Measurement:
        from forge.tuner import input_seed

        self.slow = self.slow or kwargs["seed"] == input_seed(variant, self.run_seed, "final")
        return self._steady(variant.key(), super().run(artifact, variant, **kwargs), slowed=True)

    def baselines(self, problem, cache_dir, **kwargs: Any) -> list[Baseline]:
        bases = super().baselines(problem, cache_dir, **kwargs)
        for b in bases:
            self._steady(f"baseline:{b.name}", b.measurement, slowed=self.baselines_too)
            if self.slow and self.fault_when_slow:
                b.measurement = Measurement("runtime_error", self.fault_when_slow)
        return bases


class RunOrderCpuBackend(CpuBackend):
    """CPU backend that keeps (variant key, repetitions) of every run in `runs`, in the order they
    were measured, so a test can see how the re-measure takes turns. Runs are measured in the
    process that runs forge (the local executor's device slot), so a plain list sees them all."""

    def __init__(self, target: Target, **options: Any):
        super().__init__(target, **options)
        self.runs: list[tuple[str, int]] = []

    def run(self, artifact, variant: Variant, **kwargs: Any) -> Measurement:
        self.runs.append((variant.key(), kwargs["reps"]))
        return super().run(artifact, variant, **kwargs)


class CrashesWhenReMeasuredCpuBackend(CpuBackend):
    """CPU backend whose variants all run as usual in the search and fail with `reason` in the final
    re-measure (told apart by their repetitions: `final_reps` is split over runs of other sizes than
    `reps`), so a test sees what a finalist that fails only at the end becomes."""

    def __init__(self, target: Target, search_reps: int, reason: str = "killed by SIGSEGV", **options: Any):
        super().__init__(target, **options)
        self.search_reps, self.reason = search_reps, reason

    def run(self, artifact, variant: Variant, **kwargs: Any) -> Measurement:
        if kwargs["reps"] != self.search_reps:
            return Measurement("runtime_error", self.reason)
        return super().run(artifact, variant, **kwargs)


class BaselinesFailCpuBackend(CpuBackend):
    """CPU backend whose baselines fail with `reason`, or raise OSError(`reason`) with `raises`,
    while its variants run as usual, until a file named `healed` exists."""

    def __init__(self, target: Target, reason: str, healed: str, raises: bool = False, **options: Any):
        super().__init__(target, **options)
        self.reason, self.healed, self.raises = reason, healed, raises

    def baselines(self, problem, cache_dir, **kwargs: Any) -> list[Baseline]:  # noqa: ANN001
        if os.path.exists(self.healed):
            return super().baselines(problem, cache_dir, **kwargs)
        if self.raises:
            raise OSError(self.reason)
        return [Baseline("unfused", "unfused C sequence", Measurement("ok", "", timings=[1e-3] * 3)),
                Baseline("vendor", "torch", Measurement("runtime_error", self.reason))]


class LaterIsFasterCpuBackend(CpuBackend):
    """CPU backend on which each variant measured runs faster than every one before it (its time
    fixed at its first run, with no spread), so a longer search always finds a new best: a test of
    what an extended run does with it then depends on nothing of this machine's timing. Measured in
    the process that runs forge (the local executor's device slot), so the state is plain attributes."""

    def __init__(self, target: Target, **options: Any):
        super().__init__(target, **options)
        self.first: dict[str, float] = {}

    def _time(self, n: int) -> float:
        """The time of the n-th variant measured (from 0)."""
        return 1e-3 / (1 + n)

    def run(self, artifact, variant: Variant, **kwargs: Any) -> Measurement:
        m = super().run(artifact, variant, **kwargs)
        if m.status == "ok" and m.timings:
            t = self.first.setdefault(variant.key(), self._time(len(self.first)))
            m.timings = [t] * len(m.timings)
        return m


class LaterIsSlowerCpuBackend(LaterIsFasterCpuBackend):
    """The reverse: each variant measured runs slower than every one before it, so a search never
    improves on its first variant (a test of patience)."""

    def _time(self, n: int) -> float:
        return 1e-3 * (1 + n)


class DyingSlotCpuBackend(CpuBackend):
    """CPU backend whose measuring process dies (`os._exit`, as a node lost or a process killed for
    memory would) when it measures a variant whose config contains `once` — the first time only,
    a marker file in `marker_dir` remembering it across processes — or `always`, every time; and
    whose constraint check raises, away from the process that made it (in a Ray device slot), for
    a variant whose config contains `raises`. For the Ray executor only: in the local executor the
    measuring process is forge's own."""

    def __init__(self, target: Target, marker_dir: str, once: dict[str, Any], always: dict[str, Any],
                 raises: dict[str, Any] | None = None, **options: Any):
        super().__init__(target, **options)
        self.marker_dir, self.once, self.always = marker_dir, dict(once), dict(always)
        self.raises, self.made_in = dict(raises or {"__none__": 1}), os.getpid()

    def check(self, variant: Variant):
        if os.getpid() != self.made_in and matches(variant, self.raises):
            raise RuntimeError("check failed in the slot")
        return super().check(variant)

    def run(self, artifact, variant: Variant, **kwargs: Any) -> Measurement:
        marker = os.path.join(self.marker_dir, f"died-{variant.key()}")
        if matches(variant, self.always) or (matches(variant, self.once) and not os.path.exists(marker)):
            open(marker, "w").close()
            os._exit(1)
        return super().run(artifact, variant, **kwargs)


class HashTimedCpuBackend(CpuBackend):
    """The CPU target's space with no compiler and no kernel: a variant "runs" in `run_sleep`
    seconds and measures a time drawn from a hash of its config (1-2 ms), so tests of the search
    loop (budgets, resume, warm start, the bank) run in a fraction of a second per variant and see
    the same times every run. Variants whose config holds `fails` fail with a runtime error."""

    def __init__(self, target: Target, run_sleep: float = 0.0, fails: dict[str, Any] | None = None,
                 **options: Any):
        super().__init__(target, **options)
        self.run_sleep, self.fails = run_sleep, dict(fails or {})

    @staticmethod
    def time_of(config: dict[str, Any]) -> float:
        digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).digest()
        return 1e-3 * (1 + int.from_bytes(digest[:4], "little") / 2**32)

    def build(self, variant: Variant, cache_dir):  # noqa: ANN001, ANN201 - CpuBackend's signature
        return Artifact(variant.key(), "hash-" + variant.key()[:12], ok=True, path=os.devnull)

    def run(self, artifact, variant: Variant, **kwargs: Any):
        time.sleep(self.run_sleep)
        if self.fails and matches(variant, self.fails):
            return Measurement("runtime_error", "forge.testing: planted failure")
        return Measurement("ok", timings=[self.time_of(variant.config)] * kwargs["reps"],
                           extra={"correctness": "ok"})

    def baselines(self, problem, cache_dir, **kwargs: Any):  # noqa: ANN001, ANN201
        return [Baseline("unfused", "forge.testing: 5 ms", Measurement("ok", timings=[5e-3] * kwargs["reps"]))]

    def measurement_floor(self, problem, warmup: int, reps: int) -> tuple[float, str]:  # noqa: ANN001
        return 0.0, "no kernel runs"
