"""The real NPU path (ascend.md §4): availability check, documented build flow, aclrtEvent timing.

Written against the documentation; it cannot be exercised on a machine without CANN and an NPU.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

from forge.backends.child import dies_with_parent


def available() -> tuple[bool, str]:
    """(True, "") when CANN and an NPU are usable here, else (False, one line why)."""
    home = os.environ.get("ASCEND_HOME_PATH")
    if not home:
        return False, "times are modeled: ASCEND_HOME_PATH is not set (no CANN toolkit, ascend.md §4.1)"
    root = Path(home)
    cmake_dirs = [root / "compiler/tikcpp/ascendc_kernel_cmake", root / "tools/tikcpp/ascendc_kernel_cmake"]
    if not any(d.is_dir() for d in cmake_dirs):
        return False, f"times are modeled: no ascendc_kernel_cmake under {home} (ascend.md §4.2)"
    if not shutil.which("cmake"):
        return False, "times are modeled: cmake not found for the kernel-launch build (ascend.md §4.2)"
    if not (Path("/dev/davinci0").exists() or Path("/dev/davinci_manager").exists()):
        return False, "times are modeled: CANN found but no NPU device (/dev/davinci*)"
    return True, ""


def build(files: dict[str, str], workdir: Path, soc: str, timeout: float = 900.0) -> tuple[bool, str]:
    workdir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (workdir / name).write_text(text)
    cmds = [["cmake", "-B", "build", f"-DSOC_VERSION={soc}", "-DRUN_MODE=npu"], ["cmake", "--build", "build", "-j"]]
    for cmd in cmds:
        r = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout)
        if r.returncode:
            return False, (r.stdout + r.stderr)[-4000:]
    return True, ""


def run(workdir: Path, inputs: dict[str, np.ndarray], dtype: str, out_shape: tuple[int, ...], reps: int,
        warmup: int, timeout: float) -> tuple[np.ndarray | None, list[float], str]:
    """Write inputs, run the generated launcher, read the output and the aclrtEvent times (s)."""
    for name, x in inputs.items():
        _dev(x, dtype).tofile(workdir / f"in_{name}.bin")
    r = subprocess.run(dies_with_parent(["./build/forge_main", str(reps), str(warmup)]), cwd=workdir, capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode:
        return None, [], (r.stdout + r.stderr)[-2000:]
    out_file = next(workdir.glob("out_*.bin"))
    raw = np.fromfile(out_file, dtype=np.uint16 if dtype in ("float16", "bfloat16") else np.float32)
    if dtype == "float16":
        out = raw.view(np.float16).astype(np.float32)
    elif dtype == "bfloat16":
        out = (raw.astype(np.uint32) << 16).view(np.float32)
    else:
        out = raw
    times = [float(t) for t in (workdir / "times.txt").read_text().split()]
    return out.reshape(out_shape), times, ""


def device_bytes(x: np.ndarray, dtype: str) -> bytes:
    """An input as the launcher reads it: raw little-endian values of `dtype`."""
    return _dev(x, dtype).tobytes()


def _dev(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "float16":
        return x.astype(np.float16)
    if dtype == "bfloat16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return x.astype(np.float32)
