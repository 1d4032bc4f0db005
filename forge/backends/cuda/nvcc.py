"""nvcc driver: compile a generated variant to a cubin for the target's arch, cached by source hash.

Device-only `-cubin` (no host code) is the cheap path (cuda.md §3.4); ptxas -v output comes back
on stderr and is parsed into resources. A compile error keeps the compiler's message.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

NVCC_FLAGS = ["-O3", "-std=c++17", "-Xptxas", "-v", "-lineinfo"]


@lru_cache(maxsize=None)
def nvcc_path() -> str | None:
    env = os.environ.get("FORGE_NVCC")
    if env:
        return env
    found = shutil.which("nvcc")
    if found:
        return found
    for p in sorted(Path("/usr/local").glob("cuda*/bin/nvcc"), reverse=True):
        return str(p)
    return None


@lru_cache(maxsize=None)
def nvcc_version() -> str:
    nv = nvcc_path()
    if not nv:
        return "nvcc not found"
    out = subprocess.run([nv, "--version"], capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if "release" in l]
    return ("nvcc " + line[0].split("release", 1)[1].strip()) if line else "nvcc"


@dataclass
class CompileResult:
    ok: bool
    cubin: Path
    log: str          # ptxas -v output (stderr) or the compiler's error
    seconds: float
    cached: bool


def arch_flags(sm: str) -> list[str]:
    return [f"-arch={sm}"]


def compile_cubin(files: dict[str, str], main: str, sm: str, out_dir: Path, timeout: float = 300.0) -> CompileResult:
    """Write `files` into `out_dir` and build `kernel.cubin`; reuse it if it is already there."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cubin = out_dir / "kernel.cubin"
    log_file = out_dir / "ptxas.log"
    err_file = out_dir / "error.log"
    if cubin.exists() and log_file.exists():
        return CompileResult(True, cubin, log_file.read_text(), 0.0, True)
    if err_file.exists():
        return CompileResult(False, cubin, err_file.read_text(), 0.0, True)
    for name, text in files.items():
        (out_dir / name).write_text(text)
    nv = nvcc_path()
    if nv is None:
        return CompileResult(False, cubin, "nvcc not found (set FORGE_NVCC or put nvcc on PATH)", 0.0, False)
    cmd = [nv, "-cubin", *arch_flags(sm), *NVCC_FLAGS, "-I", str(out_dir), "-o", str(cubin) + ".tmp", str(out_dir / main)]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=out_dir)
    except subprocess.TimeoutExpired:
        return CompileResult(False, cubin, f"nvcc timed out after {timeout:.0f} s", time.perf_counter() - t0, False)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        msg = (r.stderr or r.stdout).strip()
        err_file.write_text(msg)
        return CompileResult(False, cubin, msg, dt, False)
    os.replace(str(cubin) + ".tmp", cubin)
    log_file.write_text(r.stderr)
    return CompileResult(True, cubin, r.stderr, dt, False)
