"""A benchmark's own pass criterion, checked beside forge's bound on a bench case.

forge's check (Op.check) holds every checked value within its per-dtype bound of the float64
reference. A benchmark judges otherwise (benchmark-formats.md §5, "tolerance semantics differ"):
SOL-ExecBench passes a workload when a matched ratio of values is within `max_atol +
max_rtol·|ref|` (§1.5), cann-bench when the mean and max relative errors are under dtype
thresholds (§3.1). A bench case carries its benchmark's spec (TuneSettings.acceptance), and a
variant passes only when it meets both: what forge ranks as correct the benchmark would too.
cann-bench also holds small values to a count of errors against its own CPU golden in the same
dtype (§3.1); forge counts them and says when the count passes only if that golden errs as often.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from forge.errors import ForgeInputError
from forge.yamlio import load_yaml

KINDS = ("sol", "cann")
SOL_KEYS = ("max_atol", "max_rtol", "required_matched_ratio", "max_error_cap", "allow_negative_inf")


@lru_cache(maxsize=None)
def _data() -> dict[str, Any]:
    return load_yaml((Path(__file__).with_name("acceptance.yaml")).read_text())


def check_spec(spec: dict[str, Any] | None, field: str = "acceptance") -> None:
    """Refuse a spec this module cannot apply, naming what is wrong (before a run starts)."""
    if spec is None:
        return
    kind = spec.get("kind")
    if kind not in KINDS:
        raise ForgeInputError(f"{field}.kind", f"{kind!r} is not a benchmark criterion; allowed: {', '.join(KINDS)}")
    if kind == "sol":
        unknown = sorted(set(spec) - {"kind", *SOL_KEYS})
        if unknown:
            raise ForgeInputError(f"{field}.{unknown[0]}", f"not a SOL-ExecBench tolerance key; allowed: "
                                                           f"{', '.join(SOL_KEYS)}")
        for k in ("max_atol", "max_rtol", "required_matched_ratio"):
            if not isinstance(spec.get(k), (int, float)) or spec[k] < 0:
                raise ForgeInputError(f"{field}.{k}", f"a number >= 0, got {spec.get(k)!r}")


def describe(spec: dict[str, Any] | None, dtype: str) -> str:
    """The criterion in words, for a board's tolerance_applied ("" for none, or one not understood)."""
    if not isinstance(spec, dict) or spec.get("kind") not in KINDS:
        return ""
    if spec["kind"] == "sol":
        cap = f", max |error| <= {spec['max_error_cap']:g}" if spec.get("max_error_cap") is not None else ""
        return (f"SOL-ExecBench: {spec['required_matched_ratio']:g} of values within {spec['max_atol']:g} + "
                f"{spec['max_rtol']:g}·|ref|{cap}")
    t = _data()["cann"]["threshold"].get(dtype)
    return (f"cann-bench: MERE < {t:g}, MARE < {_data()['cann']['mare_factor'] * t:g} (normal range); "
            f"small-value errors counted, not judged (that needs cann-bench's CPU golden)" if t
            else f"cann-bench: no threshold for {dtype}")


def measures(spec: dict[str, Any] | None, dtype: str, got: np.ndarray, expected: np.ndarray) -> dict[str, Any]:
    """The benchmark's own correctness numbers over the checked values, which a leaderboard row
    should show (benchmark-formats §5, item 3): SOL-ExecBench's matched ratio and largest error;
    cann-bench's MERE and MARE in the normal range and its small-value count. Empty with no spec,
    no values, or a dtype the benchmark sets no threshold for."""
    if spec is None or got.size == 0:
        return {}
    err = np.abs(got - expected)
    if spec["kind"] == "sol":
        return {"matched_ratio": float(np.mean(err <= spec["max_atol"] + spec["max_rtol"] * np.abs(expected))),
                "max_error": float(err.max())}
    cann = _data()["cann"]
    if cann["threshold"].get(dtype) is None:
        return {}
    normal = np.abs(expected) >= cann["small"][dtype]
    out: dict[str, Any] = {"normal_checked": int(normal.sum()), "mere": None, "mare": None,
                           "small_checked": int((~normal).sum()),
                           "small_errors": int(np.count_nonzero(err[~normal] > cann["small_error"][dtype]))}
    if normal.any():
        rel = err[normal] / (np.abs(expected[normal]) + cann["eps"])
        out |= {"mere": float(rel.mean()), "mare": float(rel.max())}
    return out


def small_value_note(m: dict[str, Any], dtype: str) -> str | None:
    """What cann-bench's small-value test would make of counted errors, or None when it passes them
    whatever its CPU golden. The test allows `small_ratio`·max(count_cpu, 1) errors, count_cpu being
    its same-dtype CPU golden's count. A value rounded correctly to the dtype is off by at most half
    an ulp, under 2^-17 throughout each small range (fp16 below 2^-11: ulp 2^-22; bf16 below 2^-8:
    ulp 2^-16; fp32 below 2^-14: ulp 2^-38), never above `small_error`; so count_cpu may be 0 and
    only `small_ratio` errors are sure to pass, while more pass only if the golden errs as often."""
    n = m.get("small_errors")
    cann = _data()["cann"]
    if n is None or n <= cann["small_ratio"]:
        return None
    return (f"cann-bench's small-value test: {n} of {m['small_checked']} checked values below "
            f"{cann['small'][dtype]:g} are off by more than {cann['small_error'][dtype]:g}; it passes only if its "
            f"{dtype} CPU golden is off on at least {-(-n // cann['small_ratio'])} of them, which forge cannot compute")


def violation(spec: dict[str, Any] | None, dtype: str, got: np.ndarray, expected: np.ndarray) -> str | None:
    """Why the checked values fail the benchmark's criterion, or None (also with no spec). Values
    are the rows forge checked (all of them, or a sample of a large output). cann-bench's
    small-value test is counted (measures) and not judged: it needs a golden forge does not have."""
    return judge(spec, dtype, measures(spec, dtype, got, expected))


def judge(spec: dict[str, Any] | None, dtype: str, m: dict[str, Any]) -> str | None:
    """violation() from the numbers measures() took."""
    if spec is None or not m:
        return None
    if spec["kind"] == "sol":
        if m["matched_ratio"] < spec["required_matched_ratio"]:
            return (f"SOL-ExecBench's criterion: {m['matched_ratio']:.4f} of checked values within {spec['max_atol']:g} + "
                    f"{spec['max_rtol']:g}·|expected|, it requires {spec['required_matched_ratio']:g}")
        cap = spec.get("max_error_cap")
        if cap is not None and m["max_error"] > cap:
            return f"SOL-ExecBench's criterion: max |error| {m['max_error']:.4g} above its cap {cap:g}"
        return None
    cann = _data()["cann"]
    t = cann["threshold"][dtype]
    if m["mere"] is None:
        return None
    if m["mere"] >= t:
        return f"cann-bench's criterion: MERE {m['mere']:.3g} not below {t:g} ({dtype})"
    if m["mare"] >= cann["mare_factor"] * t:
        return f"cann-bench's criterion: MARE {m['mare']:.3g} not below {cann['mare_factor'] * t:g} ({dtype})"
    return None
