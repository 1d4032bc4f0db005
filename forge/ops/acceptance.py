"""A benchmark's own pass criterion, checked beside forge's bound on a bench case.

forge's check (Op.check) holds every checked value within its per-dtype bound of the float64
reference. A benchmark judges otherwise (benchmark-formats.md §5, "tolerance semantics differ"):
SOL-ExecBench passes a workload when a matched ratio of values is within `max_atol +
max_rtol·|ref|` (§1.5), cann-bench when the mean and max relative errors are under dtype
thresholds (§3.1). A bench case carries its benchmark's spec (TuneSettings.acceptance), and a
variant passes only when it meets both: what forge ranks as correct the benchmark would too.
cann-bench, where MERE/MARE over all values fail, judges each range of values (small values,
cancellation positions, the rest) by how many are off compared with its golden run on a CPU in the
output's dtype; forge stands in for that golden with the op's model of it (Op.same_dtype_rows) and
says so in every verdict that rests on it.
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
    if kind == "cann":
        unknown = sorted(set(spec) - {"kind", "inputs"})
        if unknown:
            raise ForgeInputError(f"{field}.{unknown[0]}", "not a cann-bench key; allowed: kind, inputs")
        ranges = spec.get("inputs")
        if ranges is not None and not (isinstance(ranges, list) and all(
                isinstance(r, list) and len(r) == 2 and all(isinstance(v, (int, float)) and np.isfinite(v) for v in r)
                and r[0] <= r[1] for r in ranges)):
            raise ForgeInputError(f"{field}.inputs", f"one [lo, hi] of finite numbers (lo <= hi) per input, got {ranges!r}")
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
    cann = _data()["cann"]
    t = cann["threshold"].get(dtype)
    if not t:
        return f"cann-bench: no threshold for {dtype}"
    inputs = ("; inputs uniform in " + ", ".join(f"[{lo:g}, {hi:g}]" for lo, hi in spec["inputs"])
              if spec.get("inputs") else "")
    return (f"cann-bench: MERE < {t:g} and MARE < {cann['mare_factor'] * t:g} over all values, else each of the small "
            f"values, cancellation positions and the rest at most {cann['ratio']}·max(count of its {dtype} CPU "
            f"golden, 1) off, that golden modeled by forge{inputs}")


def measures(spec: dict[str, Any] | None, dtype: str, got: np.ndarray, expected: np.ndarray,
             same_dtype: np.ndarray | None = None) -> dict[str, Any]:
    """The benchmark's own correctness numbers over the checked values, which a leaderboard row
    should show (benchmark-formats §5, item 3): SOL-ExecBench's matched ratio and largest error;
    cann-bench's MERE and MARE over all values, and per range (small, cancellation, normal) the
    values checked and how many are off, for the variant and for `same_dtype` (the golden run in
    the output's dtype; None: the golden rounded to it, which is off nowhere). Empty with no spec,
    no values, or a dtype the benchmark sets no threshold for."""
    if spec is None or got.size == 0:
        return {}
    if spec["kind"] == "sol":
        err = np.abs(got - expected)
        return {"matched_ratio": float(np.mean(err <= spec["max_atol"] + spec["max_rtol"] * np.abs(expected))),
                "max_error": float(err.max())}
    cann = _data()["cann"]
    t = cann["threshold"].get(dtype)
    if t is None:
        return {}
    from forge.ops.base import dtype_max, round_to_dtype     # forge.ops.base imports this module

    # [CB] compare.py: the float64 golden rounded to the output dtype is what both are compared with;
    # an inf on both sides is a match left out (of opposite signs, a failure), an inf on one side
    # only is taken as the dtype's largest value of its sign and compared as any other
    golden = round_to_dtype(expected, dtype).astype(np.float64)
    both_inf = np.isinf(got) & np.isinf(golden)
    inf_sign_errors = int(np.count_nonzero(both_inf & (np.sign(got) != np.sign(golden))))
    valid = ~both_inf & ~np.isnan(got) & ~np.isnan(golden)
    top = dtype_max(dtype)
    got, golden = np.clip(got[valid], -top, top), np.clip(golden[valid], -top, top)
    g = np.abs(golden)
    if not got.size:
        return {"inf_sign_errors": inf_sign_errors} if inf_sign_errors else {}
    err = np.abs(got - golden)
    rel = err / (g + cann["eps"])
    cpu = np.zeros_like(err) if same_dtype is None else np.abs(np.asarray(same_dtype, np.float64)[valid] - golden)
    cpu_rel = cpu / (g + cann["eps"])
    small = g < cann["small"][dtype]
    cancel = ~small & (g < cann["cancel_boundary"][dtype]) & (np.abs(got) < cann["cancel_zero"][dtype])
    normal = ~small & ~cancel
    mare_t = cann["mare_factor"] * t
    out: dict[str, Any] = {"mere": float(rel.mean()), "mare": float(rel.max()), "normal_checked": int(normal.sum())}
    if inf_sign_errors:
        out["inf_sign_errors"] = inf_sign_errors
    for name, region, off, cpu_off in (("small", small, err > cann["small_error"][dtype],
                                        cpu > cann["small_error"][dtype]),
                                       ("cancel", cancel, rel > mare_t, cpu_rel > mare_t),
                                       ("normal", normal, rel > mare_t, cpu_rel > mare_t)):
        if name != "normal":
            out[f"{name}_checked"] = int(region.sum())
        out[f"{name}_errors"] = int(np.count_nonzero(region & off))
        out[f"{name}_errors_cpu"] = int(np.count_nonzero(region & cpu_off))
    out["golden_same_dtype"] = "rounded" if same_dtype is None else "modeled"
    return out


RANGES = {"small": "small values", "cancel": "cancellation positions", "normal": "normal-range values"}


def _passed_outright(m: dict[str, Any], dtype: str) -> bool:
    """MERE and MARE over all values under the thresholds: cann-bench asks no range then."""
    cann = _data()["cann"]
    t = cann["threshold"][dtype]
    return m["mere"] < t and m["mare"] < cann["mare_factor"] * t


def _range_failures(m: dict[str, Any]) -> list[tuple[str, int, int]]:
    """The ranges cann-bench would fail, with the variant's count and its same-dtype golden's, after
    MERE/MARE over all values failed ([CB] compare.py: count_npu / max(count_cpu, 1) <= 2 in each
    range; the normal range fails on any error where the golden has none)."""
    ratio = _data()["cann"]["ratio"]
    out = []
    for name in ("normal", "cancel", "small"):
        n, cpu = m.get(f"{name}_errors", 0), m.get(f"{name}_errors_cpu", 0)
        failed = n > ratio * max(cpu, 1) or (name == "normal" and n > 0 and cpu == 0)
        if failed:
            out.append((name, n, cpu))
    return out


def _range_text(name: str, n: int, cpu: int, dtype: str) -> str:
    """One range's counts in words: how many values are off, and what off means there."""
    cann = _data()["cann"]
    bound = (f"by more than {cann['small_error'][dtype]:g}" if name == "small"
             else f"by more than {cann['mare_factor'] * cann['threshold'][dtype]:g} relative")
    return f"{n} {RANGES[name]} off {bound} against {cpu} for its {dtype} CPU golden"


def model_note(m: dict[str, Any], dtype: str) -> str | None:
    """A passed variant's verdict where it rests on forge's model of cann-bench's same-dtype CPU
    golden, said in words, else None: MERE/MARE over all values failed, and a range passed only
    because the modeled golden is off there too (more than `ratio` of the variant's values off).
    A verdict that holds with that golden off nowhere needs no note."""
    if (m.get("golden_same_dtype") != "modeled" or m.get("mere") is None
            or dtype not in _data()["cann"]["threshold"] or _passed_outright(m, dtype)):
        return None
    # the ranges that would fail against a golden off nowhere pass only because the model is off too
    leaning = _range_failures({**m, **{f"{name}_errors_cpu": 0 for name in RANGES}})
    if not leaning:
        return None
    return (f"cann-bench's range test passed on forge's model of its {dtype} CPU golden (values off, variant vs "
            "golden: " + ", ".join(f"{RANGES[name].split()[0]} {n} vs {m.get(f'{name}_errors_cpu', 0)}"
                                   for name, n, _ in leaning) + ")")


def violation(spec: dict[str, Any] | None, dtype: str, got: np.ndarray, expected: np.ndarray,
              same_dtype: np.ndarray | None = None) -> str | None:
    """Why the checked values fail the benchmark's criterion, or None (also with no spec). Values
    are the rows forge checked (all of them, or a sample of a large output)."""
    return judge(spec, dtype, measures(spec, dtype, got, expected, same_dtype))


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
    if m.get("inf_sign_errors"):
        return f"cann-bench's criterion: {m['inf_sign_errors']} values are inf of the opposite sign to its golden's"
    if m.get("mere") is None or _passed_outright(m, dtype):
        return None
    failures = _range_failures(m)
    if not failures:
        return None
    return (f"cann-bench's criterion: MERE {m['mere']:.3g} / MARE {m['mare']:.3g} over all values (needs < {t:g} / "
            f"< {cann['mare_factor'] * t:g}, {dtype}), and " + _range_text(*failures[0], dtype))
