"""A sample of generated configs of every op compiles for sm_80 and sm_90 (nvcc -cubin), and the
post-compile checks turn ptxas numbers into violations. Shares one cache dir across the module."""
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from forge.backends import get_backend
from forge.backends.cuda import host
from forge.ops import get_op
from forge.variant import Variant

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

CASES = [
    ("attention", dict(B=1, Hq=4, Hkv=2, Sq=100, Skv=130, D=64), "bfloat16", {"causal": True}),
    ("attention", dict(B=1, Hq=8, Hkv=1, Sq=1, Skv=1000, D=128), "float16", {}),
    ("matmul", dict(M=200, N=264, K=136), "float16", {}),
    ("matmul", dict(M=64, N=512, K=4096), "bfloat16", {"transpose_b": True}),
    ("matmul", dict(M=16, N=50257, K=768), "float16", {}),      # B rows of odd length: element copies
    ("matmul", dict(M=16, N=4096, K=4096), "float32", {}),       # SIMT GEMM, split-K
    ("rmsnorm", dict(M=33, N=1000), "float32", {"residual": True}),
    ("softmax", dict(M=17, N=4096), "bfloat16", {}),
    # rows longer than the registers hold: streamed (read twice), softmax's max and sum online
    ("softmax", dict(M=3, N=151936), "float16", {}),
    ("rmsnorm", dict(M=5, N=16384), "bfloat16", {"residual": True}),
    ("softmax", dict(M=2, N=50257), "bfloat16", {}),            # odd length: one element per access
    ("softmax_axis", dict(B=3, K=127, I=257), "bfloat16", {}),
    ("swiglu", dict(M=9, N=1000), "float16", {}),
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cuda-cache")


def _sample(backend, p, k=1):
    """The largest valid config (or the one with the most split-KV / split-K parts where the space
    has them), and the first."""
    e = backend.space(p).enumerate()
    assert len(e) > 0
    picks = [e.config(len(e) - 1), e.config(0)]
    split = [c for c in e.configs() if c.get("splits", 1) > 1 or c.get("split_k", 1) > 1]
    if split:
        picks[0] = max(reversed(split), key=lambda c: c.get("splits", 1) * c.get("split_k", 1))
    return picks[:k]


@pytest.mark.slow   # 26 nvcc compiles and host checks: ~25-50 s on 2 busy cores
@pytest.mark.parametrize("target", ["a100", "h100"])   # sm_80 and sm_90
def test_sample_of_every_op_compiles(target, cache):
    be = get_backend(target, measure="model")
    jobs = []
    for op, shape, dtype, attrs in CASES:
        p = get_op(op).problem(shape, dtype, attrs)
        jobs += [Variant(p, target, c) for c in _sample(be, p)]
    with ThreadPoolExecutor(2) as ex:
        arts = list(ex.map(lambda v: be.build(v, cache), jobs))
    for v, a in zip(jobs, arts):
        assert a.ok, (v.problem.short(), v.config, a.error[:2000])
        r = a.resources
        assert r["arch"] == be.arch.sm and r["regs"] > 0
        assert set(r["kernels"]) == {l.kernel for l in be.plan(v).launches}
        for k in r["kernels"].values():
            assert k["occ_blocks_per_sm"] >= 0 and k["arch"] == be.arch.sm
        # without a GPU the build also checks a variant within the limits on the host at a reduced shape
        if not r["violations"]:
            assert r["host"].get("status") == "ok" or "skipped" in r["host"] and not host.available()[0], r["host"]
    # a second build is served from the cache by source hash
    again = be.build(jobs[0], cache)
    assert again.cached and again.source_hash == arts[0].source_hash


def test_spills_and_occupancy_become_violations(cache):
    be = get_backend("h100", measure="model")
    p = get_op("attention").problem(dict(B=4, Hq=32, Hkv=8, S=2048, D=128), "bfloat16")
    # 8 warps x 2 blocks/SM forced by launch bounds: 128-register cap -> spills (nvcc 13.0)
    v = Variant(p, "h100", dict(block_m=128, block_n=32, num_warps=8, stages=2, min_blocks=2, splits=1))
    assert be.space(p).check(v.config) == []
    a = be.build(v, cache)
    assert a.ok and a.resources["spills"] > 0
    assert any(r.startswith("spills:") for r in a.resources["violations"])
    m = be.run(a, v, seed=0, warmup=1, reps=1, timeout=10)
    assert m.status == "invalid" and m.reason.startswith("spills:")
    # occupancy: fake ptxas output with too many registers for min_blocks=2 at 256 threads
    log = ("ptxas info    : Compiling entry function 'forge_attention' for 'sm_90'\n"
           "ptxas info    : Function properties for forge_attention\n"
           "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used 200 registers, used 1 barriers\n")
    res = be.check_compiled(v, log)
    assert any(r.startswith("occupancy:") and "regs" in r for r in res["violations"])


def test_compile_error_keeps_compiler_message(tmp_path):
    from forge.backends.cuda.nvcc import compile_cubin
    r = compile_cubin({"kernel.cu": 'extern "C" __global__ void k() { undefined_thing(); }\n'}, "kernel.cu",
                      "sm_90", tmp_path / "bad")
    assert not r.ok and "undefined_thing" in r.log
    assert not compile_cubin({}, "kernel.cu", "sm_90", tmp_path / "bad").ok   # cached failure
