"""The standalone timing harness (cuda.md §6): built once per toolkit, driven by a spec file.

`build_harness(cache_dir)` compiles harness.cu with `-cudart static` (no libcuda at link time);
`run_plan(...)` writes inputs as raw little-endian files in the problem's dtype, writes the spec
from the generator's Plan, runs the harness under a timeout and returns its JSON line plus the
outputs as float32 arrays. On a machine without a GPU the harness prints a JSON error.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from forge.backends.child import dies_with_parent
from forge.backends.cuda.nvcc import nvcc_path, nvcc_version
from forge.generators.cuda.plan import Plan

SOURCE = Path(__file__).parent / "harness.cu"
# The L2 flush before every timed launch is a memset of max(this, 2 x the device's L2): 256 MiB, as
# FlashInfer-Bench and SOL-ExecBench flush, is about twice the largest L2 (cuda.md §5.2).
FLUSH_MIN_BYTES = 256 << 20


def flush_bytes(l2_bytes: int) -> int:
    """The harness's flush buffer on a device with this L2 (harness.cu, `flush 0`)."""
    return max(FLUSH_MIN_BYTES, 2 * l2_bytes)


def harness_path(cache_dir: Path) -> Path:
    h = hashlib.sha256(SOURCE.read_bytes() + nvcc_version().encode()).hexdigest()[:16]
    return Path(cache_dir) / "harness" / f"forge_harness_{h}"


def build_harness(cache_dir: Path, timeout: float = 300.0) -> tuple[Path | None, str]:
    """(path, "") once built (cached), or (None, compiler message)."""
    exe = harness_path(cache_dir)
    if exe.exists():
        return exe, ""
    nv = nvcc_path()
    if nv is None:
        return None, "nvcc not found"
    exe.parent.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_suffix(".tmp")
    r = subprocess.run([nv, "-O2", "-std=c++17", "-cudart", "static", "-o", str(tmp), str(SOURCE)],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        return None, (r.stderr or r.stdout).strip()
    tmp.replace(exe)
    return exe, ""


def to_bytes(x: np.ndarray, dtype: str) -> bytes:
    """float32 values (exact in `dtype`) -> raw little-endian bytes of `dtype`."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if dtype == "float32":
        return x.tobytes()
    if dtype == "float16":
        return x.astype("<f2").tobytes()
    if dtype == "bfloat16":
        return (x.view(np.uint32) >> 16).astype("<u2").tobytes()
    raise ValueError(dtype)


def from_bytes(raw: bytes, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "float32":
        return np.frombuffer(raw, "<f4").reshape(shape).copy()
    if dtype == "float16":
        return np.frombuffer(raw, "<f2").astype(np.float32).reshape(shape)
    if dtype == "bfloat16":
        return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
    raise ValueError(dtype)


def write_spec(plan: Plan, cubin: Path, work: Path, inputs: dict[str, np.ndarray], dtype: str, *,
               warmup: int, iters: int, trials: int, flush: int = 0) -> Path:
    text, files = spec_files(plan, cubin, work, inputs, dtype, warmup=warmup, iters=iters, trials=trials, flush=flush)
    for name, data in files.items():
        (work / name).write_bytes(data)
    spec = work / "spec.txt"
    spec.write_text(text)
    return spec


def spec_files(plan: Plan, cubin: Path, folder: Path, inputs: dict[str, np.ndarray], dtype: str, *,
               warmup: int, iters: int, trials: int, flush: int = 0) -> tuple[str, dict[str, bytes]]:
    """The harness spec (buffers and launches in order, paths under `folder`) and the input files
    it names, by file name."""
    lines = [f"cubin {cubin}", f"warmup {warmup}", f"iters {iters}", f"trials {trials}", f"flush {flush}",
             f"flush_min {FLUSH_MIN_BYTES}"]
    files = {}
    for b in plan.buffers:
        if b.kind == "in":
            data = to_bytes(inputs[b.name], dtype)
            if len(data) != b.nbytes:
                raise ValueError(f"buffer {b.name}: plan says {b.nbytes} B, input has {len(data)} B")
            files[f"{b.name}.bin"] = data
            lines.append(f"buffer {b.name} in {b.nbytes} {folder / (b.name + '.bin')}")
        elif b.kind == "out":
            lines.append(f"buffer {b.name} out {b.nbytes} {folder / (b.name + '.bin')}")
        else:
            lines.append(f"buffer {b.name} scratch {b.nbytes}")
    for l in plan.launches:
        lines.append(" ".join(["launch", l.kernel, *map(str, l.grid), *map(str, l.block), str(l.smem), *l.args]))
    return "\n".join(lines) + "\n", files


def run_harness(exe: Path, args: list[str], timeout: float) -> dict[str, Any]:
    """Run the harness; always returns a dict with `ok` (False with `stage`/`error` on failure)."""
    try:
        r = subprocess.run(dies_with_parent([str(exe), *args]), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "stage": "timeout", "error": f"harness exceeded {timeout:.0f} s"}
    for line in reversed(r.stdout.strip().splitlines()):
        try:
            out = json.loads(line)
            out["returncode"] = r.returncode
            return out
        except json.JSONDecodeError:
            continue
    return {"ok": False, "stage": "crash", "error": f"exit {r.returncode}: {(r.stderr or r.stdout)[-500:]}"}


def probe(cache_dir: Path) -> dict[str, Any]:
    """The device the harness sees, or why none is usable."""
    exe, err = build_harness(cache_dir)
    if exe is None:
        return {"ok": False, "stage": "build_harness", "error": err}
    return run_harness(exe, ["--probe"], timeout=60)


def read_outputs(plan: Plan, work: Path, dtype: str, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    return {b.name: from_bytes((work / f"{b.name}.bin").read_bytes(), dtype, shapes[b.name])
            for b in plan.buffers if b.kind == "out"}


def clean(work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
