"""Importers: SOL-ExecBench problem folders and cann-bench task folders -> forge bench cases.

- SOL-ExecBench: `definition.json` + `workload.jsonl` (benchmark-formats.md §1.2, §1.3). Every
  workload becomes one case; const/var/expr axes are resolved, scalar inputs become attributes,
  `safetensors` inputs (indptr/indices, blobs not shipped) are synthesized as valid values, and the
  tolerance spec is kept with SOL's defaults filled in.
- cann-bench: `proto.yaml` + `cases.yaml` (benchmark-formats.md §3.1). Every case becomes a case.

What forge cannot express becomes an `Unsupported` entry with its reason; nothing is dropped.
The suites in `benchmarks/suites/` go through the same functions (`import_sol_definition`,
`import_cann_task`), so a mapping rule lives in one place.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import yaml

from forge.bench.axes import UnknownName, evaluate, resolve_axes
from forge.bench.cases import BenchCase, Suite, Unsupported
from forge.errors import ForgeInputError
from forge.ops import OPS, get_op
from forge.ops.base import dtype_max
from forge.yamlio import load_yaml

SOL = "sol_execbench"
CANN = "cannbench"

# SOL-ExecBench ToleranceSpec defaults (benchmark-formats.md §1.3).
SOL_TOLERANCE_DEFAULTS: dict[str, Any] = {"max_atol": 1e-2, "max_rtol": 1e-2, "required_matched_ratio": 0.99,
                                          "max_error_cap": None, "allow_negative_inf": False}
# SOL-ExecBench dtypes (benchmark-formats.md §1.2).
SOL_DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1",
              "float4_e2m1fn_x2", "int64", "int32", "int16", "int8", "bool")
SOL_INPUT_TYPES = ("random", "scalar", "safetensors", "custom")
FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1",
                "float4_e2m1fn_x2")


class NotSupported(Exception):
    """Raised by a mapping rule: forge cannot express this problem (the message says why)."""


@dataclass
class Mapped:
    op: str
    shape: dict[str, int]
    dtype: str
    attrs: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    synthesized: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------
# SOL-ExecBench
# ------------------------------------------------------------------------------------------------
@dataclass
class SolView:
    """One workload of one definition, with every axis resolved."""

    name: str
    kind: str
    axes: dict[str, int]
    inputs: dict[str, dict[str, Any]]      # name -> {shape, dtype}
    outputs: dict[str, dict[str, Any]]
    scalars: dict[str, Any]
    safetensors: dict[str, dict[str, Any]]
    reference: str
    description: str

    def tensor_dtype(self, *names: str) -> str:
        dts = {self.inputs[n]["dtype"] for n in names if n in self.inputs}
        if len(dts) != 1:
            raise NotSupported(f"inputs {', '.join(names)} mix dtypes {sorted(dts)}; forge problems have one dtype")
        return dts.pop()

    def dims(self, name: str) -> list[int]:
        return [self.axes[a] for a in (self.inputs[name].get("shape") or [])]


def sol_kind(defn: dict[str, Any]) -> str:
    """Problem kind from `op_type` or, in dataset rows that have none, from the name."""
    name = re.sub(r"^\d+_", "", str(defn.get("name", "")))
    for kind in ("fused_add_rmsnorm", "rmsnorm", "rms_norm", "gemm", "softmax", "gqa_paged_decode",
                 "gqa_paged_prefill", "gqa_ragged_prefill", "mla_paged", "mla_ragged", "dsa", "gdn", "moe",
                 "rope", "sampling", "top_k", "top_p"):
        if name.startswith(kind):
            return kind
    return str(defn.get("op_type") or name.split("_")[0])


def _check_dtype(op: str, dtype: str) -> None:
    allowed = get_op(op).dtypes
    if dtype not in allowed:
        raise NotSupported(f"dtype {dtype} is not supported by forge's {op} (allowed: {', '.join(allowed)})")


def _eps_from(view: SolView) -> tuple[float | None, str]:
    """rmsnorm epsilon is fixed inside the reference (benchmark-formats.md §1.7)."""
    m = re.search(r"\bEPS\s*=\s*([0-9.]+(?:[eE][-+]?\d+)?)", view.reference) or re.search(
        r"\beps(?:ilon)?\s*=\s*([0-9.]+(?:[eE][-+]?\d+)?)", view.reference)
    if m:
        return float(m.group(1)), "reference"
    m = re.search(r"[Ee]psilon is fixed at ([0-9.]+(?:[eE][-+]?\d+)?)", view.description)
    if m:
        return float(m.group(1)), "description"
    return None, ""


def _map_rmsnorm(view: SolView) -> Mapped:
    x_name = next((n for n, t in view.inputs.items() if t.get("shape") and len(t["shape"]) >= 2), None)
    if x_name is None or "weight" not in view.inputs:
        raise NotSupported("rmsnorm needs a >=2-D hidden-states input and a 1-D `weight` input")
    dims = view.dims(x_name)
    residual = "residual" in view.inputs or view.kind == "fused_add_rmsnorm"
    names = [x_name, "weight"] + (["residual"] if "residual" in view.inputs else [])
    dtype = view.tensor_dtype(*names)
    _check_dtype("rmsnorm", dtype)
    notes = []
    eps, where = _eps_from(view)
    if eps is None:
        eps = get_op("rmsnorm").attr_defaults["eps"]
        notes.append(f"epsilon not found in the reference; forge's default {eps:g} used")
    if residual:
        notes.append("fused_add_rmsnorm also writes the updated residual in place; forge's rmsnorm "
                     "writes only the normalised output")
    return Mapped("rmsnorm", {"M": int(np.prod(dims[:-1])), "N": dims[-1]}, dtype,
                  {"eps": eps, "residual": residual}, notes)


def _map_gemm(view: SolView) -> Mapped:
    tensors = [n for n, t in view.inputs.items() if t.get("shape")]
    if len(tensors) != 2 or any(len(view.inputs[n]["shape"]) != 2 for n in tensors):
        raise NotSupported("gemm with inputs other than two 2-D matrices (e.g. fp8 scales) has no forge op")
    a, b = (view.inputs[n]["shape"] for n in tensors)
    if b[0] == a[1]:
        transpose_b, n_axis = False, b[1]
    elif b[1] == a[1]:
        transpose_b, n_axis = True, b[0]
    else:
        raise NotSupported(f"gemm inputs {a} and {b} share no reduction axis")
    dtype = view.tensor_dtype(*tensors)
    _check_dtype("matmul", dtype)
    return Mapped("matmul", {"M": view.axes[a[0]], "N": view.axes[n_axis], "K": view.axes[a[1]]}, dtype,
                  {"transpose_b": transpose_b})


def _map_softmax(view: SolView) -> Mapped:
    tensors = [n for n, t in view.inputs.items() if t.get("shape")]
    if len(tensors) != 1:
        raise NotSupported("softmax with more than one tensor input (mask, dropout) has no forge op")
    dims = view.dims(tensors[0])
    m = re.search(r"softmax\([^)]*dim\s*=\s*(-?\d+)", view.reference)
    notes = [] if m else ["softmax axis not found in the reference; last axis assumed"]
    dtype = view.tensor_dtype(tensors[0])
    _check_dtype("softmax", dtype)
    return _softmax_along(*axis_view(dims, int(m.group(1)) if m else -1, "softmax"), dtype, notes)


def axis_view(shape: list[int], dim: int, what: str) -> tuple[int, int, int]:
    """`shape` along axis `dim` viewed as [outer, K, inner]: the axes before it, it, those after."""
    if not -len(shape) <= dim < len(shape):
        raise NotSupported(f"{what} along axis {dim} of a {len(shape)}-D tensor: no such axis")
    dim %= len(shape)
    return int(np.prod(shape[:dim])), shape[dim], int(np.prod(shape[dim + 1:]))


def _softmax_along(outer: int, k: int, inner: int, dtype: str, notes: list[str] | None = None) -> Mapped:
    """The last axis: forge's softmax over x[rows, N]. Another axis: softmax_axis over x viewed as
    [outer, K, inner] (no data moves; see forge/ops/softmax_axis.py)."""
    if inner == 1:
        return Mapped("softmax", {"M": outer, "N": k}, dtype, {}, notes or [])
    return Mapped("softmax_axis", {"B": outer, "K": k, "I": inner}, dtype, {}, notes or [])


def uniform_indptr(total: int, parts: int) -> np.ndarray:
    """A valid indptr: `parts` segments of (almost) equal length summing to `total`."""
    base, extra = divmod(total, parts)
    lengths = np.full(parts, base, dtype=np.int64)
    lengths[:extra] += 1
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)


def synthesize_input(name: str, axes: dict[str, int]) -> np.ndarray:
    """Valid values for a `safetensors` index input whose blob is not shipped (benchmark-formats §4).

    indptr arrays split their total evenly over the requests; kv_indices are the contiguous pages
    0..n-1, which keeps every page id < num_pages and makes the paged gather equal a dense read.
    """
    batch = axes.get("len_indptr", 0) - 1
    if name == "kv_indptr":
        total = axes.get("num_kv_indices", axes.get("total_kv"))
        if total is None or batch < 1:
            raise NotSupported("kv_indptr needs len_indptr >= 2 and num_kv_indices or total_kv")
        return uniform_indptr(total, batch)
    if name == "qo_indptr":
        if "total_q" not in axes or batch < 1:
            raise NotSupported("qo_indptr needs len_indptr >= 2 and total_q")
        return uniform_indptr(axes["total_q"], batch)
    if name == "kv_indices":
        n = axes["num_kv_indices"]
        pages = axes.get("num_pages", 0) * axes.get("page_size", 1)
        if n > pages:
            raise NotSupported(f"num_kv_indices={n} exceeds the cache's {pages} slots")
        return np.arange(n, dtype=np.int32)
    raise NotSupported(f"safetensors input {name!r} has no synthesis rule (its blob is not shipped)")


def _map_gqa(view: SolView) -> Mapped:
    ax = view.axes
    for need in ("num_qo_heads", "num_kv_heads", "head_dim", "len_indptr"):
        if need not in ax:
            raise NotSupported(f"attention definition lacks axis {need}")
    if ax.get("page_size", 1) != 1:
        raise NotSupported(f"page_size={ax['page_size']}: forge's attention reads dense K/V (page_size 1 only)")
    synth: dict[str, Any] = {}
    index_inputs = [n for n in view.inputs if n.endswith("indptr") or n.endswith("indices")]
    for n in index_inputs:
        arr = synthesize_input(n, ax)
        synth[n] = {"rule": "uniform split" if n.endswith("indptr") else "contiguous pages 0..n-1",
                    "length": int(arr.size), "head": arr[:4].tolist(), "last": int(arr[-1]) if arr.size else None}
    batch = ax["len_indptr"] - 1
    kv_total = ax.get("num_kv_indices", ax.get("total_kv"))
    q_total = ax.get("total_q", ax.get("batch_size"))
    decode = view.kind == "gqa_paged_decode"
    sq_total = batch if decode else q_total
    if kv_total is None or sq_total is None:
        raise NotSupported("attention definition lacks the query/key totals")
    if kv_total % batch or sq_total % batch:
        raise NotSupported(f"{batch} requests over {sq_total} queries / {kv_total} keys give unequal lengths; "
                           "forge's attention op is dense with one Sq and Skv per problem")
    q_name = "q" if "q" in view.inputs else next(iter(view.inputs))
    kv_names = [n for n in view.inputs if n.startswith(("k", "v")) and view.inputs[n].get("shape")
                and n not in index_inputs]
    dtype = view.tensor_dtype(q_name, *kv_names)
    _check_dtype("attention", dtype)
    scale = view.scalars.get("sm_scale")
    causal = "causal" in view.name
    notes = ["lse output (base-2 log-sum-exp) is not produced by forge's attention op",
             "K/V layout differs: SOL pages [num_pages, page_size, H_kv, D] / tokens [T, H_kv, D]; forge BHSD"]
    if synth:
        notes.append("index inputs synthesized (blobs not shipped): " + ", ".join(synth))
    shape = {"B": batch, "Hq": ax["num_qo_heads"], "Hkv": ax["num_kv_heads"], "Sq": sq_total // batch,
             "Skv": kv_total // batch, "D": ax["head_dim"]}
    return Mapped("attention", shape, dtype, {"causal": causal, "scale": scale}, notes, synth)


SOL_MAPPERS: dict[str, Callable[[SolView], Mapped]] = {
    "rmsnorm": _map_rmsnorm, "rms_norm": _map_rmsnorm, "fused_add_rmsnorm": _map_rmsnorm,
    "gemm": _map_gemm, "softmax": _map_softmax,
    "gqa_paged_decode": _map_gqa, "gqa_paged_prefill": _map_gqa, "gqa_ragged_prefill": _map_gqa,
}


def _validate_definition(defn: Any, where: str) -> None:
    if not isinstance(defn, dict):
        raise ForgeInputError(where, "a definition must be a JSON object")
    for key in ("name", "axes", "inputs", "outputs"):
        if key not in defn:
            raise ForgeInputError(f"{where}.{key}", "required field missing (benchmark-formats.md §1.2)")
    for section in ("inputs", "outputs"):
        if not isinstance(defn[section], dict):
            raise ForgeInputError(f"{where}.{section}", "must map names to {shape, dtype}")
        for n, spec in defn[section].items():
            if not isinstance(spec, dict) or "dtype" not in spec:
                raise ForgeInputError(f"{where}.{section}.{n}", "needs a dtype")
            if spec["dtype"] not in SOL_DTYPES:
                raise ForgeInputError(f"{where}.{section}.{n}.dtype",
                                      f"{spec['dtype']!r}; allowed: {', '.join(SOL_DTYPES)}")
            shape = spec.get("shape")
            if shape is not None and (not isinstance(shape, list) or any(a not in defn["axes"] for a in shape)):
                raise ForgeInputError(f"{where}.{section}.{n}.shape",
                                      f"{shape!r} must list axis names from {', '.join(defn['axes'])} (or be null)")
    overlap = set(defn["inputs"]) & set(defn["outputs"])
    if overlap:
        raise ForgeInputError(f"{where}.outputs.{sorted(overlap)[0]}", "output names must not repeat input names")


def sol_tolerance(spec: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """The spec SOL applies: defaults filled in; keys its ToleranceSpec ignores are reported."""
    tol = dict(SOL_TOLERANCE_DEFAULTS)
    notes = []
    for k, v in (spec or {}).items():
        if k in tol:
            tol[k] = v
        else:
            notes.append(f"tolerance key {k!r} is ignored by SOL's ToleranceSpec (benchmark-formats.md §1.3); "
                         f"required_matched_ratio stays {tol['required_matched_ratio']}")
    return tol, notes


def import_sol_definition(defn: dict[str, Any], workloads: list[dict[str, Any]], *, source_id: str = "",
                          where: str = "definition") -> Suite:
    """One SOL definition and its workloads -> a suite (one case or unsupported entry per workload)."""
    _validate_definition(defn, where)
    name = defn["name"]
    kind = sol_kind(defn)
    suite = Suite(name, defn.get("description", ""), origin=source_id)
    mapper = SOL_MAPPERS.get(kind)
    if not workloads:
        suite.unsupported.append(Unsupported(SOL, name, source_id, "-", "the definition has no workloads"))
    for i, wl in enumerate(workloads):
        wl_where = f"{where}:workload[{i}]"
        if not isinstance(wl, dict) or not isinstance(wl.get("axes", {}), dict):
            raise ForgeInputError(wl_where, "a workload must be an object with an `axes` mapping")
        case_id = str(wl.get("uuid") or i)
        given = wl.get("axes", {})

        def unsupported(reason: str) -> None:
            suite.unsupported.append(Unsupported(SOL, name, source_id, case_id, reason, dict(given)))

        axes = resolve_axes(defn["axes"], given, wl_where)
        inputs = wl.get("inputs", {})
        missing = set(defn["inputs"]) - set(inputs)
        if missing:
            raise ForgeInputError(f"{wl_where}.inputs.{sorted(missing)[0]}", "no descriptor for this input")
        scalars, blobs, custom = {}, {}, []
        for n, d in inputs.items():
            t = d.get("type") if isinstance(d, dict) else None
            if t not in SOL_INPUT_TYPES:
                raise ForgeInputError(f"{wl_where}.inputs.{n}.type", f"{t!r}; allowed: {', '.join(SOL_INPUT_TYPES)}")
            if t == "scalar":
                if not isinstance(d.get("value"), (int, float, bool)):
                    raise ForgeInputError(f"{wl_where}.inputs.{n}.value", "scalar input needs a number or bool")
                scalars[n] = d["value"]
            elif t == "safetensors":
                if not d.get("path") or not d.get("tensor_key"):
                    raise ForgeInputError(f"{wl_where}.inputs.{n}", "safetensors input needs path and tensor_key")
                blobs[n] = {"path": d["path"], "tensor_key": d["tensor_key"]}
            elif t == "custom":
                custom.append(n)
        if custom and len(custom) != len(inputs):
            raise ForgeInputError(f"{wl_where}.inputs.{custom[0]}",
                                  "a workload with a custom input must make all inputs custom")
        tol, tol_notes = sol_tolerance(wl.get("tolerance"))
        if custom:
            unsupported("inputs are generated by the reference's custom_inputs_entrypoint (Python); "
                        "forge generates its own inputs and cannot run it")
            continue
        violated = _violated_constraints(defn.get("constraints") or [], axes, f"{where}.constraints")
        if violated:
            unsupported(f"workload violates the definition's constraint {violated!r}")
            continue
        if mapper is None:
            unsupported(f"no forge operator for SOL problem kind {kind!r} (forge ops: {', '.join(sorted(OPS))})")
            continue
        view = SolView(name, kind, axes, defn["inputs"], defn["outputs"], scalars, blobs,
                       defn.get("reference", "") or "", defn.get("description", "") or "")
        try:
            m = mapper(view)
            get_op(m.op).problem(dict(m.shape), m.dtype, dict(m.attrs))
        except NotSupported as exc:
            unsupported(str(exc))
            continue
        except ForgeInputError as exc:
            unsupported(f"forge's {kind} mapping rejected the shape: {exc}")
            continue
        suite.cases.append(BenchCase(SOL, name, source_id, case_id, m.op, m.shape, m.dtype, m.attrs,
                                     dict(given), tol, m.notes + tol_notes, m.synthesized))
    return suite


def _violated_constraints(constraints: list[str], axes: dict[str, int], where: str) -> str | None:
    """First axis-only constraint the workload breaks (ones naming tensors are checked by SOL)."""
    for c in constraints:
        try:
            if evaluate(c, axes, where, refs=True) is False:
                return c
        except UnknownName:
            continue
    return None


def read_sol_folder(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    folder = Path(folder)
    dpath, wpath = folder / "definition.json", folder / "workload.jsonl"
    for p in (dpath, wpath):
        if not p.is_file():
            raise ForgeInputError(str(folder), f"a SOL-ExecBench problem folder needs {p.name}")
    try:
        defn = json.loads(dpath.read_text())
    except json.JSONDecodeError as exc:
        raise ForgeInputError(str(dpath), f"not valid JSON: {exc}") from None
    workloads = []
    for lineno, line in enumerate(wpath.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ForgeInputError(f"{wpath}:{lineno}", f"not valid JSON: {exc}") from None
        # FlashInfer-Trace datasets store a workload inside a trace line (benchmark-formats.md §2.1).
        workloads.append(row["workload"] if isinstance(row, dict) and "workload" in row and "axes" not in row else row)
    return defn, workloads


def import_sol_folder(folder: str | Path) -> Suite:
    defn, workloads = read_sol_folder(Path(folder))
    return import_sol_definition(defn, workloads, source_id=str(folder), where=str(Path(folder) / "definition.json"))


# ------------------------------------------------------------------------------------------------
# cann-bench
# ------------------------------------------------------------------------------------------------
@dataclass
class CannCase:
    operator: str
    case_id: str
    shapes: list[list[int] | None]
    dtypes: list[str]
    attrs: dict[str, Any]


def _flat_rows(shape: list[int]) -> int:
    return int(np.prod(shape[:-1])) if len(shape) > 1 else 1


def _map_cann_attention(c: CannCase, mha: bool) -> Mapped:
    q, k = c.shapes[0], c.shapes[1]
    if q is None or k is None or len(q) != 4 or len(k) != 4:
        raise NotSupported("query/key must be 4-D [B, S, N, D]")
    if mha and q[2] != k[2]:
        raise NotSupported(f"mha needs N_q == N_kv, got {q[2]} and {k[2]}")
    scale = c.attrs.get("scaleValue", -1.0)
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))):
        raise NotSupported(f"scaleValue must be a number, got {scale!r}")
    attrs = {"causal": bool(c.attrs.get("is_causal", False)),
             "scale": float(scale) if scale is not None and scale > 0 else None}  # <= 0 -> 1/sqrt(D)
    return Mapped("attention", {"B": q[0], "Hq": q[2], "Hkv": k[2], "Sq": q[1], "Skv": k[1], "D": q[3]},
                  c.dtypes[0], attrs, ["cann-bench layout is BSND; forge's kernel is BHSD (layout transposition "
                                       "not included in forge's time)"])


def _axis_view(c: CannCase, what: str) -> tuple[int, int, int]:
    """The case's x along its `dim` attribute as [outer, K, inner] (axis_view)."""
    x = c.shapes[0]
    if not x:
        raise NotSupported(f"{what} input shape missing")
    return axis_view(x, int(c.attrs.get("dim", -1)), what)


def _map_cann_rmsnorm(c: CannCase) -> Mapped:
    x = c.shapes[0]
    if not x:
        raise NotSupported("x shape missing")
    eps = c.attrs.get("epsilon", 1e-6)
    return Mapped("rmsnorm", {"M": _flat_rows(x), "N": x[-1]}, c.dtypes[0], {"eps": float(eps), "residual": False})


def _map_cann_softmax(c: CannCase) -> Mapped:
    return _softmax_along(*_axis_view(c, "softmax"), c.dtypes[0])


def _map_cann_swiglu(c: CannCase) -> Mapped:
    try:
        op = get_op("swiglu")   # registered by the Ascend generators, loaded on demand
    except ForgeInputError:
        raise NotSupported("forge has no swiglu operator registered (get_op('swiglu') fails)") from None
    # Along axis d of [outer, K, inner] the halves x[:, :K/2, :] and x[:, K/2:, :] of one outer index
    # are the two contiguous halves of its K·inner elements: the last-axis op on [outer, K·inner]
    # computes it with no data moved.
    m, axis_len, inner = _axis_view(c, "swi_glu")
    width = axis_len * inner
    if axis_len % 2:
        raise NotSupported(f"swi_glu splits axis {c.attrs.get('dim', -1)} in halves; its length {axis_len} is odd")
    # Pick the shape convention of the registered op: its first input must be x[M, 2H].
    for n in (width // 2, width):
        for dims in ({"M": m, "N": n}, {"M": m, "H": n}):
            try:
                p = op.problem(dims, c.dtypes[0], {})
            except ForgeInputError:
                continue
            if tuple(op.inputs(p)[0].shape) == (m, width):
                return Mapped("swiglu", dict(p.shape), c.dtypes[0], {})
    raise NotSupported(f"forge's swiglu op (dims {', '.join(op.dims)}) cannot express x[{m}, {width}]")


CANN_MAPPERS: dict[str, Callable[[CannCase], Mapped]] = {
    "gqa": lambda c: _map_cann_attention(c, mha=False),
    "mha": lambda c: _map_cann_attention(c, mha=True),
    "rms_norm": _map_cann_rmsnorm,
    "softmax": _map_cann_softmax,
    "swi_glu": _map_cann_swiglu,
}


def cann_input_ranges(value_range: Any, n_inputs: int, dtype: str = "float32") -> list[list[float]] | None:
    """Each input's [lo, hi] as cann-bench reads a case's value_range ([CB] src/kernel_eval/data/
    data_generator.py: one [lo, hi] is the first input's and the others take (0, 1); a list of
    ranges is per input, the last repeated), or None where one is not a [lo, hi] with lo <= hi.

    An infinite bound is taken as the dtype's largest finite value of its sign, as cann-bench's
    `_gen_float` clamps a float range to `torch.finfo(dtype)` before drawing (a YAML `.inf` is a
    float there, not the string 'inf' its `_gen_special` fills infs for), so [-inf, inf] draws
    uniformly over every finite value of the dtype. A NaN bound is None: cann-bench's generator
    cannot draw from it either (torch's `uniform_` refuses a NaN bound, "from is out of bounds")."""
    if not isinstance(value_range, list) or not value_range:
        return None
    if not isinstance(value_range[0], list):
        per_input: list[Any] = [value_range] + [[0.0, 1.0]] * (n_inputs - 1)
    else:
        per_input = list(value_range) + [value_range[-1]] * max(0, n_inputs - len(value_range))
    top = dtype_max(dtype)
    out = []
    for r in per_input[:n_inputs]:
        pair = (r * 2)[:2] if isinstance(r, list) and len(r) == 1 else r
        if not (isinstance(pair, list) and len(pair) == 2 and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v) for v in pair)):
            return None
        lo, hi = (min(max(float(v), -top), top) for v in pair)
        if lo > hi:
            return None
        out.append([lo, hi])
    return out


def _has_nan(value: Any) -> bool:
    if isinstance(value, list):
        return any(_has_nan(v) for v in value)
    return isinstance(value, float) and math.isnan(value)


def import_cann_task(operator: str, proto: dict[str, Any] | None, cases: list[dict[str, Any]], *,
                     source_id: str = "", where: str = "cases") -> Suite:
    """One cann-bench task (operator folder name, proto, cases) -> a suite."""
    op_key = operator.lower()
    attr_defaults = {}
    if proto:
        spec = proto.get("operator", proto)
        for a in spec.get("attrs") or []:
            if isinstance(a, dict) and "name" in a:
                attr_defaults[a["name"]] = a.get("default")
    suite = Suite(op_key, origin=source_id)
    mapper = CANN_MAPPERS.get(op_key)
    for i, raw in enumerate(cases):
        cw = f"{where}[{i}]"
        if not isinstance(raw, dict):
            raise ForgeInputError(cw, "a case must be a mapping")
        for key in ("case_id", "input_shape", "dtype"):
            if key not in raw:
                raise ForgeInputError(f"{cw}.{key}", "required field missing (benchmark-formats.md §3.1)")
        shapes = raw["input_shape"]
        if not isinstance(shapes, list) or not shapes or not all(
                s is None or (isinstance(s, list) and all(isinstance(d, int) and d >= 0 for d in s)) for s in shapes):
            raise ForgeInputError(f"{cw}.input_shape", "must list one shape (list of ints >= 0) or null per input")
        dtypes = raw["dtype"] if isinstance(raw["dtype"], list) else [raw["dtype"]]
        attrs = {**attr_defaults, **(raw.get("attrs") or {})}
        case_id = str(raw["case_id"])
        axes = {"input_shape": shapes, "dtype": dtypes, "attrs": attrs}
        if raw.get("value_range") is not None:
            axes["value_range"] = raw["value_range"]

        def unsupported(reason: str) -> None:
            suite.unsupported.append(Unsupported(CANN, op_key, source_id, case_id, reason, axes))

        if mapper is None:
            unsupported(f"no forge operator for cann-bench task {op_key!r} (forge ops: {', '.join(sorted(OPS))})")
            continue
        float_dts = [d for d in dtypes if d is not None]
        if len(set(float_dts)) != 1:
            unsupported(f"inputs mix dtypes {sorted(set(float_dts))}; forge problems have one dtype")
            continue
        try:
            m = mapper(CannCase(op_key, case_id, shapes, [float_dts[0]], attrs))
            _check_dtype(m.op, m.dtype)
            problem = get_op(m.op).problem(dict(m.shape), m.dtype, dict(m.attrs))
        except NotSupported as exc:
            unsupported(str(exc))
            continue
        except ForgeInputError as exc:
            unsupported(f"forge rejected the mapped shape: {exc}")
            continue
        notes = list(m.notes)
        tolerance: dict[str, Any] = {"kind": "cann-bench MERE/MARE", "dtype": m.dtype}
        if raw.get("value_range") is not None:
            n_forge = len(get_op(m.op).inputs(problem))
            ranges = cann_input_ranges(raw["value_range"], len(shapes), m.dtype)
            if ranges is not None and len(ranges) == n_forge:
                tolerance["inputs"] = ranges
                notes.append("inputs drawn as cann-bench draws them: uniform in "
                             + ", ".join(f"[{lo:g}, {hi:g}]" for lo, hi in ranges))
            else:
                why = (f"{len(shapes)} cann-bench inputs, {n_forge} of forge's" if ranges is not None else
                       "cann-bench cannot draw from a NaN bound either: torch's uniform_ refuses it"
                       if _has_nan(raw["value_range"]) else "not a [lo, hi] with lo <= hi")
                notes.append(f"cann-bench draws inputs from {raw['value_range']}; forge uses its own seeded inputs "
                             f"({why})")
        suite.cases.append(BenchCase(CANN, op_key, source_id, case_id, m.op, m.shape, m.dtype, m.attrs, axes,
                                     tolerance, notes))
    return suite


def _read_yaml(path: Path) -> Any:
    try:
        return load_yaml(path.read_text())
    except yaml.YAMLError as exc:
        raise ForgeInputError(str(path), f"not valid YAML: {exc}") from None


def import_cann_folder(folder: str | Path) -> Suite:
    folder = Path(folder)
    ppath, cpath = folder / "proto.yaml", folder / "cases.yaml"
    if not cpath.is_file():
        raise ForgeInputError(str(folder), "a cann-bench task folder needs cases.yaml (and proto.yaml)")
    proto = _read_yaml(ppath) if ppath.is_file() else None
    data = _read_yaml(cpath)
    cases = data.get("cases") if isinstance(data, dict) else data
    if not isinstance(cases, list):
        raise ForgeInputError(str(cpath), "must hold a `cases:` list")
    return import_cann_task(folder.name, proto, cases, source_id=str(folder), where=str(cpath))


# ------------------------------------------------------------------------------------------------
def import_folder(folder: str | Path) -> Suite:
    """A SOL problem folder, a cann-bench task folder, or a folder holding several of either."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ForgeInputError("suite", f"{folder} is not a folder")
    if (folder / "definition.json").is_file():
        return import_sol_folder(folder)
    if (folder / "cases.yaml").is_file():
        return import_cann_folder(folder)
    suite = Suite(folder.name, origin=str(folder))
    found = False
    for sub in sorted(p for p in folder.rglob("*") if p.is_dir()):
        if (sub / "definition.json").is_file() or (sub / "cases.yaml").is_file():
            suite.extend(import_folder(sub))
            found = True
    if not found:
        raise ForgeInputError("suite", f"{folder} holds no SOL-ExecBench problem (definition.json + workload.jsonl) "
                                       "or cann-bench task (proto.yaml + cases.yaml)")
    return suite
