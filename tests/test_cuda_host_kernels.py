"""forge's generated CUDA kernels run on the CPU by tests/cuda_host (one OpenMP thread per CUDA
thread; barriers, warp shuffles, cp.async and mma.sync fragments emulated from the PTX ISA's
layouts) and checked against the float64 reference: indexing, tails, vector widths, streamed rows,
shared-memory merges, tensor-core fragments, pipelines, split-K and split-KV are right before any
GPU sees them."""
import pytest

from forge.backends import get_backend
from forge.ops import get_op
from forge.variant import Variant
from cuda_host.run import available, run_on_host

pytestmark = pytest.mark.skipif(not available(), reason="g++ not installed")

CASES = [
    # ragged last blocks, each vector width, loads in flight per thread
    ("swiglu", dict(M=3, N=40), dict(threads=128, vec_bytes=4, unroll=1)),
    ("swiglu", dict(M=5, N=420), dict(threads=128, vec_bytes=16, unroll=4)),
    ("swiglu", dict(M=7, N=78), dict(threads=128, vec_bytes=8, unroll=2)),
    # one thread per column vector; K shared by 4 and by 32 threads (uneven shares of K)
    ("softmax_axis", dict(B=2, K=37, I=70), dict(threads=64, k_threads=1, vec_bytes=4)),
    ("softmax_axis", dict(B=2, K=37, I=12), dict(threads=64, k_threads=4, vec_bytes=16)),
    ("softmax_axis", dict(B=3, K=45, I=20), dict(threads=128, k_threads=32, vec_bytes=8)),
    ("softmax_axis", dict(B=1, K=300, I=3), dict(threads=64, k_threads=8, vec_bytes=4)),
    # rows in registers and streamed; one warp and several warps per row; a ragged last block
    ("rmsnorm", dict(M=5, N=200), dict(threads=128, row_threads=64, vec_bytes=8, cache="regs")),
    ("rmsnorm", dict(M=3, N=1000), dict(threads=256, row_threads=128, vec_bytes=16, cache="stream")),
    ("softmax", dict(M=5, N=200), dict(threads=128, row_threads=32, vec_bytes=16, cache="regs")),
    ("softmax", dict(M=3, N=777), dict(threads=128, row_threads=128, vec_bytes=4, cache="stream")),
    # fewer rows or columns than one block holds
    ("rmsnorm", dict(M=2, N=12), dict(threads=128, row_threads=32, vec_bytes=16, cache="regs")),
    ("softmax_axis", dict(B=2, K=1, I=1), dict(threads=64, k_threads=1, vec_bytes=4)),
]
ATTRS = {"rmsnorm": {"residual": True}}


@pytest.mark.parametrize("op, shape, config", CASES)
def test_kernel_run_on_the_host_matches_the_reference(op, shape, config, tmp_path):
    be = get_backend("h100", measure="model")
    p = get_op(op).problem(shape, "float32", ATTRS.get(op, {}))
    assert not be.space(p).check(config), be.space(p).check(config)
    plan = be.plan(Variant(p, "h100", config))
    inputs = get_op(op).make_inputs(p, seed=1)
    out = run_on_host(plan, inputs, "float32", tmp_path)
    m = get_op(op).check(p, inputs, out)
    assert m.ok and m.checked > 0, m


def test_host_run_detects_a_wrong_kernel(tmp_path):
    """The check can fail: a softmax_axis plan whose merge skips the other threads' shares."""
    be = get_backend("h100", measure="model")
    p = get_op("softmax_axis").problem(dict(B=1, K=37, I=12), "float32")
    plan = be.plan(Variant(p, "h100", dict(threads=64, k_threads=4, vec_bytes=16)))
    src = plan.files["kernel.cu"]
    assert "t < K_THREADS" in src
    plan.files["kernel.cu"] = src.replace("t < K_THREADS", "t < 1")
    inputs = get_op("softmax_axis").make_inputs(p, seed=1)
    assert not get_op("softmax_axis").check(p, inputs, run_on_host(plan, inputs, "float32", tmp_path)).ok


def test_host_run_detects_an_output_the_kernel_never_writes(tmp_path):
    """Outputs start as NaN, as in the GPU harness: a kernel that skips the rows a causal mask
    leaves without a key (whose reference is 0) fails, where zeroed outputs would pass it."""
    be = get_backend("h100", measure="model")
    p = get_op("attention").problem(dict(B=1, Hq=2, Hkv=1, Sq=90, Skv=40, D=32), "float16", {"causal": True})
    plan = be.plan(Variant(p, "h100", _smallest_matching(be, p, dict(splits=1))))
    src = plan.files["kernel.cu"]
    assert "if (row >= ROWS) continue;" in src
    plan.files["kernel.cu"] = src.replace("if (row >= ROWS) continue;", "if (row >= ROWS || l == 0.f) continue;")
    inputs = get_op("attention").make_inputs(p, seed=1)
    out = run_on_host(plan, inputs, "float16", tmp_path)
    assert not get_op("attention").check(p, inputs, out).ok


@pytest.mark.parametrize("right, wrong", [
    ("const int h = h0 + row % ROW_HEADS,", "const int h = h0,"),                          # epilogue head
    ("q + (ok ? q_offset(b, h0, m0 + r) : 0)", "q + (ok ? q_offset(b, h0, r) : 0)"),      # Q row block
    ("(n0 + BLOCK_N - 1 > m0 / ROW_HEADS + (SKV - SQ))", "(n0 + BLOCK_N - 1 > m0 + (SKV - SQ))"),  # mask by query
])
def test_packed_group_rows_fail_the_check_when_their_mapping_breaks(right, wrong, tmp_path):
    """rows=group: four heads x 20 queries in five row blocks of 16 under a causal mask shifted
    right by 76 keys; the second block's queries start at 4, not at its first row 16."""
    be = get_backend("h100", measure="model")
    p = get_op("attention").problem(dict(B=1, Hq=4, Hkv=1, Sq=20, Skv=96, D=32), "float16", {"causal": True})
    plan = be.plan(Variant(p, "h100", _smallest_matching(be, p, dict(rows="group", block_n=32, splits=1))))
    inputs = get_op("attention").make_inputs(p, seed=1)
    assert get_op("attention").check(p, inputs, run_on_host(plan, inputs, "float16", tmp_path / "right")).ok
    src = plan.files["kernel.cu"]
    assert src.count(right) == 1
    plan.files["kernel.cu"] = src.replace(right, wrong)
    assert not get_op("attention").check(p, inputs, run_on_host(plan, inputs, "float16", tmp_path / "wrong")).ok


def _smallest_matching(be, p, want):
    """The valid config matching `want` with the fewest threads and smallest tiles (fast on the host)."""
    matches = [c for c in be.space(p).enumerate().configs() if all(c[k] == v for k, v in want.items())]
    assert matches, (p.short(), want)
    return min(matches, key=lambda c: (be.plan(Variant(p, "h100", c)).launches[0].block[0], sorted(c.items())))


TILED_CASES = [
    # ragged M, N and K tiles; B stored [K, N] and [N, K]; split-K with its reduction kernel
    ("matmul", dict(M=70, N=72, K=40), "float16", {}, dict(stages=2, split_k=1)),
    ("matmul", dict(M=33, N=40, K=136), "bfloat16", {"transpose_b": True}, dict(stages=3, split_k=1)),
    ("matmul", dict(M=20, N=24, K=520), "float16", {}, dict(split_k=4)),
    ("matmul", dict(M=130, N=64, K=64), "bfloat16", {}, dict(group_m=8, stages=4)),
    # rows not a multiple of 16 bytes: element copies of B (odd N, odd-length output rows), of A
    # and B^T (K = 23), and split-K partials of odd rows
    ("matmul", dict(M=20, N=37, K=24), "float16", {}, dict(stages=2, split_k=1)),
    ("matmul", dict(M=16, N=16, K=23), "bfloat16", {"transpose_b": True}, dict(stages=3, split_k=1)),
    ("matmul", dict(M=9, N=45, K=260), "float16", {}, dict(split_k=2)),
    # float32 on the SIMT cores: ragged tiles, B^T, split-K
    ("matmul", dict(M=50, N=70, K=45), "float32", {}, dict(split_k=1)),
    ("matmul", dict(M=33, N=20, K=70), "float32", {"transpose_b": True}, dict(block_k=16, split_k=1)),
    ("matmul", dict(M=8, N=40, K=300), "float32", {}, dict(split_k=4)),
    # causal bottom-right mask with Sq < Skv, GQA, ragged KV tiles; single-buffered; split-KV + combine
    ("attention", dict(B=1, Hq=2, Hkv=1, Sq=40, Skv=70, D=64), "float16", {"causal": True}, dict(stages=2, splits=1)),
    ("attention", dict(B=2, Hq=2, Hkv=2, Sq=17, Skv=33, D=32), "bfloat16", {}, dict(stages=1, splits=1)),
    ("attention", dict(B=1, Hq=4, Hkv=1, Sq=1, Skv=300, D=64), "bfloat16", {}, dict(splits=4)),
    # causal with more query rows than keys: the first Sq - Skv rows see no key (output 0)
    ("attention", dict(B=1, Hq=2, Hkv=1, Sq=90, Skv=40, D=32), "float16", {"causal": True}, dict(splits=1)),
    # a GQA group's heads packed into a block's rows: decode with split-KV; a causal mask by query
    # over heads x queries with a second row block, rows without a key and a ragged last block
    ("attention", dict(B=2, Hq=8, Hkv=2, Sq=1, Skv=300, D=64), "bfloat16", {}, dict(rows="group", splits=4)),
    ("attention", dict(B=1, Hq=4, Hkv=1, Sq=20, Skv=12, D=32), "float16", {"causal": True},
     dict(rows="group", splits=1)),
]


@pytest.mark.parametrize("op, shape, dtype, attrs, want", TILED_CASES)
def test_tiled_kernel_run_on_the_host_matches_the_reference(op, shape, dtype, attrs, want, tmp_path):
    """mma.sync fragments, cp.async pipelines, register blocking, split-K and split-KV as generated
    for the GPU."""
    be = get_backend("h100", measure="model")
    p = get_op(op).problem(shape, dtype, attrs)
    cfg = _smallest_matching(be, p, want)
    plan = be.plan(Variant(p, "h100", cfg))
    inputs = get_op(op).make_inputs(p, seed=2)
    m = get_op(op).check(p, inputs, run_on_host(plan, inputs, dtype, tmp_path))
    assert m.ok and m.checked > 0, (cfg, m)


# Shapes with ragged tails where every value of every knob has a valid config.
EVERY_VALUE = [
    ("rmsnorm", dict(M=9, N=2056), "float32", {"residual": True}),
    ("softmax", dict(M=9, N=2056), "float32", {}),
    ("swiglu", dict(M=5, N=1000), "bfloat16", {}),
    ("swiglu", dict(M=5, N=501), "float16", {}),                  # odd N: one element per access
    ("softmax_axis", dict(B=2, K=70, I=304), "float16", {}),
    ("softmax_axis", dict(B=2, K=70, I=301), "bfloat16", {}),     # odd I: one element per access
    ("matmul", dict(M=130, N=136, K=300), "float16", {}),
    ("matmul", dict(M=70, N=70, K=1030), "float32", {"transpose_b": True}),    # every split-K
    ("attention", dict(B=1, Hq=2, Hkv=1, Sq=70, Skv=300, D=64), "bfloat16", {"causal": True}),
    ("attention", dict(B=1, Hq=6, Hkv=2, Sq=5, Skv=70, D=32), "float16", {"causal": True}),   # decode GQA: rows
]


@pytest.mark.slow   # about 50 host builds and runs: a minute on 2 cores
@pytest.mark.parametrize("op, shape, dtype, attrs", EVERY_VALUE)
def test_every_value_of_every_cuda_knob_runs_correctly_on_the_host(op, shape, dtype, attrs, tmp_path):
    """A few configs that together take every value of every knob valid at this shape (greedy
    cover of the valid space), each run on the host and checked against the reference."""
    from cuda_host.run import covering_configs

    be = get_backend("h100", measure="model")
    p = get_op(op).problem(shape, dtype, attrs)
    configs = covering_configs(be.space(p).enumerate().configs())
    inputs = get_op(op).make_inputs(p, seed=3)
    failures = []
    for i, cfg in enumerate(configs):
        m = get_op(op).check(p, inputs, run_on_host(be.plan(Variant(p, "h100", cfg)), inputs, dtype, tmp_path / str(i)))
        if not (m.ok and m.checked > 0):
            failures.append((cfg, m))
    assert not failures, failures


@pytest.mark.parametrize("op, shape, config", [
    ("softmax", dict(M=3, N=200), dict(threads=128, row_threads=32, vec_bytes=16, cache="stream")),
    ("softmax_axis", dict(B=1, K=6, I=40), dict(threads=64, k_threads=4, vec_bytes=16)),
])
def test_softmax_of_masked_scores_has_no_nan(op, shape, config, tmp_path):
    """-inf inputs (masked scores) where a thread has seen nothing else yet: the online pass
    computed exp(-inf + inf) = NaN there, and the NaN spread over the row."""
    import numpy as np

    be = get_backend("h100", measure="model")
    p = get_op(op).problem(shape, "float32")
    assert not be.space(p).check(config), be.space(p).check(config)
    plan = be.plan(Variant(p, "h100", config))
    x = get_op(op).make_inputs(p, seed=1)["x"].copy()
    if op == "softmax":
        x[0, :40] = -np.inf              # every thread's first vectors of row 0
    else:
        x[0, :2, :] = -np.inf            # the first values of every column
    out = run_on_host(plan, {"x": x}, "float32", tmp_path).reshape(x.shape)
    axis = 1 if op == "softmax_axis" else x.ndim - 1
    ref = np.exp(x.astype(np.float64) - x.max(axis, keepdims=True))
    ref /= ref.sum(axis, keepdims=True)
    assert not np.isnan(out).any() and np.abs(out - ref).max() < 1e-5
