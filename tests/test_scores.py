"""SOL score, HAP, fast_p, geomean and the cann-bench operator score on hand-computed cases."""
import math

import pytest

from forge.report import scores as S


def test_sol_score_anchor_points():
    # S = 0.5 at T_k = T_b, 1 at T_k = T_SOL (benchmark-formats.md §1.6).
    assert S.sol_score(10.0, 2.0, 10.0) == pytest.approx(0.5)
    assert S.sol_score(2.0, 2.0, 10.0) == pytest.approx(1.0)


def test_sol_score_hand_computed():
    # T_k=6, T_SOL=2, T_b=10: 1/(1+4/8) = 2/3.
    assert S.sol_score(6.0, 2.0, 10.0) == pytest.approx(2 / 3)
    # Slower than the baseline: T_k=26 -> 1/(1+24/8) = 0.25.
    assert S.sol_score(26.0, 2.0, 10.0) == pytest.approx(0.25)
    # Faster than SOL is not capped: T_k=1 -> 1/(1-1/8) = 8/7.
    assert S.sol_score(1.0, 2.0, 10.0) == pytest.approx(8 / 7)


def test_sol_score_edge_baseline_not_above_sol():
    # T_b - T_SOL <= 0: S = 1 if T_k <= T_SOL else 0.
    assert S.sol_score(2.0, 2.0, 2.0) == 1.0
    assert S.sol_score(1.5, 2.0, 1.0) == 1.0
    assert S.sol_score(2.5, 2.0, 1.0) == 0.0
    assert S.sol_score(2.000001, 2.0, 2.0) == 0.0


def test_sol_score_failed_candidate():
    assert S.sol_score(None, 2.0, 10.0) is None
    assert S.sol_score(float("nan"), 2.0, 10.0) is None


def test_hap_same_form_as_sol():
    # HAP = (Tb-Thw)/((Tc-Thw)+(Tb-Thw)): Tc=30, Thw=10, Tb=50 -> 40/(20+40) = 2/3.
    assert S.hap(30.0, 10.0, 50.0) == pytest.approx(2 / 3)
    assert S.hap(50.0, 10.0, 50.0) == pytest.approx(0.5)
    assert S.hap(10.0, 10.0, 50.0) == pytest.approx(1.0)
    assert S.hap(5.0, 10.0, 50.0) == pytest.approx(40 / 35)   # > 1, not capped


def test_hap_invalid_anchors_are_none():
    assert S.hap(30.0, 10.0, 10.0) is None      # T_base <= T_HW: no headroom
    assert S.hap(30.0, 10.0, 8.0) is None
    assert S.hap(None, 10.0, 50.0) is None
    assert S.hap(0.0, 10.0, 50.0) is None
    assert S.hap(30.0, None, 50.0) is None


def test_hap_missing_baseline_falls_back_to_10x_hw_or_10us():
    # seconds: T_HW = 3 us -> baseline max(30 us, 10 us) = 30 us; Tc = 16.5 us -> 27/(13.5+27) = 2/3.
    assert S.cann_baseline_fallback(3e-6) == pytest.approx(30e-6)
    assert S.hap(16.5e-6, 3e-6, None) == pytest.approx(2 / 3)
    # T_HW = 0.5 us -> floor 10 us; in microsecond units too.
    assert S.cann_baseline_fallback(0.5, unit_seconds=1e-6) == pytest.approx(10.0)
    assert S.hap(5.25, 0.5, None, unit_seconds=1e-6) == pytest.approx(9.5 / (4.75 + 9.5))


def test_fast_p_counts_failures_as_zero_and_includes_boundary():
    sp = [2.0, 1.0, 0.9, None]
    assert S.fast_p(sp, 1.0) == pytest.approx(0.5)
    assert S.fast_p(sp, 0.8) == pytest.approx(0.75)
    assert S.fast_p(sp, 1.2) == pytest.approx(0.25)
    assert S.fast_p([], 1.0) is None


def test_geomean_speedup_ignores_failures():
    assert S.geomean_speedup([2.0, 8.0, None]) == pytest.approx(4.0)
    assert S.geomean_speedup([None]) is None


def test_cann_operator_score_hand_computed():
    # compiled, 4 cases: passed HAP 0.5, passed HAP 1.0, failed, passed HAP None.
    cases = [(True, 0.5), (True, 1.0), (False, 0.9), (True, None)]
    per = ((0.3 + 0.25) + (0.3 + 0.5) + 0 + 0.3) / 4
    assert S.cann_operator_score(True, cases) == pytest.approx((0.2 + per) * 100)
    assert S.cann_operator_score(False, [(False, None)] * 3) == 0.0
    # Perfect: compiled, every case passed at HAP 1 -> (0.2 + 0.8) * 100 = 100.
    assert S.cann_operator_score(True, [(True, 1.0)] * 20) == pytest.approx(100.0)


def test_gated_mean():
    assert S.gated_mean([1.0, None, 0.5]) == pytest.approx(0.5)
    assert math.isclose(S.gated_mean([0.25]), 0.25)
