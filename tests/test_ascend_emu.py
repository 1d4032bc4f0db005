"""The Ascend C CPU emulator: hand-written kernels run correctly, planted bugs are named.

Each kernel in tests/ascend_kernels/ is compiled once per session (g++ against the emulation
headers); bug cases select their planted bug with a scalar kernel parameter, so one binary
serves them all. A reported bug must name its kind and the source line marked "BUG:<kind>".
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from forge.backends.ascend.emu.runner import (
    bf16_bits_to_f32,
    compile_kernel,
    f32_to_bf16_bits,
    pack_tiling,
    run_kernel,
)
from forge.errors import ForgeInputError

KERNELS = Path(__file__).parent / "ascend_kernels"


@pytest.fixture(scope="session")
def emu_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("ascend_emu_cache")


@pytest.fixture(scope="session")
def build(emu_cache):
    """Compile a kernel file of tests/ascend_kernels once per session (-O1: the tests are tiny)."""
    built = {}

    def _build(name: str, defines: dict | None = None):
        key = (name, tuple(sorted((defines or {}).items())))
        if key not in built:
            r = compile_kernel({name: (KERNELS / name).read_text()}, name, defines or {}, emu_cache, opt="-O1")
            assert r.ok, r.error
            built[key] = r
        return built[key]

    return _build


def marker_line(name: str, kind: str) -> int:
    for i, line in enumerate((KERNELS / name).read_text().splitlines(), 1):
        if f"BUG:{kind}" in line:
            return i
    raise AssertionError(f"no BUG:{kind} marker in {name}")


# ---------------------------------------------------------------------------------------------
# correct kernels
# ---------------------------------------------------------------------------------------------
def test_add_kernel_matches_reference(build):
    r = build("add.cpp")
    rng = np.random.default_rng(0)
    n, blocks = 8 * 1024, 8
    x = rng.standard_normal(n).astype(np.float16)
    y = rng.standard_normal(n).astype(np.float16)
    res = run_kernel(r, {"x": x, "y": y}, {"z": ((n,), "float16")}, tiling={"total": n, "perCore": n // blocks},
                     block_dim=blocks)
    assert res.ok, res.error_detail
    # fp16 add rounds once: exactly the numpy fp16 sum
    np.testing.assert_array_equal(res.outputs["z"], (x + y).astype(np.float16))


def test_add_kernel_leaves_unwritten_output_poisoned(build):
    """Blocks that are not launched write nothing: their part of z stays NaN (poisoned)."""
    r = build("add.cpp")
    n = 4096
    x = np.ones(n, np.float16)
    res = run_kernel(r, {"x": x, "y": x}, {"z": ((n,), "float16")}, tiling={"total": n, "perCore": n // 4}, block_dim=2)
    assert res.ok
    assert np.all(res.outputs["z"][: n // 2] == 2) and np.all(np.isnan(res.outputs["z"][n // 2:]))


def test_rmsnorm_kernel_with_scalar_parameters(build):
    r = build("rmsnorm.cpp")
    rng = np.random.default_rng(1)
    rows, cols, eps = 12, 48, 1e-6          # 48 halves = 96 B: padded to 64 halves (32 B multiple)
    pad = 64
    x = np.zeros((rows, pad), np.float16)
    x[:, :cols] = rng.standard_normal((rows, cols))
    g = np.zeros(pad, np.float16)
    g[:cols] = rng.standard_normal(cols)
    blocks, per = 4, 3
    res = run_kernel(r, {"x": x, "g": g}, {"y": ((rows, pad), "float16")},
                     args=["x", "g", "y", rows, pad, cols, per, eps], block_dim=blocks)
    assert res.ok, res.error_detail
    xd = x[:, :cols].astype(np.float64)
    ref = xd / np.sqrt((xd ** 2).mean(axis=1, keepdims=True) + eps) * g[:cols].astype(np.float64)
    np.testing.assert_allclose(res.outputs["y"][:, :cols].astype(np.float64), ref, rtol=2e-3, atol=2e-3)


# (dtype, values at their indices, n, the documented result)
VENDOR_EXAMPLE = ("half", {0: 60000, 1: 60000, 2: -30000, 3: 100}, 4, 35584.0)
PAIRS = ("float", {0: 1e8, 1: 1, 2: -1e8, 3: 1}, 4, 0.0)
REPEATS_IN_ORDER = ("float", {0: 1e8, 64: 1, 128: -1e8, 192: 1}, 256, 1.0)


@pytest.mark.parametrize("form,dtype,values,n,expected", [
    # the vendor's own example: 60000 + 60000 is kept at 65504, then 65504 - 29900 = 35604 (not
    # 90100 = inf), each step rounded to half: -29900 -> -29904, 35600 -> 35584 (ties to even)
    *[(form, *VENDOR_EXAMPLE) for form in (0, 1, 2)],
    # adjacent pairs: (1e8 + 1) + (-1e8 + 1) = 0 in float, where in order it is 1
    *[(form, *PAIRS) for form in (0, 1, 2)],
    # ReduceSum: the repeats' sums in order, ((1e8 + 1) - 1e8) + 1 = 1, where as a tree it is 0
    (0, *REPEATS_IN_ORDER),
])
def test_reductions_add_in_the_documented_order_and_precision(build, form, dtype, values, n, expected):
    """A repeat's (and a 32 B block's) sum is a binary tree of adjacent pairs, each addition in the
    element type, a half past 65504 kept at 65504 (ReduceSum CANN 8.5 atlasascendc_api_07_0078,
    BlockReduceSum atlasascendc_api_07_0084); ReduceSum's count form on Atlas A2 adds the repeats'
    sums one after another. FORM: 0 ReduceSum, 1 WholeReduceSum, 2 BlockReduceSum."""
    r = build("reduce_sum.cpp", {"DTYPE": dtype, "FORM": form})
    np_dtype = np.float16 if dtype == "half" else np.float32
    x = np.zeros(1024, np_dtype)
    for i, v in values.items():
        x[i] = v
    out = 32 // x.itemsize
    res = run_kernel(r, {"x": x}, {"y": ((out,), "float16" if dtype == "half" else "float32")}, args=["x", "y", n],
                     block_dim=1)
    assert res.ok, res.error_detail
    assert float(res.outputs["y"][0]) == expected


@pytest.mark.parametrize("trans_b", [0, 1])
def test_cube_matmul_kernel(build, trans_b):
    r = build("matmul.cpp", {"TRANS_B": trans_b})
    rng = np.random.default_rng(2)
    M, N, K = 96, 80, 64
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K) if trans_b else (K, N)).astype(np.float16)
    tiling = {f: 0 for f in ("usedCoreNum", "M", "N", "Ka", "Kb", "singleCoreM", "singleCoreN", "singleCoreK",
                             "baseM", "baseN", "baseK", "depthA1", "depthB1")}
    tiling.update(M=M, N=N, Ka=K, Kb=K, singleCoreM=64, singleCoreN=48, singleCoreK=K, baseM=32, baseN=16, baseK=32,
                  depthA1=2, depthB1=2, usedCoreNum=4)
    tb = pack_tiling(tiling) + bytes(4 * 40)   # the rest of TCubeTiling stays zero
    res = run_kernel(r, {"a": a, "b": b}, {"c": ((M, N), "float32")}, tiling=tb, block_dim=4, workspace_bytes=1024)
    assert res.ok, res.error_detail
    bb = b.astype(np.float64).T if trans_b else b.astype(np.float64)
    np.testing.assert_allclose(res.outputs["c"], a.astype(np.float64) @ bb, rtol=1e-4, atol=1e-4)


def test_matmul_tiling_beyond_l0a_is_over_allocation(build):
    r = build("matmul.cpp", {"TRANS_B": 0})
    M = N = K = 256
    fields = dict(usedCoreNum=1, M=M, N=N, Ka=K, Kb=K, singleCoreM=M, singleCoreN=N, singleCoreK=K,
                  baseM=256, baseN=16, baseK=256, depthA1=1, depthB1=1)
    a = np.zeros((M, K), np.float16)
    res = run_kernel(r, {"a": a, "b": a}, {"c": ((M, N), "float32")}, tiling=pack_tiling(fields) + bytes(160),
                     block_dim=1, workspace_bytes=64)
    assert res.error_kind == "over_allocation"
    assert res.error_detail["memory"] == "L0A" and res.error_detail["used"] == 256 * 256 * 2
    assert res.error_detail["capacity"] == 64 * 1024


def test_cross_core_producer_consumer(build):
    r = build("crosscore.cpp")
    rng = np.random.default_rng(3)
    cores, steps = 2, 5                      # 5 steps through a 2-slot ring: the AIC must wait for FREE
    x = rng.standard_normal((cores, steps, 16, 32)).astype(np.float16)
    w = rng.standard_normal((32, 32)).astype(np.float16)
    res = run_kernel(r, {"x": x, "w": w}, {"y": ((cores, steps, 16, 32), "float32")},
                     args=["x", "w", "y", "workspace", steps, -1, 0], workspace_bytes=cores * 2 * 16 * 32 * 4,
                     block_dim=cores)
    assert res.ok, res.error_detail
    ref = 2 * (x.astype(np.float64) @ w.astype(np.float64))
    np.testing.assert_allclose(res.outputs["y"], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("race", [1, 2])
def test_a_race_on_the_gm_ring_between_cores_names_both_cores(build, race):
    """race 1: READY set before the AIC writes the slot; race 2: a slot reused without waiting for
    FREE. Either way an AIV reads a slot the AIC wrote with no flag after that write."""
    r = build("crosscore.cpp")
    cores, steps = 1, 5
    x = np.ones((cores, steps, 16, 32), np.float16)
    w = np.ones((32, 32), np.float16)
    res = run_kernel(r, {"x": x, "w": w}, {"y": ((cores, steps, 16, 32), "float32")},
                     args=["x", "w", "y", "workspace", steps, -1, race], workspace_bytes=cores * 2 * 16 * 32 * 4,
                     block_dim=cores)
    d = res.error_detail
    assert res.error_kind == "missing_sync", res.stderr
    assert (d["hazard"], d["memory"], d["position"]) == ("read after write", "GM", "workspace"), d
    assert d["where"] == f"crosscore.cpp:{marker_line('crosscore.cpp', 'race_read')}" and d["core"] == "AIV"
    assert d["earlier_where"] == f"crosscore.cpp:{marker_line('crosscore.cpp', 'race_write')}"
    assert (d["earlier_core"], d["earlier_pipe"]) == ("AIC", "FIX") and "CrossCoreSetFlag<mode, PIPE_FIX>" in d["needs"]


def _vec_to_cube(build, race: int, cores: int = 2, steps: int = 3):
    r = build("vec_to_cube.cpp")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((cores, steps, 16, 32)).astype(np.float16)
    w = rng.standard_normal((32, 32)).astype(np.float16)
    res = run_kernel(r, {"x": x, "w": w}, {"y": ((cores, steps, 16, 32), "float32")},
                     args=["x", "w", "y", "workspace", steps, race], workspace_bytes=cores * 16 * 32 * 2,
                     block_dim=cores)
    return res, x, w


def test_the_matmuls_loads_of_what_the_vector_cores_wrote_are_ordered_by_their_flags(build):
    """AIVs write the Matmul's A into a GM slot and flag it after PIPE_MTE3; the AIC flags DONE after
    PIPE_FIX before they overwrite it. Clean: the Matmul's loads are checked against the AIVs'
    writes, and its Fixpipe knows them complete, so DONE orders the next overwrite."""
    res, x, w = _vec_to_cube(build, 0)
    assert res.ok, res.error_detail
    ref = (2 * x.astype(np.float64)) @ w.astype(np.float64)
    np.testing.assert_allclose(res.outputs["y"], ref, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("race, hazard, where, earlier, needs", [
    (1, "read after write", "read_slot", "write_slot", "CrossCoreSetFlag<mode, PIPE_MTE3>"),
    (2, "write after read", "write_slot", "read_slot", "CrossCoreSetFlag<mode, PIPE_MTE2>"),
])
def test_a_matmul_racing_the_vector_cores_on_its_gm_operand_is_named(build, race, hazard, where, earlier, needs):
    """race 1: READY set after PIPE_V, so the Matmul may load the slot before the copy out lands;
    race 2: DONE set before the Matmul, so the AIVs may overwrite the slot while it is loaded."""
    res, _, _ = _vec_to_cube(build, race)
    d = res.error_detail
    assert res.error_kind == "missing_sync", res.stderr
    assert (d["hazard"], d["memory"], d["position"]) == (hazard, "GM", "workspace"), d
    assert d["where"] == f"vec_to_cube.cpp:{marker_line('vec_to_cube.cpp', where)}"
    assert d["earlier_where"] == f"vec_to_cube.cpp:{marker_line('vec_to_cube.cpp', earlier)}"
    assert needs in d["needs"], d


# ---------------------------------------------------------------------------------------------
# planted bugs
# ---------------------------------------------------------------------------------------------
BUGS = {  # which -> (kind reported, marker in bugs.cpp)
    1: ("over_allocation", "over_allocation"),
    2: ("queue_overflow", "queue_overflow"),
    3: ("empty_deque", "empty_deque"),
    4: ("deadlock", "deadlock"),
    5: ("misaligned", "misaligned"),
    6: ("queue_overflow", "enque_depth"),
    7: ("gm_out_of_bounds", "gm_out_of_bounds"),
    8: ("local_out_of_bounds", "local_out_of_bounds"),
    9: ("misaligned", "misaligned_address"),
    10: ("missing_sync", "missing_v_mte3"),
    11: ("missing_sync", "missing_v_s"),
    12: ("missing_sync", "missing_barrier"),
    13: ("missing_sync", "missing_mte2_v"),
    14: ("missing_sync", "missing_v_mte2"),
    15: ("missing_sync", "missing_s_v"),
}
# which -> (hazard, pipe of the racing access, pipe of the earlier one, the sync that orders them)
RACES = {
    10: ("read after write", "MTE3", "V", "SetFlag/WaitFlag<HardEvent::V_MTE3>"),
    11: ("read after write", "S", "V", "SetFlag/WaitFlag<HardEvent::V_S>"),
    12: ("read after write", "V", "V", "PipeBarrier<PIPE_V>()"),
    13: ("read after write", "V", "MTE2", "SetFlag/WaitFlag<HardEvent::MTE2_V>"),
    14: ("write after read", "MTE2", "V", "SetFlag/WaitFlag<HardEvent::V_MTE2>"),
    15: ("read after write", "V", "S", "SetFlag/WaitFlag<HardEvent::S_V>"),
}


def run_bugs(build, which: int, blocks: int = 2):
    r = build("bugs.cpp")
    n = 256 * blocks
    x = np.arange(n, dtype=np.float32).astype(np.float16)
    return run_kernel(r, {"x": x}, {"y": ((n,), "float16")}, args=["x", "y", which], block_dim=blocks, timeout=30)


def test_bug_kernel_without_bug_runs(build):
    res = run_bugs(build, 0)
    assert res.ok, res.error_detail
    x = np.arange(512, dtype=np.float32).astype(np.float16)
    np.testing.assert_array_equal(res.outputs["y"], (x + np.float16(1)).astype(np.float16))


@pytest.mark.parametrize("which", sorted(BUGS))
def test_planted_bug_is_reported_as_that_bug(build, which):
    kind, marker = BUGS[which]
    res = run_bugs(build, which)
    assert not res.ok
    assert res.error_kind == kind, res.stderr
    assert res.error_detail["where"] == f"bugs.cpp:{marker_line('bugs.cpp', marker)}"
    assert res.error_detail["block"] == 0 and res.error_detail["core"] == "AIV"


@pytest.mark.parametrize("which", sorted(RACES))
def test_a_race_between_pipes_names_both_accesses_and_the_missing_sync(build, which):
    hazard, pipe, earlier_pipe, needs = RACES[which]
    d = run_bugs(build, which).error_detail
    assert (d["hazard"], d["pipe"], d["earlier_pipe"], d["needs"]) == (hazard, pipe, earlier_pipe, needs), d
    assert d["earlier_where"].startswith("bugs.cpp:") and d["earlier_where"] != d["where"]
    assert needs in d["detail"]


def test_the_sync_each_race_asks_for_makes_it_run(build, emu_cache):
    """The fix each report names is enough: the same kernels with that sync added run clean."""
    src = (KERNELS / "bugs.cpp").read_text()
    fixes = {
        "  } else if (which != 10) {": "  } else {",
        "  if (which == 11) { half v = o.GetValue(0); (void)v; }":
            "  if (which == 11) { SetFlag<HardEvent::V_S>(1); WaitFlag<HardEvent::V_S>(1); half v = o.GetValue(0); (void)v; }",
        "  if (which == 12) Muls(o, o, half(2.0f), N);":
            "  if (which == 12) { PipeBarrier<PIPE_V>(); Muls(o, o, half(2.0f), N); }",
        "      DataCopy(t, xGm, N);\n      Adds(o, t, half(1.0f), N);":
            "      DataCopy(t, xGm, N);\n      SetFlag<HardEvent::MTE2_V>(1); WaitFlag<HardEvent::MTE2_V>(1);\n      Adds(o, t, half(1.0f), N);",
        "      Adds(o, t, half(1.0f), N);\n      DataCopy(t, xGm, N);":
            "      Adds(o, t, half(1.0f), N);\n      SetFlag<HardEvent::V_MTE2>(1); WaitFlag<HardEvent::V_MTE2>(1);\n      DataCopy(t, xGm, N);",
        "      t.SetValue(0, half(1.0f));":
            "      t.SetValue(0, half(1.0f)); SetFlag<HardEvent::S_V>(1); WaitFlag<HardEvent::S_V>(1);",
    }
    for old, new in fixes.items():
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    r = compile_kernel({"bugs.cpp": src}, "bugs.cpp", {}, emu_cache, opt="-O1")
    assert r.ok, r.error
    x = np.arange(512, dtype=np.float32).astype(np.float16)
    for which in sorted(RACES):
        res = run_kernel(r, {"x": x}, {"y": ((512,), "float16")}, args=["x", "y", which], block_dim=2, timeout=30)
        assert res.ok, (which, res.error_detail)


def test_over_allocation_names_numbers_and_buffers(build):
    d = run_bugs(build, 1).error_detail
    assert d["memory"] == "UB" and d["capacity"] == 192 * 1024
    assert d["used"] == 2 * 512 + 512 + 192 * 1024
    assert "VECIN 2x512 B" in d["buffers"] and "VECCALC 1x196608 B" in d["buffers"]
    assert d["detail"].startswith("UB 193.5 KiB > 192 KiB")


def test_missing_setflag_names_event_and_id(build):
    d = run_bugs(build, 4).error_detail
    assert d["event"] == "V_MTE3" and d["flag"] == 3 and d["wait"] == "WaitFlag"


def test_misaligned_copy_names_the_length(build):
    d = run_bugs(build, 5).error_detail
    assert d["bytes"] == 20 and d["count"] == 10


def test_missing_cross_core_set_is_a_deadlock_naming_the_flag(build):
    r = build("crosscore.cpp")
    cores, steps = 2, 4
    x = np.zeros((cores, steps, 16, 32), np.float16)
    w = np.zeros((32, 32), np.float16)
    res = run_kernel(r, {"x": x, "w": w}, {"y": ((cores, steps, 16, 32), "float32")},
                     args=["x", "w", "y", "workspace", steps, 1, 0], workspace_bytes=cores * 2 * 16 * 32 * 4,
                     block_dim=cores, timeout=30)
    assert res.error_kind == "deadlock", res.stderr
    waits = res.error_detail["waiting"]
    src = (KERNELS / "crosscore.cpp").read_text().splitlines()
    ready_line = next(i for i, s in enumerate(src, 1) if "CrossCoreWaitFlag(READY)" in s)
    # the AIC runs ahead through its ring and finishes; both AIVs of each core are left waiting on
    # READY (flag 3) for the step whose set was skipped, and nothing can set it any more
    assert {(w["core"], w["flag"], w["where"]) for w in waits} == {("AIV", 3, f"crosscore.cpp:{ready_line}")}
    assert len(waits) == 2 * cores
    assert res.error_detail["flag"] == 3 and res.error_detail["wait"] == "CrossCoreWaitFlag"


# ---------------------------------------------------------------------------------------------
# runner contract
# ---------------------------------------------------------------------------------------------
def test_compile_is_cached_by_source_hash(build, emu_cache):
    first = build("add.cpp")
    again = compile_kernel({"add.cpp": (KERNELS / "add.cpp").read_text()}, "add.cpp", {}, emu_cache, opt="-O1")
    assert again.ok and again.cached and again.path == first.path


def test_compile_error_is_returned_not_raised(emu_cache):
    src = 'extern "C" __global__ __aicore__ void k(GM_ADDR x) { undefined_call(x); }\n'
    r = compile_kernel({"k.cpp": src}, "k.cpp", {}, emu_cache, opt="-O0")
    assert not r.ok and "undefined_call" in r.error


def test_bad_runner_input_names_the_field(build):
    r = build("add.cpp")
    with pytest.raises(ForgeInputError, match="inputs.x"):
        run_kernel(r, {"x": np.zeros(8), "y": np.zeros(8, np.float16)}, {"z": ((8,), "float16")})
    with pytest.raises(ForgeInputError, match="main"):
        compile_kernel({"a.cpp": "int x;"}, "a.cpp", {}, None)


def test_bf16_helpers_round_trip():
    x = np.array([1.0, -2.5, 3.140625, 1e-3], np.float32)
    bits = f32_to_bf16_bits(x)
    assert bits.dtype == np.uint16
    np.testing.assert_allclose(bf16_bits_to_f32(bits), x, rtol=2 ** -8)


@pytest.mark.parametrize("b_nk", [0, 1])
def test_basic_cube_api_matmul(build, b_nk):
    """ND2NZ, LoadData (NZ->ZZ / NZ->ZN), Mmad and Fixpipe NZ2ND with the hardware's fractal formats."""
    r = build("cube_basic.cpp", {"B_NK": b_nk})
    rng = np.random.default_rng(4)
    M, N, K = 48, 32, 64
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K) if b_nk else (K, N)).astype(np.float16)
    res = run_kernel(r, {"a": a, "b": b}, {"c": ((M, N), "float32")}, block_dim=1)
    assert res.ok, res.error_detail
    bb = b.astype(np.float64).T if b_nk else b.astype(np.float64)
    np.testing.assert_allclose(res.outputs["c"], a.astype(np.float64) @ bb, rtol=1e-4, atol=1e-4)


def test_basic_cube_wrong_fractal_order_gives_wrong_result(emu_cache):
    """Loading A's NZ fractals sequentially into L0A (no per-row-block reorder) is not ZZ: wrong C."""
    good = (KERNELS / "cube_basic.cpp").read_text()
    src = good.replace(
        "LoadData(a2[i * K1 * FRAC], a1[i * FRAC], LoadData2DParams{0, (uint8_t)K1, (uint16_t)M1, 0, 0, false, 0});",
        "if (i == 0) LoadData(a2, a1, LoadData2DParams{0, (uint8_t)(M1 * K1), 1, 0, 0, false, 0});")
    assert src != good
    r = compile_kernel({"cube_wrong.cpp": src}, "cube_wrong.cpp", {}, emu_cache, opt="-O1")
    assert r.ok, r.error
    rng = np.random.default_rng(5)
    a = rng.standard_normal((48, 64)).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    res = run_kernel(r, {"a": a, "b": b}, {"c": ((48, 32), "float32")}, block_dim=1)
    assert res.ok
    assert not np.allclose(res.outputs["c"], a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("name", ["ascend910", "ascend910_93", "ascend910b1", "ascend910b2", "ascend910b3",
                                  "ascend910b4", "ascend950pr"])
def test_the_emulator_holds_kernels_to_the_targets_own_limits(name):
    """The emulator read a target's limit only under its own key names, which the target files
    do not use: every target was emulated with the 910B2's cores, flag ids and queue depth, and
    the UB without its reserve."""
    from forge.backends.ascend.emu.runner import emu_limits
    from forge.backends.ascend.hw import AscendHW
    from forge.targets import get_target

    hw = AscendHW(get_target(name))
    lim = emu_limits(get_target(name))
    assert lim["ub_bytes"] == hw.capacity("UB") and lim["l1_bytes"] == hw.capacity("L1")
    assert lim["ub_align"] == hw.align("UB") and lim["l0c_align"] == hw.align("L0C")
    assert lim["que_buffers_per_position"] == hw.queue_buffers_per_position
    assert lim["buffers_per_kernel"] == hw.buffers_per_kernel and lim["event_ids"] == hw.event_ids
    assert (lim["aic_cores"], lim["aiv_cores"]) == (hw.aic, hw.aiv)
    if "cross_core_flag_ids" in hw.target.details:
        assert lim["cross_flag_ids"] == hw.cross_core_flag_ids
        assert lim["cross_flag_max_pending"] == hw.cross_core_pending_max


def test_one_targets_limits_do_not_leak_into_the_defaults_or_the_next_target():
    """emu_limits overlaid a target on the cached defaults in place: every later call without a
    target (the hand-written kernels here) got the last target's UB less its reserve, and a target
    missing a key inherited the previous target's value."""
    from forge.backends.ascend.emu.runner import emu_limits
    from forge.targets import get_target

    before = emu_limits()
    for name in ["ascend950pr", "ascend910", "ascend910b2"]:
        emu_limits(get_target(name))
    assert emu_limits() == before and before["ub_bytes"] == 192 * 1024
    assert emu_limits(get_target("ascend910b2")) == emu_limits(get_target("ascend910b2"))
