"""A benchmark's own pass criterion, checked beside forge's bound on a bench case.

forge's check (Op.check) holds every checked value within its per-dtype bound of the float64
reference. A benchmark judges otherwise (benchmark-formats.md §5, "tolerance semantics differ"):
SOL-ExecBench passes a workload when a matched ratio of values is within `max_atol +
max_rtol·|ref|` (§1.5), cann-bench when the mean and max relative errors are under dtype
thresholds (§3.1). A bench case carries its benchmark's spec (TuneSettings.acceptance), and a
variant passes only when it meets both: what forge ranks as correct the benchmark would too.
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
    return (f"cann-bench: MERE < {t:g}, MARE < {_data()['cann']['mare_factor'] * t:g} (normal range)" if t
            else f"cann-bench: no threshold for {dtype}")


def violation(spec: dict[str, Any] | None, dtype: str, got: np.ndarray, expected: np.ndarray) -> str | None:
    """Why the checked values fail the benchmark's criterion, or None (also with no spec). Values
    are the rows forge checked (all of them, or a sample of a large output)."""
    if spec is None or got.size == 0:
        return None
    err = np.abs(got - expected)
    if spec["kind"] == "sol":
        matched = float(np.mean(err <= spec["max_atol"] + spec["max_rtol"] * np.abs(expected)))
        if matched < spec["required_matched_ratio"]:
            return (f"SOL-ExecBench's criterion: {matched:.4f} of checked values within {spec['max_atol']:g} + "
                    f"{spec['max_rtol']:g}·|expected|, it requires {spec['required_matched_ratio']:g}")
        cap = spec.get("max_error_cap")
        if cap is not None and float(err.max()) > cap:
            return f"SOL-ExecBench's criterion: max |error| {float(err.max()):.4g} above its cap {cap:g}"
        return None
    cann = _data()["cann"]
    t = cann["threshold"].get(dtype)
    if t is None:
        return None
    normal = np.abs(expected) >= cann["small"][dtype]
    if not normal.any():
        return None
    rel = err[normal] / (np.abs(expected[normal]) + cann["eps"])
    mere, mare = float(rel.mean()), float(rel.max())
    if mere >= t:
        return f"cann-bench's criterion: MERE {mere:.3g} not below {t:g} ({dtype})"
    if mare >= cann["mare_factor"] * t:
        return f"cann-bench's criterion: MARE {mare:.3g} not below {cann['mare_factor'] * t:g} ({dtype})"
    return None
