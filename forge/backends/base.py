"""The Backend protocol: check, generate, build, run, model (ARCHITECTURE.md, "Contracts").

- `check` is pure and fast (no compiler): verdict, reasons with numbers, resources.
- `build` may run a compiler; it is cached by source hash.
- `run` executes in an isolated process with a timeout, into NaN-poisoned outputs, checks
  correctness against the float64 reference and returns all timings.
- `model` exists for every target and is always labelled modeled.
"""
from __future__ import annotations

import hashlib
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.errors import ForgeInputError, allowed_list
from forge.problem import Problem
from forge.space import Space
from forge.targets import Target
from forge.variant import Variant

STATUSES = ("ok", "invalid", "compile_error", "runtime_error", "timeout", "incorrect")
# auto: measure when the hardware is here, model otherwise; model: never run; device: measure or fail.
MEASURE_MODES = ("auto", "model", "device")
# The baselines every leaderboard has a column for: the unfused small-operator sequence and the vendor's kernel.
BASELINE_NAMES = ("unfused", "vendor")


@dataclass
class Verdict:
    ok: bool
    reasons: list[str] = field(default_factory=list)
    resources: dict[str, Any] = field(default_factory=dict)


@dataclass
class Source:
    """Generated files of one variant; `main` names the file holding the kernel."""

    files: dict[str, str]
    main: str
    language: str  # "c", "cuda", "ascendc"

    def digest(self, flags: list[str] | tuple[str, ...] = ()) -> str:
        h = hashlib.sha256()
        for name in sorted(self.files):
            h.update(name.encode())
            h.update(self.files[name].encode())
        h.update(" ".join(flags).encode())
        return h.hexdigest()[:20]

    @property
    def text(self) -> str:
        return self.files[self.main]


@dataclass
class Artifact:
    """A built variant. `ok=False` carries the compiler's message in `error`."""

    variant_key: str
    source_hash: str
    ok: bool
    path: str = ""
    error: str = ""
    toolchain: str = ""
    flags: list[str] = field(default_factory=list)
    build_seconds: float = 0.0
    cached: bool = False
    resources: dict[str, Any] = field(default_factory=dict)


# How `extra["correctness"]` begins for a variant whose output nothing checked (nothing ran, or the
# host check was off): such a variant is no answer for the bank and counts as never run in a bench.
NOT_CHECKED = "not checked"


def unchecked(extra: dict[str, Any] | None) -> bool:
    return str((extra or {}).get("correctness", "")).startswith(NOT_CHECKED)


@dataclass
class Measurement:
    """Outcome of running (or modeling) one variant."""

    status: str
    reason: str = ""
    timings: list[float] = field(default_factory=list)  # seconds, every repetition
    errors: dict[str, Any] = field(default_factory=dict)
    time_kind: str = "measured"                          # "measured" | "modeled"
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        if self.time_kind not in ("measured", "modeled"):
            raise ValueError(f"unknown time kind {self.time_kind!r}")


@dataclass
class Baseline:
    """A reference implementation the fused kernel is compared with."""

    name: str            # "unfused" | "vendor"
    label: str           # e.g. "unfused C sequence (4 kernels)", "torch SDPA"
    measurement: Measurement
    host: str = ""       # where it was timed, set by the executor (a Ray slot's node, not the driver)


class Backend(ABC):
    """One target family. Instances are cheap and picklable (executors ship them to workers)."""

    kind: str = ""
    # True when `run` times on this machine's own CPU: executors then never compile beside it.
    measures_on_host: bool = False
    # Ray's resource name for one of the devices `run` measures on: a device slot of the Ray
    # executor reserves one, and Ray makes only that device visible to it.
    device_resource: str | None = None
    # Whether `--no-host-check` means anything here: CUDA without a GPU checks its variants by a
    # host build that the flag turns off (Ascend's emulator check and the CPU's own are always run)
    checks_on_host: bool = False

    def __init__(self, target: Target, measure: str = "auto"):
        if measure not in MEASURE_MODES:
            raise ForgeInputError("measure", f"{measure!r} not allowed; {allowed_list(measure, MEASURE_MODES)}")
        self.target = target
        self.measure = measure

    # -- search space and constraints -------------------------------------------------------
    @abstractmethod
    def space(self, problem: Problem) -> Space:
        """Performance parameters and hard constraints for this problem on this target."""

    def supports(self, problem: Problem) -> str | None:
        """None when the problem can be tuned here, else the reason it cannot."""
        return None

    def dtypes_taken(self, problem: Problem) -> list[str]:
        """The op's other dtypes this target takes the problem in: a config written for one target
        (float32 on the CPU) is often reused with `--target` for another (attention on a GPU takes
        float16/bfloat16), and the fix is then one flag."""
        from dataclasses import replace

        from forge.ops import get_op
        others = []
        for dtype in get_op(problem.op).dtypes:
            if dtype != problem.dtype:
                try:
                    if self.supports(replace(problem, dtype=dtype)) is None:
                        others.append(dtype)
                except ForgeInputError:
                    pass
        return others

    def refusal(self, problem: Problem) -> ForgeInputError | None:
        """The input error for a problem this target does not take, naming what to change: the
        dtype where another dtype is taken, the dimension a reason is about ("D=72 is not a
        multiple of 16" names shape.D), else the op."""
        why = self.supports(problem)
        if not why:
            return None
        text = f"{problem.short()} is not supported on {self.target.name}: {why}"
        others = self.dtypes_taken(problem)
        if others:
            return ForgeInputError("dtype", f"{text}; allowed there: {', '.join(others)}")
        dim = why.split("=", 1)[0]
        return ForgeInputError(f"shape.{dim}" if dim in problem.shape else "op", text)

    def too_big(self, problem: Problem, here: bool = True) -> str | None:
        """None when the problem's data fit in the memory they are run in, else why: a shape a digit
        too long would otherwise fail every variant, one by one. `here`: whether the variants run
        on this machine (the local executor); a Ray node answers for its own host memory.

        Here: the target device's memory (`details.memory_bytes`), measured or modeled and on any
        executor, since a time for a problem the device cannot hold would describe nothing."""
        have = self.target.details.get("memory_bytes")
        if not have or not self.device_resource:
            return None
        from forge.ops import get_op
        from forge.ops.base import DTYPE_BYTES

        op = get_op(problem.op)
        n = sum(math.prod(s.shape) for s in op.inputs(problem)) + math.prod(op.output(problem).shape)
        extra, extra_is = self.device_overhead()
        need = n * DTYPE_BYTES[problem.dtype] + extra
        if need <= have:
            return None
        return (f"{problem.short()} needs about {gib(need)} of {self.device_resource} memory (inputs and output "
                f"in {problem.dtype}{', and ' + extra_is if extra else ''}); the {self.target.name} target has "
                f"{gib(have)}")

    def measurement_floor(self, problem: Problem, warmup: int, reps: int) -> tuple[float, str]:
        """The least time one measured run of a variant takes, and what it is made of: every call
        (the checked one, the warm-ups, the timed repetitions) at the problem's roofline bound. A
        backend whose harness does more between calls adds it."""
        from forge.ops import get_op
        from forge.report.progress import fmt_seconds

        op = get_op(problem.op)
        roof = self.target.roofline_seconds(op.flops(problem), op.min_bytes(problem), problem.dtype)
        calls = 1 + warmup + reps
        return calls * roof, f"{calls} calls at its roofline bound of {fmt_seconds(roof)}"

    def device_overhead(self) -> tuple[int, str]:
        """Device memory a measurement takes beyond the problem's data, and what it is."""
        return 0, ""

    def check(self, variant: Variant) -> Verdict:
        sp = self.space(variant.problem)
        reasons = sp.check(variant.config)
        return Verdict(not reasons, reasons, self.resources(variant))

    def resources(self, variant: Variant) -> dict[str, Any]:
        return {}

    # -- code -------------------------------------------------------------------------------
    @abstractmethod
    def generate(self, variant: Variant) -> Source:
        """The kernel source (config at the top) and whatever files building it needs."""

    @abstractmethod
    def build(self, variant: Variant, cache_dir: Path) -> Artifact:
        """Compile (cached by source hash)."""

    @abstractmethod
    def run(self, artifact: Artifact, variant: Variant, *, seed: int, warmup: int, reps: int,
            timeout: float) -> Measurement:
        """Check correctness on fresh inputs from `seed` and time the variant."""

    @abstractmethod
    def model(self, variant: Variant) -> float:
        """Modeled seconds (always labelled modeled)."""

    # -- baselines and measurement availability ---------------------------------------------
    def baselines(self, problem: Problem, cache_dir: Path, *, seed: int, reps: int,
                  timeout: float, warmup: int = 2, vendor: bool = True) -> list[Baseline]:
        """The unfused sequence and, unless `vendor` is False, the vendor's kernel, timed (`reps`
        after `warmup` calls, the run's own settings) or modeled, as the variants are."""
        return []

    def export_files(self, variant: Variant, seed: int) -> dict[str, str | bytes]:
        """Files beside the generated source that build and run the variant on the device with the
        inputs forge checks it on (`forge show --export`): a build script, a launch spec, inputs."""
        return {}

    def export_output(self, variant: Variant) -> tuple[str, str]:
        """(file, encoding) of the output the exported run.sh writes: raw little-endian values in
        the problem's dtype unless the backend says otherwise."""
        from forge.ops import get_op

        return f"{get_op(variant.problem.op).output(variant.problem).name}.bin", variant.problem.dtype

    def no_baseline_reason(self, problem: Problem, name: str) -> str:
        """Why a run here may record no `name` baseline ("unfused" or "vendor"): the report says it
        where that column is empty."""
        return f"forge times no {name} baseline on {self.target.name}"

    def measure_available(self) -> tuple[bool, str]:
        """(True, "") when `run` measures on real hardware here, else (False, why)."""
        return True, ""

    def toolchain(self) -> str:
        return ""


def gib(n: int) -> str:
    """A byte count as a user reads memory sizes."""
    return f"{n / 1024 ** 3:,.1f} GiB"
