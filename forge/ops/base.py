"""The operator contract: shape schema, float64 reference, seeded inputs, cost, tolerance.

Every backend, generator and report reads an operator through this class only, so a shape rule
or a tolerance is written once.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from forge.errors import ForgeInputError, allowed_list
from forge.ops import acceptance
from forge.problem import Problem

# Per-dtype (atol, rtol) used when comparing against the float64 reference. fp16/bf16 kernels keep
# fp32 accumulators, so the bound is the input rounding (2^-11, 2^-8) amplified by a reduction.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-9),
    "float32": (2e-4, 2e-4),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
}
# A kernel that sums L products in a float32 accumulator is off by about u·√L times the size of
# its partial sums (the probabilistic rounding-error bound of Higham & Mary, SIAM J. Sci. Comput.
# 41(5), 2019; u = 2^-24). For forge's zero-mean inputs the partial sums are the size of the
# output's RMS (over every value checked, not one row: a matrix-vector product's row is a single
# value, which may have cancelled to near 0), so a value may also be off by
# ACCUMULATION_SIGMAS·u·√L·rms. Without this term float32 matmul at K=4096 missed the flat bound
# above on 12 of 8.4 M values on an H200 (sequential FMA per thread, every config alike);
# sequential float32 sums of that problem reach 3.9·u·√K·rms, of M=64, N=K=8192 4.4 (48 rows
# each), hence 8.
ACCUMULATION_SIGMAS = 8.0
FP32_UNIT_ROUNDOFF = 2.0 ** -24
DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int8": 1, "int32": 4}


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass
class ErrorMetrics:
    """Outcome of comparing an output with the reference; `ok` decides `incorrect`."""

    ok: bool
    max_abs: float
    max_rel: float
    nan_count: int
    checked: int
    reason: str = ""
    # the benchmark's own numbers over the checked values, when the problem carries its criterion
    # (forge/ops/acceptance.py measures)
    criterion: dict[str, Any] = field(default_factory=dict)
    # ±inf output values: each one checked, and exact only where the reference overflows the dtype
    inf_count: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"max_abs": self.max_abs, "max_rel": self.max_rel, "nan_count": self.nan_count,
                "inf_count": self.inf_count, "checked": self.checked,
                **({"criterion": self.criterion} if self.criterion else {})}


def round_to_dtype(x: np.ndarray, dtype: str) -> np.ndarray:
    """Round float values to what `dtype` can hold, returned as float32 (the exchange format); a
    value past the dtype's largest becomes inf of its sign, as a cast to it does."""
    with np.errstate(over="ignore"):
        x = np.asarray(x, dtype=np.float32)
        if dtype == "float16":
            return x.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        bits = x.view(np.uint32)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
        return rounded.view(np.float32)
    return x


def dtype_max(dtype: str) -> float:
    """The largest finite value `dtype` holds (bfloat16: float32's exponent, 8 significant bits)."""
    if dtype == "float16":
        return float(np.finfo(np.float16).max)
    if dtype == "bfloat16":
        return float(np.array(0x7F7F0000, dtype=np.uint32).view(np.float32))
    return float(np.finfo(np.float32).max)


def overflows_to(expected: np.ndarray, dtype: str) -> np.ndarray:
    """The float64 reference as `dtype` holds it where it cannot: ±inf past the dtype's largest
    value (a float16 product past 65504), NaN wherever the dtype holds the value. A kernel whose
    output is in `dtype` gives that same inf there, as cann-bench's golden, cast to the output
    dtype, does ([CB] src/kernel_eval/utils/compare.py)."""
    rounded = round_to_dtype(expected, dtype)
    return np.where(np.isinf(rounded), rounded, np.nan)


class Op(ABC):
    """One operator. Subclasses declare `name`, `description`, `dims` and attribute defaults."""

    name: str = ""
    description: str = ""
    dims: tuple[str, ...] = ()
    attr_defaults: dict[str, Any] = {}
    dtypes: tuple[str, ...] = ("float32", "float16", "bfloat16")
    # A small, typical shape used when `forge tune` is given no --shape.
    default_shape: dict[str, int] = {}
    # Largest number of output rows compared in full; above it a seeded sample of rows is checked
    # (the whole output is still scanned for NaN from the poisoned buffer).
    full_check_rows: int = 4096
    # The output's axis along which it sums to 1 (a softmax's), else None: checked beside each value.
    sums_to_one_axis: int | None = None

    # -- shape schema ----------------------------------------------------------------------
    def normalize(self, shape: dict[str, int], attrs: dict[str, Any]) -> tuple[dict[str, int], dict[str, Any]]:
        """Fill aliases and defaults, validate; raises ForgeInputError naming the dimension."""
        unknown = set(shape) - set(self.dims) - set(self.aliases())
        if unknown:
            raise ForgeInputError(f"shape.{sorted(unknown)[0]}",
                                  f"unknown dimension for {self.name}; {allowed_list(sorted(unknown)[0], self.dims)}")
        out = self.expand_aliases(dict(shape))
        for d in self.dims:
            if d not in out:
                raise ForgeInputError(f"shape.{d}", f"missing dimension for {self.name} (needs {', '.join(self.dims)})")
            v = out[d]
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ForgeInputError(f"shape.{d}", f"must be a positive integer, got {v!r}")
            out[d] = int(v)
        full_attrs = dict(self.attr_defaults)
        for k, v in attrs.items():
            if k not in self.attr_defaults:
                raise ForgeInputError(f"attrs.{k}", f"unknown attribute for {self.name}; {allowed_list(k, self.attr_defaults)}")
            full_attrs[k] = v
        self.validate(out, full_attrs)
        return {d: out[d] for d in self.dims}, full_attrs

    def aliases(self) -> tuple[str, ...]:
        return ()

    def expand_aliases(self, shape: dict[str, int]) -> dict[str, int]:
        return shape

    def validate(self, shape: dict[str, int], attrs: dict[str, Any]) -> None:
        """Cross-dimension rules; raise ForgeInputError."""

    def problem(self, shape: dict[str, int], dtype: str = "float32", attrs: dict[str, Any] | None = None) -> Problem:
        if dtype not in self.dtypes:
            raise ForgeInputError("dtype", f"{dtype!r} not supported by {self.name}; {allowed_list(dtype, self.dtypes)}")
        shape, full_attrs = self.normalize(shape, attrs or {})
        return Problem(self.name, shape, dtype, full_attrs)

    # -- tensors ------------------------------------------------------------------------------
    @abstractmethod
    def inputs(self, p: Problem) -> list[TensorSpec]:
        """Input tensors in the order kernels take them."""

    @abstractmethod
    def output(self, p: Problem) -> TensorSpec:
        """The output tensor; its last axis is a row, the leading axes index rows."""

    def make_inputs(self, p: Problem, seed: int) -> dict[str, np.ndarray]:
        """Seeded random inputs as float32 holding values exact in `p.dtype`: forge's own (normal,
        scaled per op), or, where a benchmark's criterion names each input's range (a cann-bench
        case's value_range, forge/ops/acceptance.py), uniform in it as that benchmark draws them."""
        rng = np.random.default_rng(seed)
        specs = self.inputs(p)
        ranges = (p.acceptance or {}).get("inputs")
        out = {}
        for i, spec in enumerate(specs):
            if ranges and len(ranges) == len(specs):
                lo, hi = ranges[i]
                x = rng.uniform(lo, hi, spec.shape).astype(np.float32)
            else:
                x = self.scale_input(spec.name, rng.standard_normal(spec.shape, dtype=np.float32))
            out[spec.name] = round_to_dtype(x, p.dtype)
        return out

    def scale_input(self, name: str, x: np.ndarray) -> np.ndarray:
        return x

    @abstractmethod
    def reference_rows(self, p: Problem, inputs: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        """float64 reference for the given flat output rows: array [len(rows), row_length]."""

    def rows(self, p: Problem) -> tuple[int, int]:
        shape = self.output(p).shape
        return int(np.prod(shape[:-1])), int(shape[-1])

    def reference(self, p: Problem, inputs: dict[str, np.ndarray]) -> np.ndarray:
        n_rows, _ = self.rows(p)
        return self.reference_rows(p, inputs, np.arange(n_rows)).reshape(self.output(p).shape)

    def check(self, p: Problem, inputs: dict[str, np.ndarray], output: np.ndarray, seed: int = 0) -> ErrorMetrics:
        """Compare `output` with the float64 reference at the dtype's tolerance."""
        spec = self.output(p)
        out = np.asarray(output, dtype=np.float64).reshape(spec.shape)
        n_rows, row_len = self.rows(p)
        flat = out.reshape(n_rows, row_len)
        # NaN is the poison a run's outputs start as (an element left unwritten) or an invalid
        # operation; ±inf is an overflow, right only where the reference overflows the dtype too
        nan_count = int(np.count_nonzero(np.isnan(flat)))
        infs = np.isinf(flat)
        inf_rows = np.flatnonzero(infs.any(axis=1))
        if n_rows <= self.full_check_rows:
            rows = np.arange(n_rows)
        else:
            # the first and last rows always (a tail is where a tiling goes wrong), the rest drawn,
            # and every row holding an inf, so each inf is judged against the reference
            rng = np.random.default_rng(seed)
            inner = rng.choice(np.arange(1, n_rows - 1), size=self.full_check_rows - 2, replace=False)
            rows = np.unique(np.concatenate([[0, n_rows - 1], inner, inf_rows]))
        # One BLAS thread: on the CPU target the next kernel timed shares this machine's cores, and
        # OpenBLAS workers keep spinning for a while after a call returns, long enough to land in
        # that kernel's first repetitions. The demo's finalists timed back to back (2 cores, runs of
        # five): max/min above 1.5 in 89-97 % of runs with the reference on both cores, 0-8 % with
        # it on one, as with a pause before each run (benchmarks/host_timing_noise.py --run). The
        # reference takes 59 ms per check on one thread instead of 57 on two.
        with threadpool_limits(limits=1, user_api="blas"):
            expected = self.reference_rows(p, inputs, rows)
        got = flat[rows]
        atol, _ = self.tolerance(p.dtype)
        with np.errstate(invalid="ignore"):
            diff = np.where(got == overflows_to(expected, p.dtype), 0.0, np.abs(got - expected))
        allowed = self.allowed_error(p, expected)
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = diff / np.maximum(np.abs(expected), 1e-30)
        max_abs = float(np.nanmax(diff)) if diff.size else 0.0
        max_rel = float(np.nanmax(np.where(np.abs(expected) > atol, rel, 0.0))) if diff.size else 0.0
        bad = ~(diff <= allowed)
        n_bad = int(np.count_nonzero(bad))
        ok = nan_count == 0 and n_bad == 0
        criterion = {}
        if p.acceptance and not nan_count:
            same_dtype = None
            if p.acceptance.get("kind") == "cann":
                with threadpool_limits(limits=1, user_api="blas"):
                    same_dtype = self.same_dtype_rows(p, inputs, rows, expected)
            criterion = acceptance.measures(p.acceptance, p.dtype, got, expected, same_dtype)
        reason = ""
        if nan_count:
            reason = f"{nan_count} NaN output values (poisoned output left unwritten, or an invalid operation)"
        elif n_bad:
            idx = np.unravel_index(int(np.argmax(np.where(bad, diff, -1))), bad.shape)
            reason = (f"{n_bad} of {bad.size} checked values outside {self.tolerance_text(p)}; "
                      f"worst at row {int(rows[idx[0]])} col {int(idx[1])}: got {got[idx]:.6g}, "
                      f"expected {expected[idx]:.6g}")
        else:
            reason = self.invariant_violation(p, out) or acceptance.judge(p.acceptance, p.dtype, criterion) or ""
            ok = not reason
        return ErrorMetrics(ok, max_abs, max_rel, nan_count, int(got.size), reason, criterion,
                            inf_count=int(np.count_nonzero(infs)))

    def same_dtype_rows(self, p: Problem, inputs: dict[str, np.ndarray], rows: np.ndarray,
                        expected: np.ndarray) -> np.ndarray:
        """A model of a benchmark's golden run on a CPU in the problem's dtype, for the given rows:
        cann-bench judges values a variant gets wrong against how often that golden does (forge/ops/
        acceptance.py). Here, the float64 reference (`expected`) rounded once to the dtype: what a
        golden that computes in float32 and casts its result gives, as cann-bench's rms_norm and
        swi_glu goldens do ([CB] tasks/level2/rms_norm/golden.py, tasks/level1/swi_glu/golden.py)
        and torch's softmax does inside. An op whose golden rounds between steps says so."""
        return round_to_dtype(expected, p.dtype).astype(np.float64)

    def invariant_violation(self, p: Problem, out: np.ndarray) -> str | None:
        """Where the output sums to 1 along `sums_to_one_axis` (a softmax), the first sum that is not
        1 within rtol, named; else None. Each value within rtol of its own keeps a sum so, while
        the flat atol, the size of a value once N is in the thousands, passes a normaliser a little
        off (a value left out of it makes every value 1/N too large). Every sum of the whole
        output is taken, sampled check or not: it needs no reference, and costs one pass."""
        axis = self.sums_to_one_axis
        if axis is None:
            return None
        sums = out.sum(axis=axis)
        _, rtol = self.tolerance(p.dtype)
        off = np.flatnonzero(~(np.abs(sums - 1.0) <= rtol))
        if not off.size:
            return None
        i = int(off[0])
        if axis == out.ndim - 1:
            where = f"row {i}"                               # the flat row the value-by-value check names
        else:
            where = (f"the sum along axis {axis} at "
                     f"{tuple(int(j) for j in np.unravel_index(i, sums.shape))}")
        return f"{where} sums to {float(sums.flat[i]):.7g}; a softmax sums to 1 (within {rtol:g})"

    # -- cost ---------------------------------------------------------------------------------
    @abstractmethod
    def flops(self, p: Problem) -> float:
        """Useful floating-point operations (a causal mask halves attention's)."""

    def min_bytes(self, p: Problem) -> float:
        """Compulsory traffic: every input read once, the output written once, in `p.dtype`."""
        elem = DTYPE_BYTES[p.dtype]
        n = sum(int(np.prod(s.shape)) for s in self.inputs(p)) + int(np.prod(self.output(p).shape))
        return float(n * elem)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        """(atol, rtol) of the flat part of the bound, by the dtype."""
        return TOLERANCES[dtype]

    def accumulation_length(self, p: Problem) -> int:
        """The longest float32 sum behind one output value whose rounding the flat tolerance does
        not cover (0: none). Operators whose outputs are long dot products say so."""
        return 0

    def accumulation_allowance(self, p: Problem) -> float:
        """The factor of the output's RMS a value may be off by from its float32 accumulation (see
        ACCUMULATION_SIGMAS); 0 where there is no long sum."""
        n = self.accumulation_length(p)
        return ACCUMULATION_SIGMAS * FP32_UNIT_ROUNDOFF * math.sqrt(n) if n > 0 else 0.0

    def allowed_error(self, p: Problem, expected: np.ndarray) -> np.ndarray:
        """The largest |got - expected| accepted for each value of `expected` (the values checked)."""
        atol, rtol = self.tolerance(p.dtype)
        allowed = atol + rtol * np.abs(expected)
        acc = self.accumulation_allowance(p)
        if acc and expected.size:
            allowed = allowed + acc * float(np.sqrt(np.mean(np.square(expected))))
        return allowed

    def tolerance_text(self, p: Problem) -> str:
        """The bound of `allowed_error` in words, for reasons and exported checks."""
        atol, rtol = self.tolerance(p.dtype)
        acc = self.accumulation_allowance(p)
        return f"{atol:g} + {rtol:g}·|expected|" + (f" + {acc:.3g}·rms(expected)" if acc else "")

    def unfused_steps(self, p: Problem) -> list[str]:
        """The small-operator sequence a network runs without the fused kernel."""
        return [self.name]
