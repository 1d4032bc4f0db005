"""A benchmark's own pass criterion, checked beside forge's bound (forge/ops/acceptance.py)."""
from __future__ import annotations

import numpy as np
import pytest

from forge.bench.cases import BenchCase
from forge.bench.runner import acceptance_of, settings_for
from forge.config import TuneSettings
from forge.errors import ForgeInputError
from forge.ops import acceptance, get_op
from forge.ops.base import round_to_dtype

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
    """benchmark-formats §3.1: MERE < T and MARE < 10·T in the normal range, T by dtype (fp16 2^-10);
    values below the small-value bound are left to cann-bench's own small-value test."""
    ref = np.linspace(0.5, 1.5, 1000)
    assert acceptance.violation({"kind": "cann"}, "float16", ref * (1 + 2 ** -12), ref) is None
    why = acceptance.violation({"kind": "cann"}, "float16", ref * (1 + 2 ** -9), ref)
    assert why.startswith("cann-bench's criterion: MERE 0.00195 not below 0.000976562")
    one = ref.copy()
    one[0] *= 1.02                                          # one value 2 % off: MERE fine, MARE not
    assert acceptance.violation({"kind": "cann"}, "float16", one, ref).startswith("cann-bench's criterion: MARE")
    tiny = np.full(10, 1e-5)
    assert acceptance.violation({"kind": "cann"}, "float16", tiny * 3, tiny) is None     # small values only


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


def test_cann_bench_numbers_are_recorded_and_its_small_value_count_named():
    """benchmark-formats §5 item 3: a row shows MERE/MARE and the small-value count. cann-bench allows
    2·max(count_cpu, 1) small values off by more than 2^-16 (fp16); a correctly rounded value never
    is, so 2 pass whatever its CPU golden, and 3 pass only if that golden is off on 2 of them."""
    cann = {"kind": "cann"}
    ref = np.concatenate([np.linspace(0.5, 1.5, 100), np.full(10, 1e-4)])
    got = ref.copy()
    got[:100] *= 1 + 2 ** -12
    m = acceptance.measures(cann, "float16", got, ref)
    assert (m["normal_checked"], m["small_checked"], m["small_errors"]) == (100, 10, 0)
    assert m["mere"] == pytest.approx(2 ** -12) and m["mare"] == pytest.approx(2 ** -12)
    assert acceptance.small_value_note(m, "float16") is None
    got[100:102] += 2e-5                                    # two small values off by more than 2^-16
    assert acceptance.small_value_note(acceptance.measures(cann, "float16", got, ref), "float16") is None
    got[102] += 2e-5
    m = acceptance.measures(cann, "float16", got, ref)
    assert m["small_errors"] == 3 and acceptance.violation(cann, "float16", got, ref) is None   # counted, not judged
    assert acceptance.small_value_note(m, "float16") == (
        "cann-bench's small-value test: 3 of 10 checked values below 0.000488281 are off by more than 1.52588e-05; "
        "it passes only if its float16 CPU golden is off on at least 2 of them, which forge cannot compute")
    rounded = round_to_dtype(np.linspace(-2 ** -8, 2 ** -8, 4001), "bfloat16").astype(np.float64)
    assert acceptance.measures(cann, "bfloat16", rounded, np.linspace(-2 ** -8, 2 ** -8, 4001))["small_errors"] == 0
    assert "small-value errors counted, not judged" in acceptance.describe(cann, "float16")
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
    assert m.ok and m.as_dict()["criterion"]["normal_checked"] + m.as_dict()["criterion"]["small_checked"] == 7 * 256
    assert m.as_dict()["criterion"]["mere"] < 2 ** -10
