"""ptxas -v parsing on recorded outputs (cuda.md §3.1) and on a live nvcc run."""
import shutil
import subprocess
from pathlib import Path

import pytest

from forge.backends.cuda.ptxas import parse_ptxas

DATA = Path(__file__).parent / "data" / "cuda"


def test_sm90_small_kernel():
    rep = parse_ptxas((DATA / "ptxas_sm90_small.txt").read_text())
    k = rep.kernel("_Z11smem_kernelILi256EEvPKfPfi")
    assert (k.arch, k.registers, k.barriers, k.smem, k.spills, k.cmem) == ("sm_90", 22, 1, 1024, 0, {})


def test_sm80_spills_cmem_and_devfunc():
    rep = parse_ptxas((DATA / "ptxas_sm80_spills.txt").read_text())
    assert set(rep.kernels) == {"_Z12heavy_kernelPK6float4Pfi", "_Z11smem_kernelILi256EEvPKfPfi"}
    h = rep.kernel("_Z12heavy_kernelPK6float4Pfi")
    assert (h.registers, h.stack_frame, h.spill_stores, h.spill_loads, h.cumulative_stack) == (64, 72, 104, 104, 72)
    assert h.cmem == {0: 372} and h.smem == 0
    s = rep.kernel("_Z11smem_kernelILi256EEvPKfPfi")
    assert (s.registers, s.smem, s.spills) == (22, 1024, 0)
    assert any("spilled" in w for w in rep.warnings)


def test_reordered_used_line_items():
    text = ("ptxas info    : Compiling entry function 'k' for 'sm_100'\n"
            "ptxas info    : Used 2048 bytes smem, used 2 barriers, 40 registers, 3 bytes new_thing\n")
    k = parse_ptxas(text).kernel("k")
    assert (k.registers, k.barriers, k.smem) == (40, 2, 2048)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_live_nvcc_forced_spills(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(r'''
extern "C" __global__ void __launch_bounds__(256, 8) heavy(const float4* in, float* out) {
  float acc[64];
  #pragma unroll
  for (int i = 0; i < 64; ++i) { float4 v = in[threadIdx.x * 64 + i]; acc[i] = v.x * v.y + v.z; }
  float s = 0.f;
  #pragma unroll
  for (int i = 0; i < 64; ++i) s += acc[i] * acc[(i * 7) % 64];
  __shared__ float sh[256]; sh[threadIdx.x] = s; __syncthreads();
  out[threadIdx.x] = sh[255 - threadIdx.x];
}
''')
    r = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-maxrregcount=16", "-Xptxas", "-v",
                        "-o", str(tmp_path / "k.cubin"), str(src)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    k = parse_ptxas(r.stderr).kernel("heavy")
    # launch bounds (256 threads, 8 blocks) cap registers at 65536/(256*8) = 32 -> spills
    assert k.arch == "sm_90" and 0 < k.registers <= 32 and k.smem == 1024 and k.spills > 0
