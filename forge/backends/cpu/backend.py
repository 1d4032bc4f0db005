"""CpuBackend: generated C/OpenMP kernels, built with the system compiler, measured in a subprocess.

This is forge's always-available, measured target: `run` times real executions
(time_kind="measured"); `model` is a roofline estimate that callers label modeled.
"""
from __future__ import annotations

import math
import shutil
from statistics import median
from pathlib import Path
from typing import Any

import numpy as np

from forge.backends.base import NOT_CHECKED, Artifact, Backend, Baseline, Measurement, Source, gib
from forge.backends.cpu import hwinfo
from forge.backends.cpu.build import build_source, compiler_version
from forge.backends.cpu.runner import run_executable
from forge.backends.cpu.vendor import LABELS as VENDOR_LABELS, measure_vendor
from forge.generators import c as cgen
from forge.ops import get_op
from forge.problem import Problem
from forge.space import Space
from forge.targets import Target
from forge.variant import Variant



class CpuBackend(Backend):
    kind = "cpu"
    measures_on_host = True

    def __init__(self, target: Target, measure: str = "auto", **_: Any):
        super().__init__(target, measure)
        self.compiler: str = target.details.get("compiler", "cc")
        self.flags: list[str] = list(target.details.get("flags", ["-O3"]))

    # -- space ------------------------------------------------------------------------------
    def space(self, problem: Problem) -> Space:
        return cgen.cpu_space(problem, self.target)

    def supports(self, problem: Problem) -> str | None:
        if problem.op not in cgen.spaces.SPACES:
            return f"no CPU generator for {problem.op!r} (have: {', '.join(cgen.spaces.SPACES)})"
        return None

    def too_big(self, problem: Problem, here: bool = True) -> str | None:
        if self.measure == "model" or not here:   # nothing is run, or not on this machine
            return None
        op = get_op(problem.op)
        n_in = sum(math.prod(s.shape) for s in op.inputs(problem))
        n_out = math.prod(op.output(problem).shape)
        # float32 exchange: the inputs held by forge and by the kernel, the output by the kernel and
        # by forge, then again as the float64 copy the check compares (runner.run_executable).
        need = cgen.FLOAT * (2 * n_in + 4 * n_out)
        have = hwinfo.available_memory_bytes()
        if have is None or need <= have:
            return None
        return (f"{problem.short()} needs about {gib(need)} of memory to run and check each variant "
                f"(inputs and output in float32, held by forge and by the kernel); this machine has "
                f"{gib(have)} available")

    def resources(self, variant: Variant) -> dict[str, Any]:
        p, c = variant.problem, variant.config
        if p.op == "attention":
            floats = cgen.spaces.attention_scratch_floats(p, c)
        elif p.op == "matmul":
            floats = cgen.spaces.matmul_scratch_floats(c)
        else:
            return {"threads": c.get("threads")}
        cached = {"K tile", "V tile"}  # read in place from the inputs, counted only in the L2 working set
        scratch = sum(int(v) for k, v in floats.items() if k not in cached)
        return {"scratch_bytes_per_thread": int(scratch * cgen.FLOAT),
                "l2_working_set_bytes": int(sum(int(v) for v in floats.values()) * cgen.FLOAT),
                "l2_bytes": hwinfo.cache_bytes(self.target, 2), "threads": c.get("threads")}

    # -- code -------------------------------------------------------------------------------
    def _source(self, problem: Problem, kernel: str) -> Source:
        return Source({"kernel.c": kernel, "harness.c": cgen.harness(problem)}, "kernel.c", "c")

    def generate(self, variant: Variant) -> Source:
        return self._source(variant.problem, cgen.generate(variant.problem, variant.config, self.target))

    def build(self, variant: Variant, cache_dir: Path) -> Artifact:
        return build_source(self.generate(variant), variant.key(), Path(cache_dir), self.compiler, self.flags)

    def _flush_bytes(self) -> int:
        return 2 * hwinfo.cache_bytes(self.target, 3)

    def measurement_floor(self, problem: Problem, warmup: int, reps: int) -> tuple[float, str]:
        """The calls, and before each timed one the harness's cache flush: a pass over twice the
        last-level cache, at least its size over the memory bandwidth. On a host reporting a large
        L3 the flushes alone can outlast a short --timeout."""
        floor, parts = super().measurement_floor(problem, warmup, reps)
        bandwidth = self.target.memory_bandwidth
        if not bandwidth:
            return floor, parts
        flush = self._flush_bytes()
        return (floor + reps * flush / bandwidth,
                f"{parts}, and a cache flush over {gib(flush)} before each of the {reps} timed ones")

    def run(self, artifact: Artifact, variant: Variant, *, seed: int, warmup: int, reps: int,
            timeout: float) -> Measurement:
        if not artifact.ok:
            return Measurement("compile_error", artifact.error)
        if self.measure == "model":
            # nothing ran, so nothing checked the output: the report, bench board and bank read this
            return Measurement("ok", timings=[self.model(variant)], time_kind="modeled",
                               extra={"correctness": f"{NOT_CHECKED}: --measure model (compiled, not run)"})
        m = run_executable(artifact.path, variant.problem, seed=seed, warmup=warmup, reps=reps,
                           timeout=timeout, flush_bytes=self._flush_bytes())
        m.extra.setdefault("threads", variant.config.get("threads"))
        return m

    def model(self, variant: Variant) -> float:
        """Roofline: FLOPs at the peak share of the threads and vector width used, or compulsory bytes."""
        p, c = variant.problem, variant.config
        op = get_op(p.op)
        share = min(1.0, c.get("threads", 1) / hwinfo.cores(self.target))
        lanes = self.target.details.get("simd_lanes_fp32", 16)
        share *= min(1.0, c.get("vec", lanes) / lanes)
        compute = op.flops(p) / (self.target.peak("float32") * share) if self.target.peak("float32") else 0.0
        memory = op.min_bytes(p) / self.target.memory_bandwidth if self.target.memory_bandwidth else 0.0
        return max(compute, memory)

    # -- baselines --------------------------------------------------------------------------
    def unfused_artifact(self, problem: Problem, cache_dir: Path, threads: int | None = None) -> Artifact:
        """The unfused baseline sequence, built (cached by source hash like every variant)."""
        threads = threads or hwinfo.cores(self.target)
        src = self._source(problem, cgen.generate_unfused(problem, threads, self.target))
        return build_source(src, f"unfused:{problem.digest()}", Path(cache_dir), self.compiler, self.flags)

    def baselines(self, problem: Problem, cache_dir: Path, *, seed: int, reps: int, timeout: float,
                  warmup: int = 2, vendor: bool = True) -> list[Baseline]:
        """The unfused sequence and torch, each at its better thread count (1 or all cores), as the
        tuned kernel also chooses its threads."""
        if self.measure == "model":
            return []
        counts = sorted({1, hwinfo.cores(self.target)})
        timed = [self._unfused_at(problem, cache_dir, threads, seed=seed, reps=reps, timeout=timeout, warmup=warmup)
                 for threads in counts]
        if vendor:
            timed += measure_vendor(problem, seed=seed, warmup=warmup, reps=reps, timeout=timeout, threads=counts,
                                    flush_bytes=self._flush_bytes()) or []
        best: dict[str, Baseline] = {}
        for b in timed:
            b.label = f"{b.label}, {b.measurement.extra.get('threads', '?')} thread(s)"
            old = best.get(b.name)
            if old is None or (b.measurement.status == "ok" and (
                    old.measurement.status != "ok" or median(b.measurement.timings) < median(old.measurement.timings))):
                best[b.name] = b
        return list(best.values())

    def _unfused_at(self, problem: Problem, cache_dir: Path, threads: int, *, seed: int, reps: int,
                    timeout: float, warmup: int) -> Baseline:
        art = self.unfused_artifact(problem, cache_dir, threads)
        if art.ok:
            m = run_executable(art.path, problem, seed=seed, warmup=warmup, reps=reps, timeout=timeout,
                               flush_bytes=self._flush_bytes())
        else:
            m = Measurement("compile_error", art.error)
        m.extra.update({"threads": threads, "steps": get_op(problem.op).unfused_steps(problem),
                        "source_hash": art.source_hash})
        return Baseline("unfused", cgen.unfused_label(problem), m)

    def export_files(self, variant: Variant, seed: int) -> dict[str, str | bytes]:
        """The seeded inputs (float32, in the op's input order, as the harness reads them) and
        run.sh: the compiler and flags forge builds with, then one timed run."""
        p = variant.problem
        op = get_op(p.op)
        inputs = op.make_inputs(p, seed)
        data = b"".join(np.ascontiguousarray(inputs[s.name], dtype=np.float32).tobytes() for s in op.inputs(p))
        run = "\n".join([
            "#!/bin/bash",
            f"# Build and time {p.short()} as forge does: harness.c reads inputs.bin, writes output.bin",
            "# (float32) and prints the time of each repetition; arguments: inputs output warmup reps",
            "# flush-bytes (the last-level cache is flushed between repetitions with that many bytes).",
            "set -e",
            'cd "$(dirname "$0")"',
            f"{self.compiler} {' '.join(self.flags)} -o kernel kernel.c harness.c -lm",
            f"./kernel inputs.bin output.bin 2 10 {self._flush_bytes()}", ""])
        return {"inputs.bin": data, "run.sh": run}

    def export_output(self, variant: Variant) -> tuple[str, str]:
        return "output.bin", "float32"

    def no_baseline_reason(self, problem: Problem, name: str) -> str:
        if self.measure == "model":
            return "nothing is run with --measure model, so no baseline is timed"
        if name != "vendor":
            return super().no_baseline_reason(problem, name)
        if problem.op not in VENDOR_LABELS:
            return f"PyTorch, the CPU's vendor library here, has no kernel for {problem.op}"
        return ("the vendor kernel (PyTorch on this CPU) is timed only when torch is installed "
                "(pip install -e '.[torch]')")

    def measure_available(self) -> tuple[bool, str]:
        if self.measure == "model":
            return False, "measure=model was asked for"
        if shutil.which(self.compiler) is None:
            return False, f"C compiler {self.compiler!r} not found on PATH"
        return True, ""

    def toolchain(self) -> str:
        return f"{compiler_version(self.compiler)} {' '.join(self.flags)}"

