"""Functional check of a variant on the CPU emulator (emu/runner.py, owned by the emulator).

The variant is regenerated for a small problem with the same config and tiling structure
(`Plan.emulation_problem`), compiled with g++ against the emulation headers and run on every AIC
and AIV block; its output is compared with the float64 reference at the dtype's tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from forge.ops import get_op
from forge.problem import Problem


@dataclass
class EmuCheck:
    status: str                     # ok | incorrect | runtime_error | compile_error | timeout | skipped
    reason: str = ""
    problem: Problem | None = None
    errors: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def emulator() -> tuple[Any, str]:
    """(runner module, "") or (None, why it is unavailable)."""
    try:
        from forge.backends.ascend.emu import runner
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return None, f"CPU emulator not importable: {exc}"
    return runner, ""


CUBE_API = ("Nd2NzParams", "LoadData", "Mmad", "Fixpipe", "REGIST_MATMUL_OBJ")


def missing_api(source: str) -> list[str]:
    """Cube API names the kernel uses that the emulator headers do not mention yet."""
    runner, _ = emulator()
    if runner is None:
        return []
    text = "".join(f.read_text(errors="ignore") for f in Path(runner.INCLUDE_DIR).rglob("*.h"))
    return [n for n in CUBE_API if n in source and n not in text]


def build(source_files: dict[str, str], main: str, cache_dir: Path, target: Any) -> Any:
    runner, why = emulator()
    if runner is None:
        return None
    return runner.compile_kernel(source_files, main, {}, cache_dir, target=target)


def run(built: Any, problem: Problem, block_dim: int, workspace: int, seed: int, timeout: float) -> EmuCheck:
    runner, why = emulator()
    if runner is None or built is None:
        return EmuCheck("skipped", why or "not built", problem)
    if not built.ok:
        return EmuCheck("compile_error", built.error[:2000], problem)
    op = get_op(problem.op)
    inputs = op.make_inputs(problem, seed)
    bf16 = problem.dtype == "bfloat16"

    def dev(x: np.ndarray) -> np.ndarray:
        if bf16:
            return runner.f32_to_bf16_bits(x)
        return x.astype(np.float16) if problem.dtype == "float16" else x.astype(np.float32)

    spec = op.output(problem)
    args = [s.name for s in op.inputs(problem)] + [spec.name, "workspace", "tiling"]
    res = runner.run_kernel(built, {k: dev(v) for k, v in inputs.items()},
                            {spec.name: (spec.shape, problem.dtype)}, tiling=b"\0" * 32, block_dim=block_dim,
                            timeout=timeout, args=args, workspace_bytes=max(int(workspace), 32))
    if not res.ok:
        kind = "timeout" if res.error_kind == "timeout" else "runtime_error"
        return EmuCheck(kind, f"emulator: {res.error_kind}: {res.error_detail}", problem, seconds=res.seconds)
    out = res.outputs[spec.name]
    out = runner.bf16_bits_to_f32(out) if bf16 else out.astype(np.float32)
    m = op.check(problem, inputs, out, seed)
    return EmuCheck("ok" if m.ok else "incorrect", m.reason, problem, m.as_dict(), res.seconds)
