"""AscendBackend: Ascend C variants generated, constrained, emulated on the CPU and ranked by the
pipe model (labelled modeled); measured with aclrtEvent when CANN and an NPU are present."""
from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any

from forge.backends.ascend import cann, emulate
from forge.backends.ascend.constraints import usage_summary
from forge.backends.ascend.hw import AscendHW
from forge.backends.ascend.unfused import VENDOR_TILES, unfused
from forge.backends.base import Artifact, Backend, Baseline, Measurement, Source
from forge.errors import ForgeInputError
from forge.generators.ascendc.base import PLANS, Plan, get_plan
from forge.ops import get_op
from forge.problem import Problem
from forge.report.progress import fmt_seconds
from forge.space import Space
from forge.targets import Target, all_targets
from forge.variant import Variant

EMU_TIMEOUT_S = 60.0


def other_soc_hint(error: str) -> str:
    """The launcher refuses an NPU of another SoC than the kernel was built for (host_main.cpp.j2):
    name the target that matches it, when one does."""
    found = re.search(r"forge: this NPU is (\S+), the kernel was built for (\S+)", error)
    if not found:
        return error
    same = [t.name for t in all_targets().values() if t.kind == "ascend" and t.details.get("soc_version") == found[1]]
    return (f"this NPU is {found[1]}, the kernel was built for {found[2]}"
            + (f": tune for it with --target {' or '.join(same)}" if same else
               f": no target describes {found[1]} (add one under forge/targets/data)"))


class AscendBackend(Backend):
    kind = "ascend"
    device_resource = "NPU"        # Ray's Ascend resource; it sets ASCEND_RT_VISIBLE_DEVICES (Ray 2.60 npu.py)

    def __init__(self, target: Target, measure: str = "auto", **_: Any):
        super().__init__(target, measure)
        self.hw = AscendHW(target)
        if measure == "device":
            ok, why = cann.available()
            if not ok:
                raise ForgeInputError("measure", f"device measurement requested but {why}")

    # -- plans and spaces --------------------------------------------------------------------
    def plan(self, problem: Problem) -> Plan:
        return get_plan(problem, self.hw)

    def supports(self, problem: Problem) -> str | None:
        if problem.op not in PLANS:
            return f"no Ascend C generator for {problem.op}"
        if problem.op == "attention":
            if self.hw.coupled:
                return f"{self.target.name} is a coupled-mode chip: the MIX AIC/AIV attention kernel needs split mode"
            if problem.dtype not in ("float16", "bfloat16"):
                return f"attention on Ascend takes float16/bfloat16 inputs (fp32 softmax inside), not {problem.dtype}"
            if problem.shape["D"] % 16:
                return f"D={problem.shape['D']} is not a multiple of 16 (cube fractal, ascend.md §1.3)"
        if problem.op == "matmul" and problem.dtype == "float32":
            return "matmul generator covers float16/bfloat16 inputs"
        if problem.dtype == "bfloat16" and not self.target.peak_flops.get("bfloat16"):
            return f"{self.target.name} has no bfloat16 support"
        return None

    def space(self, problem: Problem) -> Space:
        refusal = self.refusal(problem)
        if refusal:
            raise refusal
        return self.plan(problem).space()

    def resources(self, variant: Variant) -> dict[str, Any]:
        plan = self.plan(variant.problem)
        r = usage_summary(self.hw, plan.resources(dict(variant.config)))
        r["workspace_bytes"] = plan.workspace_bytes(variant.config)
        return r

    # -- code --------------------------------------------------------------------------------
    def generate(self, variant: Variant) -> Source:
        return self.plan(variant.problem).render(dict(variant.config))

    def build(self, variant: Variant, cache_dir: Path) -> Artifact:
        """The emulation build (g++ against the emulator headers) of the small same-tiling problem;
        with CANN present and measure != model, also the documented kernel-launch build."""
        plan = self.plan(variant.problem)
        cfg = dict(variant.config)
        t0 = time.time()
        src = plan.render(cfg)
        small_plan = plan.emulation_plan(cfg)
        small = small_plan.p
        emu_cfg = plan.emulation_config(cfg)
        small_src = small_plan.render(emu_cfg)
        res: dict[str, Any] = {"emulated_shape": small.shape, "emu_block_dim": small_plan.pipeline(emu_cfg).block_dim,
                               "emu_workspace": small_plan.workspace_bytes(emu_cfg)}
        lacking = emulate.missing_api(small_src.text)
        built = None if lacking else emulate.build({"kernel.cpp": small_src.text}, "kernel.cpp",
                                                   Path(cache_dir) / "ascend_emu", self.target)
        path = ""
        if lacking:
            res["emulator"] = f"emulator lacks {', '.join(lacking)}"
        elif built is None:
            res["emulator"] = emulate.emulator()[1]
        elif not built.ok:
            return Artifact(variant.key(), src.digest(), False, error=built.error[-4000:], toolchain="g++ (Ascend C emulator)",
                            build_seconds=time.time() - t0, resources=res)
        else:
            path = built.path
            res["emu_cached"] = built.cached
        ok_dev, _ = cann.available()
        if ok_dev and self.measure != "model":
            work = Path(cache_dir) / "ascend_npu" / src.digest()
            ok, err = cann.build(src.files, work, self.hw.soc_version)
            if not ok:
                return Artifact(variant.key(), src.digest(), False, error=err, toolchain="CANN ascendc",
                                build_seconds=time.time() - t0, resources=res)
            res["npu_dir"] = str(work)
        return Artifact(variant.key(), src.digest(), True, path=path, toolchain=self.toolchain(),
                        build_seconds=time.time() - t0, resources=res)

    def run(self, artifact: Artifact, variant: Variant, *, seed: int, warmup: int, reps: int,
            timeout: float) -> Measurement:
        if not artifact.ok:
            return Measurement("compile_error", artifact.error[:2000])
        plan = self.plan(variant.problem)
        cfg = dict(variant.config)
        res = artifact.resources
        extra: dict[str, Any] = {"emulated_shape": res.get("emulated_shape")}
        # 1. functional check on the CPU emulator (small shape, same config)
        if artifact.path:
            from forge.backends.ascend.emu import runner
            built = runner.CompileResult(True, artifact.path)
            meta = Path(artifact.path).parent / "meta.json"
            if meta.exists():
                import json
                built.kernel_type = json.loads(meta.read_text()).get("kernel_type", "")
            # the reduced problem is judged as the variant's own is (a bench case's benchmark criterion)
            small = dataclasses.replace(plan.emulation_problem(cfg), acceptance=variant.problem.acceptance)
            chk = emulate.run(built, small, int(res["emu_block_dim"]), int(res["emu_workspace"]),
                              seed, min(timeout, EMU_TIMEOUT_S))
            extra["emulation"] = chk.status
            if chk.status != "ok":
                return Measurement(chk.status, chk.reason, errors=chk.errors, time_kind="modeled", extra=extra)
            errors = chk.errors
        else:
            extra["emulation"] = f"not run ({res.get('emulator', 'no emulator binary')})"
            errors = {}
        # 2. the real NPU when present
        if res.get("npu_dir"):
            op = get_op(variant.problem.op)
            inputs = op.make_inputs(variant.problem, seed)
            out, times, err = cann.run(Path(res["npu_dir"]), inputs, variant.problem.dtype,
                                       op.output(variant.problem).shape, reps, warmup, timeout)
            if out is None:
                return Measurement("runtime_error", other_soc_hint(err), extra=extra)
            m = op.check(variant.problem, inputs, out, seed)
            if not m.ok:
                return Measurement("incorrect", m.reason, errors=m.as_dict(), extra=extra)
            return Measurement("ok", timings=times, errors=m.as_dict(), time_kind="measured", extra=extra)
        # 3. modeled time of the real shape
        r = plan.model(cfg)
        p = variant.problem
        op = get_op(p.op)
        roof = self.target.roofline_seconds(op.flops(p), op.min_bytes(p), p.dtype)
        extra.update(pipe_busy=r.busy, roofline_s=roof, roofline_fraction=round(roof / r.seconds, 4),
                     launch_head_s=r.head, measure_note=cann.available()[1] or "measure=model")
        return Measurement("ok", "time modeled (no NPU measurement)", timings=[r.seconds], errors=errors,
                           time_kind="modeled", extra=extra)

    def model(self, variant: Variant) -> float:
        return self.plan(variant.problem).model(dict(variant.config)).seconds

    def baselines(self, problem: Problem, cache_dir: Path, *, seed: int, reps: int, timeout: float,
                  warmup: int = 2, vendor: bool = True) -> list[Baseline]:
        ks = unfused(problem, self.hw)
        if not ks:
            return []
        total = sum(k.seconds for k in ks)
        if len(ks) > 1:
            label = f"unfused Ascend C sequence ({len(ks)} kernels, modeled): " + "; ".join(
                f"{k.label} {fmt_seconds(k.seconds)}" for k in ks)
        else:   # a matmul is one kernel already: its baseline is the op alone at a vendor-like tiling
            label = (f"the op alone, nothing to fuse: forge's own kernel at vendor-like tiles "
                     f"({', '.join(f'{k}={v}' for k, v in VENDOR_TILES.items())}), modeled, "
                     f"{fmt_seconds(ks[0].seconds)}")
        return [Baseline("unfused", label, Measurement("ok", "modeled", timings=[total], time_kind="modeled",
                                                        extra={"kernels": {k.label: k.seconds for k in ks}}))]

    def export_files(self, variant: Variant, seed: int) -> dict[str, str | bytes]:
        """The seeded inputs run.sh reads (in_<name>.bin, raw little-endian in the problem's dtype)."""
        p = variant.problem
        return {f"in_{name}.bin": cann.device_bytes(x, p.dtype)
                for name, x in get_op(p.op).make_inputs(p, seed).items()}

    def export_output(self, variant: Variant) -> tuple[str, str]:
        return f"out_{get_op(variant.problem.op).output(variant.problem).name}.bin", variant.problem.dtype

    def no_baseline_reason(self, problem: Problem, name: str) -> str:
        if name != "vendor":
            return super().no_baseline_reason(problem, name)
        return ("forge does not time CANN's own operators (aclnn), with or without an NPU: Ascend runs are "
                "ranked against the modeled unfused sequence only")

    def measure_available(self) -> tuple[bool, str]:
        if self.measure == "model":
            return False, "times are modeled: --measure model"
        return cann.available()

    def toolchain(self) -> str:
        ok, _ = cann.available()
        return "CANN ascendc (kernel launch)" if ok and self.measure != "model" else "g++ Ascend C emulator + pipe model"
