"""Build and run a generated CUDA plan on the host (host_cuda.h here): g++ -fopenmp, every launch
of the plan in order, buffers in the problem's dtype through files."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

from forge.generators.cuda import Plan

HERE = Path(__file__).parent

DRIVER = """#include "host_cuda.h"
#include <cstdio>
#include <vector>
thread_local Dim3 threadIdx;
Dim3 blockIdx;
unsigned char* forge_dyn_smem;
#include "kernel.cu"

struct Ptr {{ void* p; template <typename T> operator T*() const {{ return (T*)p; }} }};

template <typename F> static bool launch(unsigned gx, unsigned gy, unsigned gz, int threads, long smem, F kernel) {{
  std::vector<unsigned char> dyn(smem + 16);
  forge_dyn_smem = dyn.data();
  bool full = true;
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x) {{
        blockIdx = Dim3{{x, y, z}};
#pragma omp parallel num_threads(threads)
        {{
          threadIdx = Dim3{{(unsigned)omp_get_thread_num(), 0, 0}};
          if (omp_get_num_threads() != threads) full = false;
          else kernel();
        }}
        if (!full) return false;
      }}
  return true;
}}

int main(int argc, char** argv) {{
  const long sizes[] = {{{sizes}}};
  std::vector<std::vector<unsigned char>> bufs;
  for (int i = 0; i < {n}; ++i) {{
    bufs.emplace_back(sizes[i]);
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


def available() -> bool:
    return shutil.which("g++") is not None


def _to_bytes(x: np.ndarray, dtype: str) -> bytes:
    x = np.ascontiguousarray(x, dtype=np.float32)
    if dtype == "float16":
        return x.astype(np.float16).tobytes()
    if dtype == "bfloat16":   # the inputs are exact in bfloat16: its 16 high bits
        return (x.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    return x.tobytes()


def _from_bytes(raw: bytes, dtype: str) -> np.ndarray:
    if dtype == "float16":
        return np.frombuffer(raw, np.float16).astype(np.float32)
    if dtype == "bfloat16":
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
    return np.frombuffer(raw, np.float32).copy()


def run_on_host(plan: Plan, inputs: dict[str, np.ndarray], dtype: str, work: Path) -> np.ndarray:
    """The output buffer, as float32, after the plan's launches run on the CPU."""
    work.mkdir(parents=True, exist_ok=True)
    for name, text in plan.files.items():
        if name == "forge_config.h":   # the CUDA headers' types come from host_cuda.h
            text = "\n".join(line for line in text.splitlines() if "#include <cuda" not in line) + "\n"
        if name.endswith(".cu"):
            text = DYNAMIC_SMEM.sub(r"\1* \2 = reinterpret_cast<\1*>(forge_dyn_smem);", text)
        (work / name).write_text(text)
    shutil.copy(HERE / "host_cuda.h", work / "host_cuda.h")
    names = [b.name for b in plan.buffers]
    index = {n: i for i, n in enumerate(names)}

    def arg(a: str) -> str:
        kind, _, value = a.partition(":")
        if kind == "buf":
            return f"Ptr{{bufs[{index[value]}].data()}}"
        if kind == "null":
            return "Ptr{nullptr}"
        return {"i32": f"(int){value}", "f32": f"{float(value)!r}f"}[kind]

    calls = []
    for ln in plan.launches:
        assert ln.block[1:] == (1, 1), "1-D blocks only"
        call = f"{ln.kernel}({', '.join(arg(a) for a in ln.args)});"
        calls.append(f"  if (!launch({ln.grid[0]}u, {ln.grid[1]}u, {ln.grid[2]}u, {ln.block[0]}, {ln.smem}, "
                     f"[&] {{ {call} }})) return 4;")
    out = next(i for i, b in enumerate(plan.buffers) if b.kind == "out")
    (work / "main.cpp").write_text(DRIVER.format(sizes=", ".join(str(b.nbytes) for b in plan.buffers), n=len(names),
                                                 launches="\n".join(calls), out=out))
    exe = work / "kernel_host"
    r = subprocess.run(["g++", "-std=c++17", "-O1", "-fopenmp", "-w", str(work / "main.cpp"), "-o", str(exe)],
                       capture_output=True, text=True, cwd=work)
    assert r.returncode == 0, r.stderr[-4000:]
    files = []
    for b in plan.buffers:
        path = work / f"{b.name}.bin"
        if b.kind == "in":
            path.write_bytes(_to_bytes(inputs[b.name], dtype))
        files.append(str(path))
    env = dict(os.environ, OMP_DYNAMIC="false", OMP_WAIT_POLICY="passive")
    r = subprocess.run([str(exe), *files, str(work / "result.bin")], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, f"host run failed ({r.returncode}): {r.stderr[-2000:]}"
    return _from_bytes((work / "result.bin").read_bytes(), dtype)


def covering_configs(configs: list[dict]) -> list[dict]:
    """Few valid configs that together hold every value every parameter takes in `configs`:
    greedily the one holding the most values not yet held (first in order on ties)."""
    want = {(k, v) for c in configs for k, v in c.items()}
    picked: list[dict] = []
    while want:
        best = max(configs, key=lambda c: len(want & set(c.items())))
        picked.append(best)
        want -= set(best.items())
    return picked
