"""CudaBackend: generate CUDA C++ variants, compile them with nvcc here, enforce the post-compile
limits (spills, smem, occupancy from ptxas registers), then measure on a GPU or model without one.

`measure`: "device" always runs the harness, "model" never does, "auto" measures when the harness
sees a GPU. A modeled time is labelled `time_kind="modeled"`. Without a GPU each variant's
correctness is still checked where g++ with OpenMP is present (`host_check`): its config is
generated for a smaller problem with the same tiling (the generator's `emulation_shape`), run on
the CPU by host emulation (host.py) and compared with the float64 reference; a wrong variant is
recorded as incorrect. The extra's `correctness` says which was done.
"""
from __future__ import annotations

import dataclasses
import shutil
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from forge.backends.base import NOT_CHECKED, Artifact, Backend, Baseline, Measurement, Source
from forge.backends.cuda import harness as hx
from forge.backends.cuda import host
from forge.backends.cuda.arch import arch_of
from forge.backends.cuda.model import kernel_time, unfused_time
from forge.backends.cuda.nvcc import NVCC_FLAGS, arch_flags, compile_cubin, nvcc_path, nvcc_version
from forge.backends.cuda.occupancy import occupancy
from forge.backends.cuda.ptxas import parse_ptxas
from forge.errors import ForgeInputError
from forge.generators.cuda import Plan, for_op
from forge.ops import get_op
from forge.paths import cache_dir
from forge.problem import Problem
from forge.space import Space
from forge.targets import Target, all_targets
from forge.variant import Variant

# Inputs of the host check (any seed checks the same code) and how long its emulation may take:
# a reduced problem runs in seconds, a deadlocked barrier never finishes.
HOST_CHECK_SEED = 0
HOST_CHECK_TIMEOUT = 120.0


class CudaBackend(Backend):
    kind = "cuda"
    device_resource = "GPU"        # Ray sets CUDA_VISIBLE_DEVICES for the slot's process
    checks_on_host = True

    def __init__(self, target: Target, measure: str = "auto", allow_spills: bool = False,
                 host_check: bool = True, **_: Any):
        super().__init__(target, measure)
        self.arch = arch_of(target)
        self.allow_spills = allow_spills
        self.host_check = host_check
        self._gpu: tuple[bool, str] | None = None
        self._plans: dict[str, Plan] = {}

    def __getstate__(self) -> dict[str, Any]:
        # The GPU probe describes the machine that ran it: a copy sent to another process (a Ray
        # device slot on another node) probes its own.
        return {**self.__dict__, "_gpu": None}

    # -- space ------------------------------------------------------------------------------------
    def supports(self, problem: Problem) -> str | None:
        try:
            return for_op(problem.op).supports(problem)
        except ForgeInputError as e:
            return str(e)

    def space(self, problem: Problem) -> Space:
        refusal = self.refusal(problem)
        if refusal:
            raise refusal
        return for_op(problem.op).space(problem, self.arch)

    def device_overhead(self) -> tuple[int, str]:
        return hx.flush_bytes(self.arch.l2_bytes), "the timing harness's L2 flush buffer"

    def plan(self, variant: Variant) -> Plan:
        key = variant.key()
        if key not in self._plans:
            self._plans[key] = for_op(variant.problem.op).plan(variant.problem, variant.config, self.arch)
        return self._plans[key]

    def resources(self, variant: Variant) -> dict[str, Any]:
        est = dict(self.plan(variant).estimates)
        occ = occupancy(self.arch.limits, est["threads"], min(est["est_regs"], 255), 0, est["smem"])
        est["predicted_blocks_per_sm"] = occ.blocks_per_sm
        return est

    # -- code -------------------------------------------------------------------------------------
    def generate(self, variant: Variant) -> Source:
        pl = self.plan(variant)
        return Source(dict(pl.files), pl.main, "cuda")

    def flags(self) -> list[str]:
        return [*arch_flags(self.arch.sm), *NVCC_FLAGS]

    def toolchain(self) -> str:
        return nvcc_version()

    def build(self, variant: Variant, cache_dir: Path) -> Artifact:
        src = self.generate(variant)
        flags = self.flags()
        digest = src.digest(flags)
        res = compile_cubin(src.files, src.main, self.arch.sm, Path(cache_dir) / "cuda" / digest)
        art = Artifact(variant.key(), digest, res.ok, str(res.cubin) if res.ok else "", "" if res.ok else res.log,
                       nvcc_version(), flags, res.seconds, res.cached)
        if res.ok:
            art.resources = self.check_compiled(variant, res.log)
            if not art.resources["violations"] and not self._use_device()[0]:
                art.resources["host"] = self.host_check_variant(variant, Path(cache_dir) / "cuda_host")
        return art

    def emulation_problem(self, variant: Variant) -> tuple[Problem | None, str]:
        """The smaller problem the variant's config is checked on without a GPU, or why there is none."""
        p, c = variant.problem, variant.config
        shape = for_op(p.op).emulation_shape(p, c)
        # judged as the variant's own problem is (a bench case's benchmark criterion)
        small = dataclasses.replace(get_op(p.op).problem(shape, p.dtype, dict(p.attrs)), acceptance=p.acceptance)
        exempt = getattr(for_op(p.op), "PERFORMANCE_RULES", ())
        why = [r.reason(c) for r in for_op(p.op).space(small, self.arch).constraints
               if r.name not in exempt and not bool(np.all(r.ok(c)))]
        return (None, f"config not valid at the reduced shape {shape}: {why[0]}") if why else (small, "")

    def host_check_variant(self, variant: Variant, cache_dir: Path) -> dict[str, Any]:
        """The variant's output at its reduced shape, computed by host emulation and compared with
        the reference: {"shape", "status", "reason", "errors"}, or {"skipped": why}. Done with the
        build, in the build pool: without a GPU the one device slot would otherwise run every
        variant's emulation in turn."""
        ok, why = host.available()
        if not self.host_check or not ok:
            return {"skipped": "host_check off" if not self.host_check else why}
        p = variant.problem
        try:
            small, why = self.emulation_problem(variant)
            if small is None:
                return {"skipped": why}
            plan = for_op(p.op).plan(small, variant.config, self.arch)
            built = host.build(plan, cache_dir)
        except (ForgeInputError, ValueError) as e:
            return {"skipped": f"no reduced problem: {e}"}
        if not built.ok:   # a gap of the emulation (host_cuda.h), not of the kernel: nvcc built it
            return {"skipped": f"host emulation build failed: {built.error[-500:]}"}
        op = get_op(p.op)
        inputs = op.make_inputs(small, HOST_CHECK_SEED)
        work = cache_dir / "runs" / uuid.uuid4().hex[:12]
        try:
            res = host.run(built.exe, plan, inputs, p.dtype, work, HOST_CHECK_TIMEOUT)
            out = {"shape": dict(small.shape), "at": small.short()}
            if not res.ok:
                return {**out, "status": res.status, "reason": res.error, "errors": {}}
            metrics = op.check(small, inputs, res.output, seed=HOST_CHECK_SEED)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return {**out, "status": "ok" if metrics.ok else "incorrect", "reason": metrics.reason,
                "errors": metrics.as_dict()}

    def check_compiled(self, variant: Variant, ptxas_log: str) -> dict[str, Any]:
        """ptxas numbers + occupancy per kernel, and the violations that make the variant invalid."""
        pl = self.plan(variant)
        lim = self.arch.limits
        rep = parse_ptxas(ptxas_log)
        kernels: dict[str, Any] = {}
        violations: list[str] = []
        min_blocks = int(pl.estimates.get("min_blocks", 1))
        for i, launch in enumerate(pl.launches):
            k = rep.kernels.get(launch.kernel)
            if k is None:
                violations.append(f"build: no ptxas record for kernel {launch.kernel}")
                continue
            threads = launch.block[0] * launch.block[1] * launch.block[2]
            occ = occupancy(lim, threads, k.registers, k.smem, launch.smem, max(1, k.barriers))
            kernels[launch.kernel] = {**k.as_dict(), "dynamic_smem": launch.smem, "threads": threads,
                                      **{f"occ_{a}": b for a, b in occ.as_dict().items() if a != "limits"}}
            if k.spills and not self.allow_spills:
                violations.append(f"spills: {launch.kernel} spills {k.spill_stores} B stores + {k.spill_loads} B loads "
                                  f"at {k.registers} registers ({k.stack_frame} B stack frame)")
            total_smem = k.smem + launch.smem
            if total_smem > lim.smem_per_block_optin:
                violations.append(f"smem: {launch.kernel} {total_smem} B (static {k.smem} + dynamic {launch.smem}) "
                                  f"> {lim.smem_per_block_optin} B opt-in max")
            want = min_blocks if i == 0 else 1
            if occ.blocks_per_sm < want:
                violations.append(f"occupancy: {launch.kernel} {occ.blocks_per_sm} block(s)/SM < min_blocks {want} "
                                  f"(binding {'+'.join(occ.binding)}: {k.registers} regs x {threads} threads, "
                                  f"{occ.smem_per_block} B smem per block)")
        main = kernels.get(pl.launches[0].kernel, {})
        return {"kernels": kernels, "violations": violations, "regs": main.get("registers"),
                "spills": main.get("spill_stores", 0) + main.get("spill_loads", 0),
                "static_smem": main.get("smem"), "dynamic_smem": pl.launches[0].smem,
                "blocks_per_sm": main.get("occ_blocks_per_sm"), "occupancy": main.get("occ_occupancy"),
                "binding": main.get("occ_binding"), "arch": self.arch.sm}

    # -- run / model ------------------------------------------------------------------------------
    def measure_available(self) -> tuple[bool, str]:
        if self._gpu is None:
            if shutil.which("nvidia-smi") is None and not Path("/dev/nvidia0").exists():
                self._gpu = (False, "no NVIDIA GPU visible (no nvidia-smi on PATH, no /dev/nvidia0)")
            elif nvcc_path() is None:
                self._gpu = (False, "nvcc not found: cannot build the timing harness")
            else:
                info = hx.probe(cache_dir())
                self._gpu = self._matches(info) if info.get("ok") else \
                    (False, f"harness probe failed at {info.get('stage')}: {info.get('error')}")
        return self._gpu

    def _matches(self, probe: dict[str, Any]) -> tuple[bool, str]:
        """A GPU of another compute capability than the target's cannot run the target's kernels
        (they are built for its arch only), and its times would be labelled with the wrong target."""
        cc = str(probe.get("cc"))
        if cc == self.arch.limits.cc:
            return True, ""
        same = [t.name for t in all_targets().values()
                if t.kind == "cuda" and str(t.details.get("compute_capability")) == cc]
        return False, (f"the visible GPU is {probe.get('device')} (compute capability {cc}), not "
                       f"{self.target.name}'s {self.arch.limits.cc}"
                       + (f": tune for it with --target {' or '.join(same)}" if same else ""))

    def export_files(self, variant: Variant, seed: int) -> dict[str, str | bytes]:
        """The timing harness, its spec (buffers, then each launch with grid, block and dynamic
        shared memory, in order), the seeded inputs, and run.sh to build and run them on a GPU."""
        p = variant.problem
        spec, inputs = hx.spec_files(self.plan(variant), Path("kernel.cubin"), Path("."),
                                     get_op(p.op).make_inputs(p, seed), p.dtype, warmup=3, iters=10, trials=1)
        main = self.generate(variant).main
        run = "\n".join([
            "#!/bin/bash",
            f"# Build and time {p.short()} on a {self.target.name} ({self.arch.sm}); the harness prints one JSON",
            "# line with the times (ms) and writes each output buffer to <name>.bin (raw, the problem's dtype).",
            "set -e",
            'cd "$(dirname "$0")"',
            f"nvcc -cubin {' '.join(self.flags())} -I . -o kernel.cubin {main}",
            "nvcc -O2 -std=c++17 -cudart static -o forge_harness harness.cu",
            "./forge_harness spec.txt", ""])
        return {"harness.cu": hx.SOURCE.read_text(), "spec.txt": spec, "run.sh": run, **inputs}

    def no_baseline_reason(self, problem: Problem, name: str) -> str:
        if name != "vendor":
            return super().no_baseline_reason(problem, name)
        on_device, why = self._use_device()
        if on_device:
            return "PyTorch with CUDA did not run here (not installed, or its run failed), so no vendor kernel was timed"
        return f"the vendor kernels (PyTorch on the GPU) are timed only where a GPU measures ({why})"

    def _use_device(self) -> tuple[bool, str]:
        if self.measure == "model":
            return False, "measure=model"
        return self.measure_available()

    def model(self, variant: Variant) -> float:
        return kernel_time(self.arch, variant.problem, self.plan(variant).estimates)[0]

    def run(self, artifact: Artifact, variant: Variant, *, seed: int, warmup: int, reps: int,
            timeout: float) -> Measurement:
        if not artifact.ok:
            return Measurement("compile_error", artifact.error[-2000:])
        violations = artifact.resources.get("violations") or []
        if violations:
            return Measurement("invalid", "; ".join(violations))
        on_device, why = self._use_device()
        if not on_device:
            if self.measure == "device":
                return Measurement("runtime_error", f"measure=device but {why}")
            t, parts = kernel_time(self.arch, variant.problem, self.plan(variant).estimates, artifact.resources.get("regs"))
            if t == float("inf"):
                return Measurement("invalid", f"occupancy: {parts['reason']}")
            chk = artifact.resources.get("host") or {"skipped": "not built"}
            if "skipped" in chk:
                parts["correctness"] = f"{NOT_CHECKED}: modeled time, no GPU run ({why}; no host check: {chk['skipped']})"
                return Measurement("ok", timings=[t], time_kind="modeled", extra=parts)
            parts["correctness"] = f"checked on the CPU by host emulation at {chk['at']} (same config); time modeled"
            if chk["status"] != "ok":
                return Measurement(chk["status"], f"host emulation at {chk['at']}: {chk['reason']}",
                                   [t] if chk["status"] == "incorrect" else [], chk["errors"], "modeled", parts)
            return Measurement("ok", "", [t], chk["errors"], "modeled", parts)
        return self._run_device(artifact, variant, seed=seed, warmup=warmup, reps=reps, timeout=timeout)

    def _run_device(self, artifact: Artifact, variant: Variant, *, seed: int, warmup: int, reps: int,
                    timeout: float) -> Measurement:
        p = variant.problem
        op = get_op(p.op)
        pl = self.plan(variant)
        cache = Path(artifact.path).parent.parent.parent if artifact.path else cache_dir()
        exe, err = hx.build_harness(cache)
        if exe is None:
            return Measurement("runtime_error", f"harness build failed: {err[-1000:]}")
        work = cache / "runs" / uuid.uuid4().hex[:12]
        work.mkdir(parents=True)
        try:
            inputs = op.make_inputs(p, seed)
            spec = hx.write_spec(pl, Path(artifact.path), work, inputs, p.dtype, warmup=warmup,
                                 iters=max(1, reps), trials=1)
            out = hx.run_harness(exe, [str(spec)], timeout)
            if not out.get("ok"):
                status = "timeout" if out.get("stage") == "timeout" else "runtime_error"
                return Measurement(status, f"{out.get('stage')}: {out.get('error')}")
            spec_out = op.output(p)
            got = hx.read_outputs(pl, work, p.dtype, {spec_out.name: spec_out.shape})[spec_out.name]
            metrics = op.check(p, inputs, got, seed=seed)
            times = [ms * 1e-3 for ms in out.pop("times_ms", [])]
            extra = {k: v for k, v in out.items() if k != "returncode"}
            if not metrics.ok:
                return Measurement("incorrect", metrics.reason, times, metrics.as_dict(), "measured", extra)
            return Measurement("ok", "", times, metrics.as_dict(), "measured", extra)
        finally:
            hx.clean(work)

    # -- baselines --------------------------------------------------------------------------------
    def baselines(self, problem: Problem, cache_dir: Path, *, seed: int, reps: int, timeout: float,
                  warmup: int = 2, vendor: bool = True) -> list[Baseline]:  # torch_ref warms up on its own
        t, steps = unfused_time(self.arch, problem)
        if len(steps) > 1:
            label = f"unfused sequence ({len(steps)} kernels, modeled roofline)"
        else:   # a matmul: one kernel already, so its baseline is an ideal kernel, not a sequence
            label = ("the op alone, nothing to fuse: an ideal kernel at the achievable roofline (modeled), so "
                     "× unfused reads as the fraction of it reached")
        out = [Baseline("unfused", label,
                        Measurement("ok", timings=[t], time_kind="modeled", extra={"steps": steps}))]
        on_device, _ = self._use_device()
        if on_device and vendor:
            from forge.backends.cuda.torch_ref import measure_torch
            for name, label, m in measure_torch(problem, seed=seed, reps=reps, timeout=timeout):
                out.append(Baseline(name, label, m))
        return out
