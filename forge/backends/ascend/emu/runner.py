"""Compile Ascend C kernels with g++ against the emulation headers and run them on the CPU.

Two entry points (README.md documents both and the kernel conventions):

- `compile_kernel(sources, main, defines, cache_dir)` -> `CompileResult` (binary path or compiler
  error), cached by a hash of the sources, defines, flags and the emulator headers.
- `run_kernel(binary, inputs, outputs, tiling, block_dim, timeout)` -> `EmuResult` (outputs, or
  the kind of bug the emulator found: over_allocation, queue_overflow, empty_deque, deadlock,
  misaligned, ...).

The kernel runs in its own process so a crash or hang of generated code never takes forge down.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import yaml

from forge.backends.ascend.emu import pch
from forge.backends.child import dies_with_parent
from forge.errors import ForgeInputError
from forge.paths import cache_dir

EMU_DIR = Path(__file__).parent
INCLUDE_DIR = EMU_DIR / "include"
CXX = os.environ.get("FORGE_EMU_CXX", "g++")
CXX_FLAGS = ["-std=c++20", "-fno-strict-aliasing"]
# -O0: the emulator build is a functional check of a small same-tiling problem, run once, and no
# reported time comes from it (ascend times are modeled from the plan), so compile time is its
# cost. Against -O2 it builds an attention kernel in about 3.5 s instead of 7.7 s here, and an
# 8-variant `forge tune --op attention --target ascend910b2` took 27 s instead of 39 s with the
# same leaderboard. Numerics do not change: no fast-math, and the baseline x86-64 target has no
# FMA instruction to contract into. FORGE_EMU_OPT sets another level.
DEFAULT_OPT = os.environ.get("FORGE_EMU_OPT", "-O0")
# Build against a precompiled API header (pch.py); FORGE_EMU_PCH=0 parses it in every build.
USE_PCH = os.environ.get("FORGE_EMU_PCH", "1") != "0"

# exit code of the emulator binary -> error kind (forge_emu::Exit in include/forge_emu/runtime.h)
EXIT_KINDS = {
    3: "spec", 10: "over_allocation", 11: "queue_overflow", 12: "empty_deque", 13: "deadlock",
    14: "misaligned", 15: "gm_out_of_bounds", 16: "local_out_of_bounds", 17: "bad_sync",
    18: "flag_overflow", 19: "bad_api", 20: "bad_launch", 21: "missing_sync",
}
KERNEL_TYPES = (
    "KERNEL_TYPE_AIV_ONLY", "KERNEL_TYPE_AIC_ONLY", "KERNEL_TYPE_MIX_AIV_1_0", "KERNEL_TYPE_MIX_AIC_1_0",
    "KERNEL_TYPE_MIX_AIC_1_1", "KERNEL_TYPE_MIX_AIC_1_2", "KERNEL_TYPE_AICORE", "KERNEL_TYPE_MIX_VECTOR_CORE",
)
# emu_limits() key -> compile-time define read by include/forge_emu/runtime.h
DEFINE_NAMES = {
    "ub_bytes": "FORGE_EMU_UB_BYTES", "l1_bytes": "FORGE_EMU_L1_BYTES", "l0a_bytes": "FORGE_EMU_L0A_BYTES",
    "l0b_bytes": "FORGE_EMU_L0B_BYTES", "l0c_bytes": "FORGE_EMU_L0C_BYTES", "bt_bytes": "FORGE_EMU_BT_BYTES",
    "fb_bytes": "FORGE_EMU_FB_BYTES", "ub_align": "FORGE_EMU_UB_ALIGN", "l1_align": "FORGE_EMU_L1_ALIGN",
    "l0_align": "FORGE_EMU_L0_ALIGN", "l0c_align": "FORGE_EMU_L0C_ALIGN", "event_ids": "FORGE_EMU_EVENT_IDS",
    "que_buffers_per_position": "FORGE_EMU_QUE_BUFS_PER_POSITION",
    "buffers_per_kernel": "FORGE_EMU_QUE_BUFS_PER_KERNEL", "cross_flag_ids": "FORGE_EMU_CROSS_FLAG_IDS",
    "cross_flag_max_pending": "FORGE_EMU_CROSS_FLAG_MAX_PENDING", "aic_cores": "FORGE_EMU_AIC_CORES",
    "aiv_cores": "FORGE_EMU_AIV_CORES",
}


# ---------------------------------------------------------------------------------------------
# limits: target YAML -> defines
# ---------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _defaults() -> dict[str, int]:
    return dict(yaml.safe_load((EMU_DIR / "defaults.yaml").read_text()))


# emulator limit -> where the target YAML keeps it (a path into `details`); the UB is less its
# reserve (ascend.md §1.2), as the space's constraints count it (AscendHW.capacity)
FROM_TARGET = {
    "ub_bytes": ("ub_bytes",), "l1_bytes": ("l1_bytes",), "l0a_bytes": ("l0a_bytes",), "l0b_bytes": ("l0b_bytes",),
    "l0c_bytes": ("l0c_bytes",), "bt_bytes": ("bt_bytes",), "fb_bytes": ("fb_bytes",),
    "ub_align": ("align_bytes", "ub"), "l1_align": ("align_bytes", "l1"), "l0_align": ("align_bytes", "l0a"),
    "l0c_align": ("align_bytes", "l0c"), "event_ids": ("event_ids",),
    "que_buffers_per_position": ("queue_buffers_per_position",), "buffers_per_kernel": ("buffers_per_kernel",),
    "cross_flag_ids": ("cross_core_flag_ids",), "cross_flag_max_pending": ("cross_core_pending_max",),
    "aic_cores": ("aic",), "aiv_cores": ("aiv",),
}


def emu_limits(target: Any = None) -> dict[str, int]:
    """Emulator limits: defaults.yaml (910B2) overlaid with what the target's `details` give
    (FROM_TARGET says where). `target` is a `forge.targets.Target`, a details mapping, or None."""
    lim = dict(_defaults())   # a copy: the cached defaults must not take one target's values into the next
    details: Mapping[str, Any] = {}
    if target is not None:
        details = target if isinstance(target, Mapping) else getattr(target, "details", {}) or {}
    for key, path in FROM_TARGET.items():
        value: Any = details
        for part in path:
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is not None:
            lim[key] = int(value)
    lim["ub_bytes"] -= int(details.get("ub_reserved_bytes", 0))
    return lim


def emu_defines(target: Any = None) -> dict[str, int]:
    """The -D defines the headers need, from `emu_limits(target)`."""
    return {DEFINE_NAMES[k]: v for k, v in emu_limits(target).items()}


# ---------------------------------------------------------------------------------------------
# compile
# ---------------------------------------------------------------------------------------------
@dataclass
class CompileResult:
    """A built emulator binary, or the compiler's message."""

    ok: bool
    path: str = ""
    error: str = ""
    cached: bool = False
    seconds: float = 0.0
    entry: str = ""
    kernel_type: str = ""
    command: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.ok


@lru_cache(maxsize=4)
def _headers_digest(include_dir: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(include_dir.rglob("*.h")):
        h.update(str(p.relative_to(include_dir)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


_ENTRY_RE = re.compile(r'extern\s+"C"\s+__global__\s+__aicore__\s+void\s+(\w+)\s*\(')
_TYPE_RE = re.compile(r"KERNEL_TASK_TYPE_DEFAULT\s*\(\s*(?:AscendC::|::)?(\w+)\s*\)")


def find_entry(text: str) -> str:
    """The kernel function: the `extern "C" __global__ __aicore__ void NAME(` of ascend.md §2.1."""
    names = _ENTRY_RE.findall(text)
    if len(names) != 1:
        raise ForgeInputError("main", f'expected exactly one extern "C" __global__ __aicore__ kernel, found {names or "none"}')
    return names[0]


def find_kernel_type(text: str) -> str:
    """The kernel type named by KERNEL_TASK_TYPE_DEFAULT, else AIV-only (a vector kernel)."""
    m = _TYPE_RE.search(text)
    if m and m.group(1) in KERNEL_TYPES:
        return m.group(1)
    return "KERNEL_TYPE_AIV_ONLY"


def default_cache_dir() -> Path:
    return cache_dir() / "ascend_emu"


def compile_kernel(
    sources: Mapping[str, str],
    main: str,
    defines: Mapping[str, Any] | None = None,
    cache_dir: str | Path | None = None,
    *,
    entry: str | None = None,
    target: Any = None,
    extra_flags: Sequence[str] = (),
    opt: str = DEFAULT_OPT,
    timeout: float = 300.0,
) -> CompileResult:
    """Build `sources[main]` (device code, may #include the other sources) into an emulator binary.

    `defines` are passed as -D (generator config macros); the emulator's FORGE_EMU_* limits come
    from `target` (or defaults.yaml) unless `defines` sets them. Cached by content hash in
    `cache_dir`: a hit returns at once with `cached=True`; compiler errors are cached too.
    """
    if main not in sources:
        raise ForgeInputError("main", f"{main!r} is not one of the sources {sorted(sources)}")
    for name in sources:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise ForgeInputError("sources", f"source name {name!r} must be a relative path inside the build folder")
    entry = entry or find_entry(sources[main])
    ktype = find_kernel_type(sources[main])
    all_defines: dict[str, Any] = dict(emu_defines(target))
    all_defines.update(defines or {})
    flags = [opt] + CXX_FLAGS + [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in sorted(all_defines.items())] + list(extra_flags)

    h = hashlib.sha256()
    for name in sorted(sources):
        h.update(name.encode() + b"\0" + sources[name].encode() + b"\0")
    h.update(f"{main}\0{entry}\0{' '.join(flags)}\0{CXX}\0{_headers_digest(INCLUDE_DIR)}".encode())
    key = h.hexdigest()[:24]
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    out_dir = root / key
    binary, err_file, meta_file = out_dir / "emu_kernel", out_dir / "compile_error.txt", out_dir / "meta.json"
    if meta_file.exists():
        meta = json.loads(meta_file.read_text())
        if binary.exists():
            return CompileResult(True, str(binary), cached=True, entry=entry, kernel_type=meta["kernel_type"], command=meta["command"])
        if err_file.exists():
            return CompileResult(False, error=err_file.read_text(), cached=True, entry=entry, kernel_type=meta["kernel_type"], command=meta["command"])

    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=root))
    try:
        for name, text in sources.items():
            p = work / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        t0 = time.monotonic()
        # the API precompiled once per flags (pch.py); its folder first on the include path
        api, pre, linked = "kernel_operator.h", [], []
        if USE_PCH and pch.available(INCLUDE_DIR):
            api = pch.WRAPPER
            built = pch.prepared(default_cache_dir() / "pch", CXX, [opt] + CXX_FLAGS + [f for f in flags if f.startswith("-DFORGE_EMU_")]
                                 + list(extra_flags), INCLUDE_DIR, _headers_digest(INCLUDE_DIR), timeout)
            pre = [f"-I{built}"] if built else []
            linked = [str(built / pch.ENTRY_OBJECT)] if built and (built / pch.ENTRY_OBJECT).is_file() else []
        launcher = work / "forge_emu_launch.cpp"
        launcher.write_text(
            "// generated by forge.backends.ascend.emu.runner: runs the kernel on the CPU emulator\n"
            f'#include "{api}"\n'
            f'#include "{main}"\n'
            '#include "forge_emu/entry.h"\n'
            # without the prebuilt object, its source in this TU (headers older than it define it in entry.h)
            + ("" if linked or not (INCLUDE_DIR / pch.ENTRY_SOURCE).is_file() else f'#include "{pch.ENTRY_SOURCE.as_posix()}"\n')
            + f"FORGE_EMU_ENTRY({entry})\n"
        )
        cmd = [CXX, *flags, *pre, f"-I{INCLUDE_DIR}", f"-I{work}", str(launcher), *linked, "-o", str(work / "emu_kernel")]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            rc, msg = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired:
            rc, msg = -1, f"g++ timed out after {timeout:.0f} s"
        seconds = time.monotonic() - t0
        meta = {"entry": entry, "kernel_type": ktype, "command": cmd, "seconds": seconds}
        (work / "meta.json").write_text(json.dumps(meta))
        if rc != 0:
            (work / "compile_error.txt").write_text(msg)
        if out_dir.exists() and not meta_file.exists():
            shutil.rmtree(out_dir, ignore_errors=True)  # a half-written earlier attempt
        try:
            os.replace(work, out_dir)  # atomic publish; if another process won the race, use its copy
        except OSError:
            pass
        if rc != 0:
            return CompileResult(False, error=msg, seconds=seconds, entry=entry, kernel_type=ktype, command=cmd)
        return CompileResult(True, str(binary), seconds=seconds, entry=entry, kernel_type=ktype, command=cmd)
    finally:
        if work.exists() and out_dir.exists() and work != out_dir:
            shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------
@dataclass
class EmuResult:
    """Outcome of one emulated launch. `error_kind` is None when the kernel ran to completion."""

    ok: bool
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    error_kind: str | None = None
    error_detail: dict[str, Any] | str = field(default_factory=dict)
    stderr: str = ""
    stdout: str = ""
    returncode: int = 0
    seconds: float = 0.0

    def __bool__(self) -> bool:
        return self.ok


def _np_dtype(dtype: Any) -> np.dtype:
    if isinstance(dtype, str) and dtype in ("bfloat16", "bf16"):
        return np.dtype(np.uint16)  # raw bf16 bits
    return np.dtype(dtype)


def pack_tiling(fields: Mapping[str, Any]) -> bytes:
    """Packs a tiling dict as a C struct with natural alignment, fields in order.

    A value is an int (-> uint32 `I`, or int32 `i` if negative), a float (-> float32 `f`), or a
    `(struct_format_char, value)` pair such as `("Q", n)`, `("h", -1)`, `("d", 1e-6)`.
    """
    fmt, vals = "@", []
    for name, v in fields.items():
        if isinstance(v, tuple):
            code, val = v
        elif isinstance(v, bool):
            code, val = "I", int(v)
        elif isinstance(v, (int, np.integer)):
            code, val = ("i" if v < 0 else "I"), int(v)
        elif isinstance(v, (float, np.floating)):
            code, val = "f", float(v)
        else:
            raise ForgeInputError(f"tiling.{name}", f"unsupported value {v!r}: use int, float or (format, value)")
        fmt += code
        vals.append(val)
    data = struct.pack(fmt, *vals)
    pad = (-len(data)) % 8  # trailing padding like a C struct holding 8-byte fields
    return data + b"\0" * pad


def _tiling_bytes(tiling: Any) -> bytes:
    if tiling is None:
        return b""
    if isinstance(tiling, (bytes, bytearray, memoryview)):
        return bytes(tiling)
    if isinstance(tiling, Mapping):
        return pack_tiling(tiling)
    if isinstance(tiling, np.ndarray):
        return np.ascontiguousarray(tiling).tobytes()
    raise ForgeInputError("tiling", f"expected bytes, a dict or a numpy array, got {type(tiling).__name__}")


def _parse_error(stderr: str) -> dict[str, Any] | None:
    for line in reversed(stderr.strip().splitlines()):
        line = line.strip()
        if line.startswith('{"emu_error"'):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return {"emu_error": "unparsed", "line": line}
    return None


def run_kernel(
    binary: str | Path | CompileResult,
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, tuple[Sequence[int], Any]],
    tiling: Any = None,
    block_dim: int = 1,
    timeout: float = 60.0,
    *,
    args: Sequence[Any] | None = None,
    workspace_bytes: int = 0,
    kernel_type: str | None = None,
) -> EmuResult:
    """Runs an emulator binary on the given inputs; outputs start poisoned (all bytes 0xFF = NaN).

    Kernel parameters, in order, are `args` when given — each a name from `inputs`/`outputs`,
    `"workspace"`, `"tiling"`, or a number / `("name", number)` for a scalar parameter — else
    inputs..., outputs..., workspace (if `workspace_bytes`), tiling (if given). fp16 arrays are
    passed as float16, bf16 as raw uint16; an output dtype "bfloat16" comes back as raw uint16.
    """
    if isinstance(binary, CompileResult):
        if not binary.ok:
            raise ForgeInputError("binary", "the kernel did not compile: " + binary.error[:200])
        kernel_type = kernel_type or binary.kernel_type
        binary = binary.path
    binary = Path(binary)
    if kernel_type is None:
        meta = binary.parent / "meta.json"
        kernel_type = json.loads(meta.read_text())["kernel_type"] if meta.exists() else "KERNEL_TYPE_AIV_ONLY"
    if kernel_type not in KERNEL_TYPES:
        raise ForgeInputError("kernel_type", f"{kernel_type!r}; allowed: {', '.join(KERNEL_TYPES)}")
    if int(block_dim) < 1:
        raise ForgeInputError("block_dim", f"{block_dim} must be >= 1")
    overlap = set(inputs) & set(outputs)
    if overlap:
        raise ForgeInputError("outputs", f"names {sorted(overlap)} are both inputs and outputs")
    tbytes = _tiling_bytes(tiling)
    if args is None:
        args = [*inputs, *outputs] + (["workspace"] if workspace_bytes else []) + (["tiling"] if tiling is not None else [])

    work = Path(tempfile.mkdtemp(prefix="forge_emu_run."))
    try:
        lines = [f"kernel_type {kernel_type}", f"block_dim {int(block_dim)}"]
        out_files: dict[str, Path] = {}
        for i, a in enumerate(args):
            if isinstance(a, tuple):
                name, val = a
                lines.append(f"scalar {name} {val!r}")
            elif isinstance(a, (int, float, np.integer, np.floating)) and not isinstance(a, bool):
                lines.append(f"scalar p{i} {a!r}")
            elif a in inputs:
                arr = np.ascontiguousarray(inputs[a])
                if arr.dtype == np.float64 or arr.dtype == object:
                    raise ForgeInputError(f"inputs.{a}", f"dtype {arr.dtype} has no Ascend kernel type; pass float32/float16/raw uint16 bf16")
                p = work / f"in_{i}.bin"
                p.write_bytes(arr.tobytes())
                lines.append(f"gm {a} {max(arr.nbytes, 1)} {p} -")
            elif a in outputs:
                shape, dt = outputs[a]
                nbytes = int(np.prod(shape)) * _np_dtype(dt).itemsize
                p = work / f"out_{i}.bin"
                out_files[a] = p
                lines.append(f"gm {a} {max(nbytes, 1)} - {p}")
            elif a == "workspace":
                lines.append(f"gm workspace {max(int(workspace_bytes), 32)} - -")
            elif a == "tiling":
                p = work / "tiling.bin"
                p.write_bytes(tbytes or b"\0")
                lines.append(f"gm tiling {max(len(tbytes), 1)} {p} -")
            else:
                raise ForgeInputError("args", f"{a!r} is not an input, an output, 'workspace', 'tiling' or a number")
        spec = work / "spec.txt"
        spec.write_text("\n".join(lines) + "\n")
        t0 = time.monotonic()
        try:
            proc = subprocess.run(dies_with_parent([str(binary), str(spec)]), capture_output=True, text=True, timeout=timeout,
                                  start_new_session=True)
        except subprocess.TimeoutExpired as exc:
            return EmuResult(False, error_kind="timeout", error_detail={"detail": f"no result after {timeout:.0f} s"},
                             stderr=(exc.stderr or b"").decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or ""),
                             returncode=-1, seconds=time.monotonic() - t0)
        seconds = time.monotonic() - t0
        err = _parse_error(proc.stderr)
        if proc.returncode != 0 or err is not None:
            if err is not None:
                kind = str(err.get("emu_error"))
                detail: dict[str, Any] | str = err
            elif proc.returncode < 0:
                kind = "crash"
                detail = {"signal": signal.Signals(-proc.returncode).name, "detail": proc.stderr[-2000:]}
            else:
                kind = EXIT_KINDS.get(proc.returncode, "runtime_error")
                detail = {"returncode": proc.returncode, "detail": proc.stderr[-2000:]}
            return EmuResult(False, error_kind=kind, error_detail=detail, stderr=proc.stderr, stdout=proc.stdout,
                             returncode=proc.returncode, seconds=seconds)
        result: dict[str, np.ndarray] = {}
        for name, p in out_files.items():
            shape, dt = outputs[name]
            result[name] = np.frombuffer(p.read_bytes(), dtype=_np_dtype(dt)).reshape(shape).copy()
        return EmuResult(True, outputs=result, stderr=proc.stderr, stdout=proc.stdout, returncode=0, seconds=seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# bf16 helpers (numpy has no bfloat16)
# ---------------------------------------------------------------------------------------------
def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> raw bf16 bits (uint16), round to nearest even."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, np.uint16(0x7FC0), r)


def bf16_bits_to_f32(b: np.ndarray) -> np.ndarray:
    """raw bf16 bits (uint16) -> float32."""
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
