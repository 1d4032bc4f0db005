"""Run a generated CUDA plan on the CPU (host_cuda.h): g++, each CUDA thread of a block a coroutine
on one OS thread that runs them barrier to barrier, blocks in turn, every launch of the plan in
order, buffers in the problem's dtype through files.

Without a GPU this is how a variant's correctness is checked: the same config is generated for a
smaller problem with the same tiling structure (each generator's `emulation_shape`: whole blocks
and the original ragged tails), built here, run with a timeout in its own process, and its output
compared with the float64 reference. Times never come from here.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from forge.backends.child import dies_with_parent
from forge.generators.cuda import Plan

HEADER = Path(__file__).with_name("host_cuda.h")

DRIVER = """#include "host_cuda.h"
#include <cstdio>
#include <vector>
Dim3 threadIdx;
Dim3 blockIdx;
unsigned char* forge_dyn_smem;
#include "kernel.cu"

struct Ptr {{ void* p; template <typename T> operator T*() const {{ return (T*)p; }} }};

template <typename F> static bool launch(unsigned gx, unsigned gy, unsigned gz, int threads, long smem, F kernel) {{
  std::vector<unsigned char> dyn(smem + 16);
  forge_dyn_smem = dyn.data();
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x) {{
        blockIdx = Dim3{{x, y, z}};
        if (!forge_host::run_block(threads, kernel)) return false;
      }}
  return true;
}}

int main(int argc, char** argv) {{
  const long sizes[] = {{{sizes}}};
  // outputs poisoned with NaN (0xFF bytes) as the GPU harness does, so an output element the
  // kernel never writes fails the check even where the reference is 0; scratch zeroed
  const unsigned char fill[] = {{{fill}}};
  std::vector<std::vector<unsigned char>> bufs;
  for (int i = 0; i < {n}; ++i) {{
    bufs.emplace_back(sizes[i], fill[i]);
    FILE* f = std::fopen(argv[1 + i], "rb");
    if (f) {{ if (std::fread(bufs[i].data(), 1, sizes[i], f) != (size_t)sizes[i]) return 3; std::fclose(f); }}
  }}
{launches}
  FILE* f = std::fopen(argv[{n} + 1], "wb");
  std::fwrite(bufs[{out}].data(), 1, sizes[{out}], f);
  std::fclose(f);
  return 0;
}}
"""

DYNAMIC_SMEM = re.compile(r"extern __shared__ (?:__align__\(\d+\) )?([\w ]+?) (\w+)\[\];")
FLAGS = ["-std=c++17", "-O1", "-w"]


@dataclass
class HostBuild:
    ok: bool
    exe: str = ""
    error: str = ""
    cached: bool = False


@dataclass
class HostRun:
    ok: bool
    output: np.ndarray | None = None
    status: str = "ok"            # ok | runtime_error | timeout
    error: str = ""


@lru_cache(maxsize=1)
def available() -> tuple[bool, str]:
    """g++ with the POSIX coroutines (ucontext.h) the host threads run on (checked once per process)."""
    gxx = shutil.which("g++")
    if gxx is None:
        return False, "g++ not found"
    r = subprocess.run([gxx, "-x", "c++", "-E", "-"], input="#include <ucontext.h>\n", capture_output=True, text=True)
    return (True, "") if r.returncode == 0 else (False, "g++ has no ucontext.h")


def sources(plan: Plan) -> dict[str, str]:
    """The plan's files made host C++, and the driver that launches its kernels in order."""
    out: dict[str, str] = {}
    for name, text in plan.files.items():
        if name == "forge_config.h":   # the CUDA headers' types come from host_cuda.h
            text = "\n".join(line for line in text.splitlines() if "#include <cuda" not in line) + "\n"
        if name.endswith(".cu"):
            text = DYNAMIC_SMEM.sub(r"\1* \2 = reinterpret_cast<\1*>(forge_dyn_smem);", text)
        out[name] = text
    index = {b.name: i for i, b in enumerate(plan.buffers)}

    def arg(a: str) -> str:
        kind, _, value = a.partition(":")
        if kind == "buf":
            return f"Ptr{{bufs[{index[value]}].data()}}"
        if kind == "null":
            return "Ptr{nullptr}"
        return {"i32": f"(int){value}", "f32": f"{float(value)!r}f"}[kind]

    calls = []
    for ln in plan.launches:
        if ln.block[1:] != (1, 1):
            raise ValueError(f"{ln.kernel}: host emulation runs 1-D blocks only, not {ln.block}")
        call = f"{ln.kernel}({', '.join(arg(a) for a in ln.args)});"
        calls.append(f"  if (!launch({ln.grid[0]}u, {ln.grid[1]}u, {ln.grid[2]}u, {ln.block[0]}, {ln.smem}, "
                     f"[&] {{ {call} }})) return 4;")
    out_i = next(i for i, b in enumerate(plan.buffers) if b.kind == "out")
    out["main.cpp"] = DRIVER.format(sizes=", ".join(str(b.nbytes) for b in plan.buffers), n=len(plan.buffers),
                                    fill=", ".join("0xFF" if b.kind == "out" else "0" for b in plan.buffers),
                                    launches="\n".join(calls), out=out_i)
    out["host_cuda.h"] = HEADER.read_text()
    return out


def build(plan: Plan, cache_dir: Path) -> HostBuild:
    """The host executable of `plan`, cached under cache_dir by the digest of its sources."""
    files = sources(plan)
    digest = hashlib.sha256(("\0".join(f"{k}\0{files[k]}" for k in sorted(files)) + " ".join(FLAGS)).encode()).hexdigest()[:20]
    work = Path(cache_dir) / digest
    exe = work / "kernel_host"
    if exe.exists():
        return HostBuild(True, str(exe), cached=True)
    work.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (work / name).write_text(text)
    tmp = work / f"kernel_host.{os.getpid()}"
    r = subprocess.run(["g++", *FLAGS, "main.cpp", "-o", tmp.name], capture_output=True, text=True, cwd=work)
    if r.returncode != 0:
        return HostBuild(False, error=r.stderr[-4000:])
    os.replace(tmp, exe)            # atomic: a concurrent build of the same sources sees a whole file
    return HostBuild(True, str(exe))


def to_bytes(x: np.ndarray, dtype: str) -> bytes:
    x = np.ascontiguousarray(x, dtype=np.float32)
    if dtype == "float16":
        return x.astype(np.float16).tobytes()
    if dtype == "bfloat16":   # forge's inputs are exact in bfloat16: its 16 high bits
        return (x.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    return x.tobytes()


def from_bytes(raw: bytes, dtype: str) -> np.ndarray:
    if dtype == "float16":
        return np.frombuffer(raw, np.float16).astype(np.float32)
    if dtype == "bfloat16":
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
    return np.frombuffer(raw, np.float32).copy()


def run(exe: str, plan: Plan, inputs: dict[str, np.ndarray], dtype: str, work: Path, timeout: float) -> HostRun:
    """The output buffer (float32) after the plan's launches ran on the CPU; a crash or a hang is a
    failed run with its reason, never an exception."""
    work.mkdir(parents=True, exist_ok=True)
    files = []
    for b in plan.buffers:
        path = work / f"{b.name}.bin"
        if b.kind == "in":
            path.write_bytes(to_bytes(inputs[b.name], dtype))
        files.append(str(path))
    try:
        r = subprocess.run(dies_with_parent([exe, *files, str(work / "result.bin")]), capture_output=True, text=True,
                           timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        return HostRun(False, status="timeout", error=f"host emulation did not finish in {timeout:.0f} s")
    if r.returncode != 0:
        why = {4: "a block of more than 1024 threads, or no memory for its threads' stacks"}.get(
            r.returncode, f"exit status {r.returncode}")
        return HostRun(False, status="runtime_error", error=f"host emulation failed ({why}): {r.stderr[-1000:]}")
    return HostRun(True, from_bytes((work / "result.bin").read_bytes(), dtype))
