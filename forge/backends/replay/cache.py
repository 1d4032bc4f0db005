"""Load a Kernel Tuner cache file (brute-forced tuning space) into forge's own space model.

Format: shared/data/tuningdata/README.md "Format". The file is the complete valid space of one
kernel on one device: a point of the Cartesian product of `tune_params` that is absent from
`cache` is infeasible, a string `time` ("RuntimeFailedConfig", "CompilationFailedConfig") is a
failure that still cost a compile (and a launch). Strategies only ever see the `Space`, its
enumeration and the values they are told; the per-point data stays here.
"""
from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from forge.errors import ForgeInputError
from forge.space import Constraint, Enumeration, Param, Space

NOT_IN_CACHE = "not in cache"
# Kernel Tuner's failure markers (kernel_tuner/util.py: ErrorConfig subclasses) -> forge status.
FAILURE_STATUS = {
    "CompilationFailedConfig": "compile_error",
    "RuntimeFailedConfig": "runtime_error",
    "InvalidConfig": "invalid",
}
# Fields whose sum is the simulated cost of evaluating one point, as Kernel Tuner's simulation
# runner counts it (kernel_tuner/runners/simulation.py): compile + verify + benchmark, in ms.
COST_FIELDS = ("compile_time", "verification_time", "benchmark_time")


@dataclass
class ReplayData:
    """A brute-forced space: forge `Space` + per-valid-row time (s), status and simulated cost (s)."""

    path: Path
    kernel: str
    device: str
    space: Space
    enumeration: Enumeration
    time_s: np.ndarray        # [n_valid] float, NaN where the point failed
    status: np.ndarray        # [n_valid] object: "ok" | "compile_error" | "runtime_error" | ...
    cost_s: np.ndarray        # [n_valid] simulated compile + verify + benchmark seconds
    flat: np.ndarray          # [n_valid] flat Cartesian index of each valid row (sorted)
    run_valid: int | None = None   # a forge run's source: the valid points of its space (it may hold fewer)
    time_kind: str = "measured"    # a forge run's source: "modeled" or "mixed" where its device was missing
    costless: int = 0              # records with none of COST_FIELDS: their cost_s is 0, not recorded

    @property
    def name(self) -> str:
        return f"{self.path.resolve().parent.name}/{self.path.name.split('.')[0]}"

    @property
    def optimum_s(self) -> float:
        return float(np.nanmin(self.time_s))

    @property
    def n_ok(self) -> int:
        return int(np.count_nonzero(self.status == "ok"))

    def row_of_config(self, config: Mapping[str, Any]) -> int | None:
        """Valid row of a config, or None when it is not in the cache (infeasible)."""
        try:
            idx = self.space.indices(config)
        except ForgeInputError:
            return None
        f = int(np.ravel_multi_index(tuple(idx), _sizes(self.space)))
        i = int(np.searchsorted(self.flat, f))
        return i if i < len(self.flat) and self.flat[i] == f else None


def _sizes(space: Space) -> tuple[int, ...]:
    return tuple(len(p.values) for p in space.params)


def _is_numeric(values: list[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def read_json(path: Path) -> dict[str, Any]:
    with open(path, "rb") as fh:
        magic = fh.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    # EOFError: a truncated gzip stream; zlib.error: a damaged one (click would read an EOFError
    # escaping the command as the user closing stdin, and print "aborted").
    except (OSError, EOFError, zlib.error, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ForgeInputError("cachefile", f"{path}: not a readable Kernel Tuner cache file ({exc})") from None


def _in_cache_constraint(space_params: list[Param], flat_sorted: np.ndarray) -> Constraint:
    """The space's only hard rule: the point is one of the cache's records (vectorised)."""
    sizes = tuple(len(p.values) for p in space_params)
    lookups = []
    for p in space_params:
        vals = np.array(p.values, dtype=object if not _is_numeric(list(p.values)) else None)
        order = np.argsort(vals, kind="stable")
        lookups.append((vals[order], order))
    flat_set = set(int(f) for f in flat_sorted)

    def ok(cols: Mapping[str, Any]) -> Any:
        scalar = all(np.ndim(cols[p.name]) == 0 for p in space_params)
        idx = []
        for p, (sorted_vals, order) in zip(space_params, lookups):
            col = np.atleast_1d(np.asarray(cols[p.name], dtype=sorted_vals.dtype))
            pos = np.clip(np.searchsorted(sorted_vals, col), 0, len(sorted_vals) - 1)
            hit = sorted_vals[pos] == col
            idx.append(np.where(hit, order[pos], -1))
        idx_arr = np.stack(idx)
        known = (idx_arr >= 0).all(axis=0)
        flat = np.ravel_multi_index(tuple(np.maximum(idx_arr, 0)), sizes)
        if scalar:
            return bool(known[0]) and int(flat[0]) in flat_set
        return known & np.isin(flat, flat_sorted, assume_unique=False)

    def explain(cfg: dict[str, Any]) -> str:
        return "this configuration was never built/measured in the brute-forced cache (infeasible)"

    return Constraint(NOT_IN_CACHE, ok, explain)


def read_space_doc(path: str | Path) -> dict[str, Any]:
    """The cache document at `path`: a Kernel Tuner cache file (gzip or plain JSON), or a forge
    run folder's search records (`from_run.cache_doc_from_run`)."""
    from forge.backends.replay.from_run import cache_doc_from_run, is_run_dir
    from forge.bench.runner import BENCH_FILE

    path = Path(path)
    if is_run_dir(path):
        return cache_doc_from_run(path)
    if (path / BENCH_FILE).is_file():
        raise ForgeInputError("cachefile", f"{path} is a bench folder; replay one of its cases' runs, "
                                           f"e.g. {path / 'cases' / '<case>'}")
    if path.is_dir():          # a run folder missing a part, or no run at all: said which
        from forge.tuner import read_run_file

        try:
            read_run_file(path)
        except ForgeInputError as exc:          # named as the argument it came from
            raise ForgeInputError("cachefile", str(exc).removeprefix(f"{exc.field}: ")) from None
        raise ForgeInputError("cachefile", f"{path} is not a forge run folder (no forge.sqlite)")
    if not path.is_file():
        raise ForgeInputError("cachefile", f"{path}: no such file or forge run folder")
    return read_json(path)


def _params_of(path: Path, doc: Any) -> list[Param]:
    """The space's parameters, with the document's structure checked: every parameter of
    `tune_params` named once in `tune_params_keys` (fewer keys would fold distinct points into one)."""
    if not isinstance(doc, dict):
        raise ForgeInputError("cachefile", f"{path}: a Kernel Tuner cache is a JSON object, not {type(doc).__name__}")
    for key in ("tune_params_keys", "tune_params", "cache"):
        if key not in doc:
            raise ForgeInputError("cachefile", f"{path}: missing top-level key {key!r} "
                                  "(expected a Kernel Tuner cache: tune_params_keys, tune_params, cache)")
    keys, tp = doc["tune_params_keys"], doc["tune_params"]
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys) or len(set(keys)) != len(keys):
        raise ForgeInputError("cachefile", f"{path}: tune_params_keys must be a list of distinct parameter names")
    if not isinstance(tp, dict) or not all(isinstance(v, list) and v for v in tp.values()):
        raise ForgeInputError("cachefile", f"{path}: tune_params must map each parameter to a non-empty list of values")
    if set(keys) != set(tp):
        raise ForgeInputError("cachefile", f"{path}: tune_params_keys ({', '.join(keys)}) and tune_params "
                                           f"({', '.join(tp)}) must name the same parameters")
    if not isinstance(doc["cache"], dict):
        raise ForgeInputError("cachefile", f"{path}: cache must map each point's key to its record")
    for k in keys:       # a parameter's values are compared with each other: one kind only
        kinds = {"number" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__
                 for v in tp[k]}
        if len(kinds) > 1:
            raise ForgeInputError("cachefile", f"{path}: tune_params[{k!r}] mixes {' and '.join(sorted(kinds))} "
                                               "values; a parameter's values must all be numbers or all strings")
    return [Param(k, tuple(tp[k]), ordered=_is_numeric(list(tp[k]))) for k in keys]


def _time_of(path: Path, ckey: str, rec: dict[str, Any]) -> tuple[float, str]:
    """(seconds, status) of a record: a positive time in ms, or one of Kernel Tuner's failure
    markers; anything else is damage that would otherwise pass as a failure or a wrong optimum."""
    t = rec.get("time")
    if isinstance(t, str) and t in FAILURE_STATUS:
        return float("nan"), FAILURE_STATUS[t]
    if isinstance(t, (int, float)) and not isinstance(t, bool) and np.isfinite(t) and t > 0:
        return float(t) / 1000.0, "ok"
    raise ForgeInputError("cachefile", f"{path}: record {ckey!r} has time {t!r}; expected a positive number of ms "
                                       f"or one of {', '.join(FAILURE_STATUS)}")


def load_cache(path: str | Path) -> ReplayData:
    """Read a brute-forced space from any path: a Kernel Tuner cache file or a forge run folder."""
    path = Path(path)
    doc = read_space_doc(path)
    params = _params_of(path, doc)
    keys = [p.name for p in params]
    sizes = tuple(len(p.values) for p in params)
    try:
        index_of = [{v: i for i, v in enumerate(p.values)} for p in params]
    except TypeError:
        raise ForgeInputError("cachefile", f"{path}: tune_params values must be numbers or strings") from None

    rows: dict[int, tuple[float, str, float]] = {}
    costless = 0
    for ckey, rec in doc["cache"].items():
        if not isinstance(rec, dict):
            raise ForgeInputError("cachefile", f"{path}: record {ckey!r} is not an object")
        try:
            idx = [index_of[j][rec[k]] for j, k in enumerate(keys)]
        except KeyError:
            raise ForgeInputError("cachefile", f"{path}: record {ckey!r} lacks a parameter or has a value outside "
                                               "tune_params") from None
        except TypeError:
            raise ForgeInputError("cachefile", f"{path}: record {ckey!r} has a parameter value that is neither "
                                               "a number nor a string") from None
        time, status = _time_of(path, ckey, rec)
        if status == "invalid":       # an InvalidConfig record is the same as absent
            continue
        try:
            cost = sum(float(rec.get(f, 0.0) or 0.0) for f in COST_FIELDS) / 1000.0
            costless += not any(f in rec for f in COST_FIELDS)
        except (TypeError, ValueError):
            raise ForgeInputError("cachefile", f"{path}: record {ckey!r} has a non-numeric "
                                               f"{' or '.join(COST_FIELDS)}") from None
        flat = int(np.ravel_multi_index(tuple(idx), sizes))
        if flat in rows:
            raise ForgeInputError("cachefile", f"{path}: record {ckey!r} repeats the point of another record")
        rows[flat] = (time, status, cost)
    if not rows:
        raise ForgeInputError("cachefile", f"{path}: the cache holds no configurations")

    if not any(status == "ok" for _, status, _ in rows.values()):
        # Every score is relative to the optimum and to random search's expected best; with no
        # successful configuration neither exists.
        raise ForgeInputError("cachefile", f"{path}: none of its {len(rows)} configurations ran "
                                           "successfully (every time is a failure), so it has no optimum to search for")
    flat = np.array(sorted(rows), dtype=np.int64)
    space = Space(params, [_in_cache_constraint(params, flat)])
    valid = np.stack(np.unravel_index(flat, sizes), axis=1).astype(np.int32)
    # Build the enumeration directly from the cache: same rows, same order (flat-index order) as
    # `space.enumerate()` would give, without scanning the Cartesian product.
    enum = Enumeration(space, valid, {NOT_IN_CACHE: int(np.prod(sizes)) - len(flat)}, int(np.prod(sizes)))
    time_s = np.array([rows[f][0] for f in flat], dtype=float)
    status = np.array([rows[f][1] for f in flat], dtype=object)
    cost_s = np.array([rows[f][2] for f in flat], dtype=float)
    run = doc.get("forge_run") or {}
    return ReplayData(path, str(doc.get("kernel_name", "")), str(doc.get("device_name", "")),
                      space, enum, time_s, status, cost_s, flat, run.get("valid"), str(run.get("time_kind", "measured")),
                      costless)
