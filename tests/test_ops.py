"""Operators: float64 references agree with independent formulas; bad shapes name the dimension."""
import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from forge.errors import ForgeInputError
from forge.ops import get_op
from forge.ops.attention import causal_pairs
from forge.ops.base import round_to_dtype


def naive_attention(q, k, v, causal, scale):
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    B, Hq, Sq, D = q.shape
    Hkv, Skv = k.shape[1], k.shape[2]
    out = np.zeros((B, Hq, Sq, D))
    for b in range(B):
        for h in range(Hq):
            kh = h // (Hq // Hkv)
            for i in range(Sq):
                s = [float(q[b, h, i] @ k[b, kh, j]) * scale for j in range(Skv)]
                if causal:
                    s = [x if j <= i + Skv - Sq else -np.inf for j, x in enumerate(s)]
                w = np.exp(np.array(s) - max(s))
                out[b, h, i] = (w / w.sum()) @ v[b, kh].astype(np.float64)
    return out


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [dict(B=1, Hq=4, Hkv=1, Sq=5, Skv=9, D=4), dict(B=2, H=2, S=6, D=8)])
def test_attention_reference(shape, causal):
    op = get_op("attention")
    p = op.problem(shape, "float32", {"causal": causal})
    x = op.make_inputs(p, 3)
    want = naive_attention(x["q"], x["k"], x["v"], causal, 1 / np.sqrt(p.shape["D"]))
    np.testing.assert_allclose(op.reference(p, x), want, rtol=1e-10, atol=1e-12)


def test_attention_flops_halve_with_causal_mask():
    op = get_op("attention")
    full = op.flops(op.problem(dict(B=1, H=1, S=1024, D=64)))
    causal = op.flops(op.problem(dict(B=1, H=1, S=1024, D=64), attrs={"causal": True}))
    assert causal == full * causal_pairs(1024, 1024) / 1024**2
    assert causal_pairs(4, 4) == 10 and causal_pairs(2, 4) == 3 + 4


def test_rmsnorm_and_softmax_and_matmul_references():
    rms, sm, mm = get_op("rmsnorm"), get_op("softmax"), get_op("matmul")
    p = rms.problem({"M": 3, "N": 16}, attrs={"residual": True, "eps": 1e-5})
    x = rms.make_inputs(p, 1)
    h = x["x"].astype(np.float64) + x["residual"]
    want = h / np.sqrt((h**2).mean(1, keepdims=True) + 1e-5) * x["weight"]
    np.testing.assert_allclose(rms.reference(p, x), want, rtol=1e-12)
    p = sm.problem({"M": 4, "N": 33})
    x = sm.make_inputs(p, 2)
    np.testing.assert_allclose(sm.reference(p, x).sum(1), 1.0)
    p = mm.problem({"M": 5, "N": 7, "K": 3}, attrs={"transpose_b": True})
    x = mm.make_inputs(p, 4)
    np.testing.assert_allclose(mm.reference(p, x), x["a"].astype(np.float64) @ x["b"].T.astype(np.float64))


@pytest.mark.parametrize("name", ["attention", "rmsnorm", "softmax", "matmul"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_inputs_seeded_nonzero_and_exact_in_dtype(name, dtype):
    op = get_op(name)
    shape = {"attention": dict(B=1, H=2, S=8, D=8), "matmul": dict(M=8, N=8, K=8)}.get(name, dict(M=8, N=8))
    p = op.problem(shape, dtype)
    a, b = op.make_inputs(p, 7), op.make_inputs(p, 7)
    for k in a:
        assert np.array_equal(a[k], b[k])
        assert np.count_nonzero(a[k]) == a[k].size
        if dtype == "float16":
            assert np.array_equal(a[k].astype(np.float16).astype(np.float32), a[k])
    assert not np.array_equal(op.make_inputs(p, 8)[next(iter(a))], a[next(iter(a))])


def test_check_flags_nan_and_wrong_values():
    op = get_op("softmax")
    p = op.problem({"M": 4, "N": 8})
    x = op.make_inputs(p, 0)
    ref = op.reference(p, x)
    assert op.check(p, x, ref).ok
    bad = ref.copy(); bad[1, 2] = np.nan
    m = op.check(p, x, bad)
    assert not m.ok and m.nan_count == 1 and "NaN output values" in m.reason
    bad = ref.copy(); bad[3, 1] += 1e-2
    m = op.check(p, x, bad)
    assert not m.ok and "row 3 col 1" in m.reason


def test_a_long_float32_sum_may_be_off_by_its_rounding_but_not_by_a_lost_product():
    """float32 matmul at K=4096: a correct kernel's sequential float32 sums miss the flat 2e-4 bound
    where the expected value is near 0 (seen on an H200); that much is accepted, a product left out
    of the sum is not."""
    op = get_op("matmul")
    p = op.problem({"M": 4, "N": 512, "K": 4096}, "float32")
    x = op.make_inputs(p, 0)
    ref = op.reference(p, x)
    rms = float(np.sqrt(np.mean(ref[2] ** 2)))
    j = int(np.argmin(np.abs(ref[2])))
    off = ref.copy(); off[2, j] += 4 * 2.0 ** -24 * 64 * rms        # 4 u·√K·rms: the sums' worst seen
    assert abs(ref[2, j]) < 0.5 and 4 * 2.0 ** -24 * 64 * rms > 2e-4 + 2e-4 * abs(ref[2, j])
    assert op.check(p, x, off).ok
    lost = ref.copy(); lost[2, j] -= x["a"][2, 7] * x["b"][7, j]     # one product left out
    m = op.check(p, x, lost)
    assert abs(x["a"][2, 7] * x["b"][7, j]) > 1e-2 and not m.ok and "rms(expected)" in m.reason
    # a matrix-vector product: each row is one value, so a row's own size says nothing of its sums
    mv = op.problem({"M": 512, "N": 1, "K": 4096}, "float32")
    x = op.make_inputs(mv, 0)
    ref = op.reference(mv, x)
    i = int(np.argmin(np.abs(ref[:, 0])))
    off = ref.copy(); off[i, 0] += 4 * 2.0 ** -24 * 64 * float(np.sqrt(np.mean(ref ** 2)))
    assert abs(ref[i, 0]) < 0.5 and op.check(mv, x, off).ok
    sm = get_op("softmax")
    assert sm.accumulation_allowance(sm.problem({"M": 4, "N": 4096})) == 0.0     # no long dot products


def test_the_reference_is_computed_on_one_blas_thread(monkeypatch):
    """BLAS workers keep spinning after a multi-threaded call and steal cores from the next kernel
    timed on this CPU (benchmarks/host_timing_noise.py); the limit must not outlive the check."""
    blas = lambda: [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    if not blas():
        pytest.skip("numpy exposes no BLAS library to threadpoolctl")
    op = get_op("softmax")
    p = op.problem({"M": 4, "N": 8})
    x = op.make_inputs(p, 0)
    ref = op.reference(p, x)
    seen = []
    real = type(op).reference_rows
    monkeypatch.setattr(type(op), "reference_rows", lambda self, *a: seen.append(blas()) or real(self, *a))
    with threadpool_limits(limits=4, user_api="blas"):
        assert op.check(p, x, ref).ok
        assert blas() == [4] * len(blas())
    assert seen == [[1] * len(blas())]


def test_check_samples_rows_of_large_outputs_but_scans_all_for_nan():
    op = get_op("softmax")
    p = op.problem({"M": 20000, "N": 4})
    x = op.make_inputs(p, 0)
    ref = op.reference(p, x)
    m = op.check(p, x, ref)
    assert m.ok and m.checked == op.full_check_rows * 4
    ref[19999, 0] = np.nan
    assert op.check(p, x, ref).nan_count == 1


def test_an_inf_is_right_only_where_the_reference_overflows_the_dtype():
    """swiglu of float16 inputs near ±65504 (cann-bench swi_glu case 10): a product past 65504 is inf
    in the float16 output, as in the float64 reference cast to float16; an inf anywhere else is
    wrong, and a sampled check still judges every row that holds one."""
    op = get_op("swiglu")
    p = op.problem({"M": 20000, "N": 4}, "float16")
    rng = np.random.default_rng(0)
    x = {s.name: round_to_dtype(rng.uniform(-65504, 65504, s.shape), "float16") for s in op.inputs(p)}
    ref = op.reference(p, x)
    out = round_to_dtype(ref, "float16")
    assert np.isinf(out).any() and not np.isinf(ref).any()
    m = op.check(p, x, out)
    assert m.ok and m.inf_count == int(np.isinf(out).sum()) and m.nan_count == 0
    finite = np.flatnonzero(~np.isinf(out).any(axis=1))
    wrong = out.copy()
    wrong[finite[len(finite) // 2], 0] = np.inf                # a row the sample need not draw
    m = op.check(p, x, wrong)
    assert not m.ok and f"row {finite[len(finite) // 2]} col 0: got inf" in m.reason
    flipped = out.copy()
    flipped[np.isinf(out)] *= -1                               # the right overflow, the wrong sign
    assert not op.check(p, x, flipped).ok


@pytest.mark.parametrize("row", [0, 19999])
def test_a_sampled_check_always_compares_the_first_and_last_rows(row):
    """A tiling goes wrong at its tail: a last row that is wrong fails the check at every seed, not
    only where the draw of rows happens to take it (about one in five)."""
    op = get_op("rmsnorm")
    p = op.problem({"M": 20000, "N": 4})
    x = op.make_inputs(p, 0)
    wrong = op.reference(p, x)
    wrong[row] *= 1.5
    assert not any(op.check(p, x, wrong, seed=s).ok for s in range(4))


@pytest.mark.parametrize("shape,attrs,field", [
    (dict(B=1, Hq=6, Hkv=4, S=8, D=8), {}, "shape.Hkv"),
    (dict(B=1, H=2, S=0, D=8), {}, "shape.Sq"),
    (dict(B=1, H=2, S=8), {}, "shape.D"),
    (dict(B=1, H=2, S=8, D=8, X=1), {}, "shape.X"),
    (dict(B=1, H=2, S=8, D=8), {"causal": "yes"}, "attrs.causal"),
    (dict(B=1, H=2, S=8, D=8), {"window": 3}, "attrs.window"),
])
def test_bad_attention_shapes_name_the_field(shape, attrs, field):
    with pytest.raises(ForgeInputError) as exc:
        get_op("attention").problem(shape, "float32", attrs)
    assert exc.value.field == field


def test_unknown_op_and_dtype():
    with pytest.raises(ForgeInputError, match="allowed: attention"):
        get_op("flash")
    with pytest.raises(ForgeInputError, match="dtype"):
        get_op("softmax").problem({"M": 1, "N": 1}, "int4")


@pytest.mark.parametrize("op,shape", [("softmax", {"M": 64, "N": 4097}), ("softmax_axis", {"B": 2, "K": 1000, "I": 3})])
def test_a_softmax_whose_normaliser_is_short_fails_the_check(op, shape):
    """A normaliser 0.04 % short (a value of that size left out of it) makes every value 0.04 %
    too large: within 2e-4 + 2e-4·y of every y <= 1, so the value-by-value float32 bound passed
    it; the sums to 1 do not."""
    o = get_op(op)
    p = o.problem(shape, "float32")
    inputs = o.make_inputs(p, 0)
    wrong = (o.reference(p, inputs) * 1.0004).astype(np.float32)
    m = o.check(p, inputs, wrong)
    assert not m.ok and "sums to 1.0004" in m.reason and "a softmax sums to 1 (within 0.0002)" in m.reason, m.reason
    for dtype in ("float32", "float16", "bfloat16"):     # correct outputs, rounded to the dtype, pass
        q = o.problem(shape, dtype)
        ins = o.make_inputs(q, 0)
        assert o.check(q, ins, round_to_dtype(o.reference(q, ins), dtype)).ok


def test_a_softmax_sum_off_along_a_middle_axis_fails_when_the_rows_are_sampled():
    """softmax_axis sums along K, across the flat rows the check samples above 4096 rows (B·K):
    the sums are taken over the whole output, so one (b, i) whose normaliser is 0.04 % short
    fails though every value is within its float32 bound."""
    o = get_op("softmax_axis")
    p = o.problem({"B": 3, "K": 2000, "I": 3}, "float32")
    assert o.rows(p)[0] > o.full_check_rows
    inputs = o.make_inputs(p, 0)
    ref = o.reference(p, inputs)
    assert o.check(p, inputs, ref.astype(np.float32)).ok
    wrong = ref.copy()
    wrong[1, :, 2] *= 1.0004
    m = o.check(p, inputs, wrong.astype(np.float32))
    assert not m.ok and m.reason.startswith("the sum along axis 1 at (1, 2) sums to 1.0004"), m.reason
