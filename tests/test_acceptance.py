"""A benchmark's own pass criterion, checked beside forge's bound (forge/ops/acceptance.py)."""
from __future__ import annotations

import numpy as np
import pytest

from forge.bench.cases import BenchCase
from forge.bench.runner import acceptance_of, settings_for
from forge.config import TuneSettings
from forge.errors import ForgeInputError
from forge.ops import acceptance, get_op
from forge.ops.base import dtype_max, round_to_dtype

SOL = {"kind": "sol", "max_atol": 1e-2, "max_rtol": 1e-2, "required_matched_ratio": 0.99, "max_error_cap": None}


def test_sol_needs_its_matched_ratio():
    """benchmark-formats §1.5: a workload passes when the share of values within max_atol +
    max_rtol·|ref| reaches required_matched_ratio, and below max_error_cap where one is set."""
    ref = np.linspace(-1, 1, 1000)
    assert acceptance.violation(SOL, "bfloat16", ref + 0.005, ref) is None
    off = ref.copy()
    off[:20] += 0.05                                        # 2 % of values out: 0.98 < 0.99
    why = acceptance.violation(SOL, "bfloat16", off, ref)
    assert why == "SOL-ExecBench's criterion: 0.9800 of checked values within 0.01 + 0.01·|expected|, it requires 0.99"
    off = ref.copy()
    off[:5] += 0.05                                         # 0.995 matched: passes the ratio, not a cap
    assert acceptance.violation(SOL, "bfloat16", off, ref) is None
    assert "above its cap 0.02" in acceptance.violation({**SOL, "max_error_cap": 0.02}, "bfloat16", off, ref)


def test_cann_bench_needs_mere_and_mare_under_its_thresholds():
    """benchmark-formats §3.1, [CB] compare.py: MERE < T and MARE < 10·T over all values (fp16
    T = 2^-10) passes outright; past that, values more than 10·T off in the normal range fail where
    the same-dtype golden (here the golden rounded, off nowhere) has none."""
    ref = round_to_dtype(np.linspace(0.5, 1.5, 1000), "float16").astype(np.float64)
    assert acceptance.violation({"kind": "cann"}, "float16", ref * (1 + 2 ** -12), ref) is None
    mean_off = ref * (1 + 2 ** -9)                          # MERE 2^-9: over T, yet nothing 10·T off
    assert acceptance.violation({"kind": "cann"}, "float16", mean_off, ref) is None
    one = ref.copy()
    one[0] *= 1.02                                          # one value 2 % off: MARE over 10·T
    why = acceptance.violation({"kind": "cann"}, "float16", one, ref)
    assert why.startswith("cann-bench's criterion: MERE 2e-05 / MARE 0.02 over all values (needs < 0.000976562 / "
                          "< 0.00976562, float16), and 1 normal-range values off by more than 0.00976562 relative "
                          "against 0 for its float16 CPU golden"), why
    same = one.copy()                                       # a same-dtype golden off there too: passes
    assert acceptance.violation({"kind": "cann"}, "float16", one, ref, same) is None
    three = one.copy()
    three[1:3] *= 1.02                                      # 3 off where the golden is off on 1: 3 > 2·1
    assert "3 normal-range values off by more than 0.00976562 relative against 1" in acceptance.violation(
        {"kind": "cann"}, "float16", three, ref, same)
    tiny = np.full(10, 1e-5)
    assert acceptance.violation({"kind": "cann"}, "float16", tiny * 1.5, tiny) is None   # off by < 2^-16


def test_cann_bench_takes_infs_as_its_compare_does():
    """[CB] compare.py: an inf on both sides, of one sign, is a match left out of MERE/MARE; an inf
    on one side only is taken as the dtype's largest value of its sign and compared (an output
    saturated at 65504 where the golden cast to float16 is inf passes, an inf where the golden is
    1.0 does not); infs of opposite signs fail."""
    ref = np.concatenate([np.linspace(0.5, 1.5, 100), [7e4, -7e4]])      # the last two overflow float16
    got = round_to_dtype(ref, "float16").astype(np.float64)
    assert np.isinf(got[-2:]).all()
    cann = {"kind": "cann"}
    assert acceptance.violation(cann, "float16", got, ref) is None
    assert acceptance.measures(cann, "float16", got, ref)["normal_checked"] == 100
    saturated = got.copy()
    saturated[-2:] = [65504.0, -65504.0]
    assert acceptance.violation(cann, "float16", saturated, ref) is None
    stray = got.copy()
    stray[0] = np.inf                                                    # golden 0.5: 65504 is far off
    assert "1 normal-range values off" in acceptance.violation(cann, "float16", stray, ref)
    flipped = got.copy()
    flipped[-1] = np.inf
    assert acceptance.violation(cann, "float16", flipped, ref) == (
        "cann-bench's criterion: 1 values are inf of the opposite sign to its golden's")


def test_cann_bench_judges_cancellation_positions_by_its_same_dtype_golden():
    """[CB] compare.py: a value whose golden is below 2^-5 (fp16) and not small, where the variant
    reads below 2^-5 too, is a cancellation position: its relative errors are judged by their count
    against the same-dtype golden's (at most 2·max(count, 1)), not by MARE."""
    ref = np.concatenate([np.linspace(0.5, 1.5, 1000), np.full(10, 1e-3)])
    got = round_to_dtype(ref, "float16").astype(np.float64)
    got[1000:] += 5e-5                                      # 5 % off: MARE fails, all in cancellation
    m = acceptance.measures({"kind": "cann"}, "float16", got, ref)
    assert (m["cancel_checked"], m["cancel_errors"], m["cancel_errors_cpu"], m["normal_errors"]) == (10, 10, 0, 0)
    assert "10 cancellation positions off" in acceptance.judge({"kind": "cann"}, "float16", m)
    same = got.copy()                                       # its golden off on all 10 as well: passes
    m = acceptance.measures({"kind": "cann"}, "float16", got, ref, same)
    assert m["cancel_errors_cpu"] == 10 and acceptance.judge({"kind": "cann"}, "float16", m) is None
    same[1005:] = ref[1005:]                                # off on 5: 10 <= 2·5 passes
    m = acceptance.measures({"kind": "cann"}, "float16", got, ref, same)
    assert m["cancel_errors_cpu"] == 5 and acceptance.judge({"kind": "cann"}, "float16", m) is None
    same[1004] = ref[1004]                                  # off on 4: 10 > 2·4 fails
    m = acceptance.measures({"kind": "cann"}, "float16", got, ref, same)
    assert "10 cancellation positions off" in acceptance.judge({"kind": "cann"}, "float16", m)
    assert acceptance.model_note(acceptance.measures({"kind": "cann"}, "float16", got, ref, got), "float16") == (
        "cann-bench's range test passed on forge's model of its float16 CPU golden (values off, variant vs golden: "
        "cancellation 10 vs 10)")


def test_attention_fp16_passes_cann_bench_only_against_its_rounding_golden():
    """cann-bench's gqa golden run in float16 rounds its scores and probabilities, so it is off at
    thousands of near-zero outputs; an output of that same computation passes, while without a
    same-dtype golden (off nowhere) it would fail, as every fp16 attention did before."""
    from dataclasses import replace
    op = get_op("attention")
    p = replace(op.problem({"B": 1, "Hq": 2, "Hkv": 1, "Sq": 64, "Skv": 128, "D": 64}, "float16", {"causal": True}),
                acceptance={"kind": "cann"})
    inputs = op.make_inputs(p, 0)
    rows = np.arange(op.rows(p)[0])
    ref = op.reference(p, inputs).reshape(len(rows), -1)
    same = op.same_dtype_rows(p, inputs, rows, ref)
    assert np.all(same == round_to_dtype(same, "float16"))
    m = op.check(p, inputs, same.reshape(op.output(p).shape)).as_dict()
    assert m["criterion"]["golden_same_dtype"] == "modeled" and m["criterion"]["mare"] > 0.1
    assert m["criterion"]["cancel_errors"] == m["criterion"]["cancel_errors_cpu"] > 10
    assert acceptance.violation({"kind": "cann"}, "float16", same, ref, same) is None
    assert "cancellation positions off" in acceptance.violation({"kind": "cann"}, "float16", same, ref)


def test_a_kernel_within_forges_bound_fails_the_benchmarks_criterion():
    """An rmsnorm output 0.015 off everywhere is within forge's bfloat16 bound (1.6e-2 + 1.6e-2·|y|)
    but leaves most values outside SOL-ExecBench's default 1e-2 + 1e-2·|y|: with the case's criterion
    on the problem, the check fails it and says whose criterion; without, it passes."""
    op = get_op("rmsnorm")
    p = op.problem({"M": 7, "N": 4096}, "bfloat16")
    inputs = op.make_inputs(p, 0)
    off = op.reference(p, inputs) + 0.015
    assert op.check(p, inputs, off).ok
    from dataclasses import replace
    m = op.check(replace(p, acceptance=SOL), inputs, off)
    assert not m.ok and m.reason.startswith("SOL-ExecBench's criterion:"), m.reason
    q = replace(p, acceptance=SOL)
    assert op.check(q, inputs, round_to_dtype(op.reference(q, inputs), "bfloat16")).ok
    assert q == p and q.key() == p.key()              # how it is judged is no part of what is computed


def test_a_bench_case_carries_its_benchmarks_criterion_into_the_run(tmp_path):
    sol = BenchCase("sol_execbench", "rmsnorm_h4096", "x", "u-1", "rmsnorm", {"M": 7, "N": 4096}, "bfloat16",
                    tolerance={"max_atol": 1e-3, "max_rtol": 1e-3, "required_matched_ratio": 0.99,
                               "max_error_cap": None, "allow_negative_inf": False})
    s = settings_for(TuneSettings, sol, "cpu", tmp_path, 2, {})
    assert s.acceptance == {"kind": "sol", "max_atol": 1e-3, "max_rtol": 1e-3, "required_matched_ratio": 0.99,
                            "max_error_cap": None, "allow_negative_inf": False}
    cann = BenchCase("cannbench", "rms_norm", "x", "1", "rmsnorm", {"M": 7, "N": 4096}, "float16",
                     tolerance={"kind": "cann-bench MERE/MARE", "dtype": "float16"})
    assert acceptance_of(cann) == {"kind": "cann"}
    with pytest.raises(ValueError, match="acceptance.kind: 'fib' is not a benchmark criterion; allowed: sol, cann"):
        TuneSettings(op="softmax", shape={"M": 8, "N": 64}, acceptance={"kind": "fib"})
    with pytest.raises(ForgeInputError, match="acceptance.max_atol: a number >= 0"):
        acceptance.check_spec({"kind": "sol", "max_atol": "x", "max_rtol": 0, "required_matched_ratio": 1})


def test_cann_bench_numbers_are_recorded_per_range():
    """benchmark-formats §5 item 3: a row shows MERE/MARE and, per range, how many values are off.
    cann-bench allows 2·max(count_cpu, 1) small values off by more than 2^-16 (fp16); a correctly
    rounded value never is, so 2 pass with a golden off nowhere and 3 do not."""
    cann = {"kind": "cann"}
    ref = np.concatenate([np.linspace(0.5, 1.5, 100), np.full(10, 1e-4)])
    got = ref.copy()
    got[:100] *= 1 + 2 ** -12
    m = acceptance.measures(cann, "float16", got, ref)
    assert (m["normal_checked"], m["small_checked"], m["small_errors"], m["cancel_checked"]) == (100, 10, 0, 0)
    assert m["mere"] < 2 ** -11 and m["golden_same_dtype"] == "rounded"
    assert acceptance.model_note(m, "float16") is None
    got[100:102] += 2e-5                                    # two small values off by more than 2^-16
    assert acceptance.violation(cann, "float16", got, ref) is None
    got[102] += 2e-5
    m = acceptance.measures(cann, "float16", got, ref)
    assert m["small_errors"] == 3 and m["small_errors_cpu"] == 0
    assert "3 small values off by more than 1.52588e-05 against 0" in acceptance.violation(cann, "float16", got, ref)
    rounded = round_to_dtype(np.linspace(-2 ** -8, 2 ** -8, 4001), "bfloat16").astype(np.float64)
    assert acceptance.measures(cann, "bfloat16", rounded, np.linspace(-2 ** -8, 2 ** -8, 4001))["small_errors"] == 0
    assert "that golden modeled by forge" in acceptance.describe(cann, "float16")
    sol = acceptance.measures(SOL, "bfloat16", ref + 0.005, ref)
    assert sol == {"matched_ratio": 1.0, "max_error": pytest.approx(0.005)}


def test_a_checked_variant_carries_the_benchmarks_numbers():
    """Op.check keeps the criterion's numbers in the record's errors, where the board and the SOL
    trace read them; without a criterion there are none."""
    from dataclasses import replace
    op = get_op("rmsnorm")
    p = op.problem({"M": 7, "N": 256}, "float16")
    inputs = op.make_inputs(p, 0)
    out = round_to_dtype(op.reference(p, inputs), "float16")
    assert "criterion" not in op.check(p, inputs, out).as_dict()
    m = op.check(replace(p, acceptance={"kind": "cann"}), inputs, out)
    c = m.as_dict()["criterion"]
    assert m.ok and c["normal_checked"] + c["small_checked"] + c["cancel_checked"] == 7 * 256
    assert m.as_dict()["criterion"]["mere"] < 2 ** -10


def test_a_cann_bench_gqa_case_passes_on_the_ascend_emulator(tmp_path):
    """The whole path: a float16 causal gqa case tuned for Ascend, each variant run on the CPU
    emulator and judged by cann-bench's rule with forge's model of its float16 golden. Before that
    model every fp16 attention variant was recorded incorrect (MARE ~0.1 at near-zero outputs), so
    a `forge bench --suite cannbench` left all 20 gqa cases without a result."""
    from forge.bench.board import build_board
    from forge.bench.cases import Suite
    from forge.bench.runner import run_bench

    case = BenchCase("cannbench", "gqa", "tasks/level4/gqa", "1", "attention",
                     {"B": 1, "Hq": 4, "Hkv": 1, "Sq": 128, "Skv": 128, "D": 128}, "float16", {"causal": True},
                     tolerance={"kind": "cann-bench MERE/MARE", "dtype": "float16"})
    run_bench(Suite("t", "one gqa case", [case], []), "ascend910b2", tmp_path, budget_per_case=1,
              options={"bank": False, "top_k": 0})
    row = build_board(tmp_path)["cases"][0]
    assert row["status"] == "PASSED", row["reason"]
    criterion = row["errors"]["criterion"]
    assert criterion["golden_same_dtype"] == "modeled" and criterion["cancel_checked"] > 0
    assert row["criterion_note"].startswith("cann-bench's range test passed on forge's model")
    # drawn as cann-bench draws them (q in [-1, 1], k and v in [0, 1]) the outputs are averages of
    # positive values, rarely near zero: MERE/MARE over all values pass, and no note is needed
    drawn = BenchCase(**{**case.as_dict(), "case_id": "2", "tolerance": {**case.tolerance,
                                                                          "inputs": [[-1, 1], [0, 1], [0, 1]]}})
    run_bench(Suite("t", "one gqa case", [drawn], []), "ascend910b2", tmp_path / "drawn", budget_per_case=1,
              options={"bank": False, "top_k": 0})
    row = build_board(tmp_path / "drawn")["cases"][0]
    assert row["status"] == "PASSED" and row["criterion_note"] is None
    assert row["errors"]["criterion"]["mare"] < 10 * 2 ** -10 and row["errors"]["criterion"]["cancel_errors"] == 0


def test_cann_bench_value_ranges_are_read_as_cann_bench_reads_them():
    """[CB] data_generator.py: one [lo, hi] is the first input's and the others draw from (0, 1); a
    list of ranges is per input, its last repeated; a bound is clamped to the dtype's finite range
    (`_gen_float`), so [-inf, inf] spans every finite value; a NaN bound cannot be drawn."""
    from forge.bench.importers import cann_input_ranges

    assert cann_input_ranges([-1, 1], 3) == [[-1.0, 1.0], [0.0, 1.0], [0.0, 1.0]]
    assert cann_input_ranges([[-2, 2], [0, 5]], 3) == [[-2.0, 2.0], [0.0, 5.0], [0.0, 5.0]]
    assert cann_input_ranges([0, 0], 2) == [[0.0, 0.0], [0.0, 1.0]]
    inf = float("inf")
    assert cann_input_ranges([-inf, inf], 2, "float16") == [[-65504.0, 65504.0], [0.0, 1.0]]
    assert cann_input_ranges([-inf, inf], 1, "bfloat16") == [[-3.3895313892515355e38, 3.3895313892515355e38]]
    assert cann_input_ranges([-1e6, 2], 1, "float16") == [[-65504.0, 2.0]]
    assert cann_input_ranges([-inf, inf], 1) == [[-float(np.finfo(np.float32).max), float(np.finfo(np.float32).max)]]
    assert cann_input_ranges([float("nan"), float("nan")], 2) is None
    assert cann_input_ranges(["nan", "nan"], 2) is None
    assert cann_input_ranges([1, -1], 2) is None             # no uniform draw: forge's inputs, said in notes


def test_a_cann_bench_case_draws_its_inputs_from_its_value_range():
    """The suite's gqa case 1 (value_range [-1, 1]): q uniform in [-1, 1], k and v in [0, 1], carried
    by the case's criterion into every check; a problem without it keeps forge's normal inputs."""
    from dataclasses import replace

    from forge.bench.suites import load_suite

    case = next(c for c in load_suite("cannbench").cases if c.source_name == "gqa" and c.case_id == "1")
    spec = acceptance_of(case)
    assert spec == {"kind": "cann", "inputs": [[-1.0, 1.0], [0.0, 1.0], [0.0, 1.0]]}
    op = get_op("attention")
    p = op.problem({"B": 1, "Hq": 2, "Hkv": 1, "Sq": 64, "Skv": 64, "D": 64}, "float16")
    drawn = op.make_inputs(replace(p, acceptance=spec), 0)
    assert drawn["q"].min() < -0.9 and drawn["q"].max() > 0.9
    assert 0 <= drawn["k"].min() and drawn["v"].max() <= 1 and drawn["v"].min() < 0.1
    assert np.all(drawn["q"] == round_to_dtype(drawn["q"], "float16"))
    assert op.make_inputs(p, 0)["k"].min() < -1                  # forge's own: normal
    with pytest.raises(ForgeInputError, match="acceptance.inputs: one \\[lo, hi\\]"):
        acceptance.check_spec({"kind": "cann", "inputs": [[1, 0]]})
    with pytest.raises(ForgeInputError, match="acceptance.range: not a cann-bench key"):
        acceptance.check_spec({"kind": "cann", "range": [0, 1]})


def test_a_cann_bench_inf_range_draws_every_finite_value_and_a_nan_range_keeps_forges_inputs():
    """The suite's swi_glu case 12 ([-inf, inf], bfloat16) draws over bfloat16's whole finite range,
    every value finite and exact in bfloat16; case 13 ([nan, nan]) keeps forge's inputs and says why."""
    from dataclasses import replace

    from forge.bench.suites import load_suite

    cases = {c.case_id: c for c in load_suite("cannbench").cases if c.source_name == "swi_glu"}
    spec = acceptance_of(cases["12"])
    top = dtype_max("bfloat16")
    assert spec == {"kind": "cann", "inputs": [[-top, top]]}
    op = get_op("swiglu")
    p = replace(op.problem({"M": 64, "N": 64}, "bfloat16"), acceptance=spec)
    x = op.make_inputs(p, 0)["x"]
    assert np.isfinite(x).all() and np.abs(x).max() > 0.9 * top and np.abs(x).min() < 0.1 * top
    assert np.all(x == round_to_dtype(x, "bfloat16"))
    assert acceptance_of(cases["13"]) == {"kind": "cann"}
    assert any("NaN bound" in n for n in cases["13"].notes)
