"""Turn a forge run into a Kernel Tuner cache document, so a brute-forced run is a replayable space.

A run that evaluated every valid point of its space (`--sampler random --trials <at least the
valid count>`) is a complete tuning space measured by forge itself; written in the cache format
(shared/data/tuningdata/README.md "Format") it can be replayed by `forge replay`, by
`benchmarks/search_efficiency.py` and by Kernel Tuner's simulation mode alike.

Mapping: the run's space (run.json `space.params`) gives `tune_params`; each search-phase record
gives one cache entry — `time` is the median in ms for an `ok` record, Kernel Tuner's failure
marker for a compile error, crash, hang or wrong result, and absent for an `invalid` one that a
constraint rejected before any build (infeasible, as in the cache format). A point rejected after
its build (ptxas reporting register spills) cost a compile, as a compile error does, and is
recorded as one. `compile_time` is the record's
`build_seconds` where the run kept it (0 for a cache hit, and for runs made before it was kept),
`benchmark_time` the sum of its timed repetitions. A run whose times were modeled (no device)
says so in `device_name` and `forge_run.time_kind`.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from forge.errors import ForgeInputError
from forge.results import load
from forge.results.store import RUN_FILE, STORE_NAME

# forge status -> Kernel Tuner failure marker (kernel_tuner/util.py ErrorConfig subclasses)
# ("invalid" here: rejected after its build, e.g. for ptxas spills; it cost a compile)
_FAILURE_MARKER = {"compile_error": "CompilationFailedConfig", "invalid": "CompilationFailedConfig",
                   "runtime_error": "RuntimeFailedConfig", "timeout": "RuntimeFailedConfig",
                   "incorrect": "RuntimeFailedConfig"}


def is_run_dir(path: str | Path) -> bool:
    path = Path(path)
    return path.is_dir() and (path / RUN_FILE).is_file() and (path / STORE_NAME).is_file()


def cache_doc_from_run(run_dir: str | Path) -> dict[str, Any]:
    """The Kernel Tuner cache document of a forge run's search records."""
    run_dir = Path(run_dir)
    if not is_run_dir(run_dir):
        raise ForgeInputError("run", f"{run_dir}: not a forge run folder (needs run.json and forge.sqlite)")
    from forge.tuner import check_records, read_run_file

    meta = read_run_file(run_dir)
    params: dict[str, list[Any]] = meta["space"]["params"]
    keys = list(params)
    df = load(run_dir)
    check_records(run_dir, meta, len(df))
    df = df[df["phase"] == "search"]
    cache: dict[str, dict[str, Any]] = {}
    kinds = set(df.loc[df["status"] == "ok", "time_kind"])
    for rec in df.itertuples(index=False):
        if rec.status == "invalid" and not rec.source_hash:    # rejected by a constraint before any build
            continue
        config = rec.config
        entry: dict[str, Any] = {k: config[k] for k in keys}
        if rec.status == "ok":
            entry["time"] = float(rec.median) * 1e3
            entry["times"] = [float(t) * 1e3 for t in rec.timings]
        else:
            entry["time"] = _FAILURE_MARKER.get(rec.status, "RuntimeFailedConfig")
        extra = rec.extra if isinstance(rec.extra, dict) else {}
        entry["compile_time"] = float(extra.get("build_seconds", 0.0)) * 1e3
        entry["verification_time"] = 0.0
        entry["benchmark_time"] = float(sum(rec.timings or [])) * 1e3
        cache[",".join(str(entry[k]) for k in keys)] = entry
    if not cache:
        raise ForgeInputError("run", f"{run_dir}: the run has no search records to replay")
    problem = meta["problem"]
    # Where the target's device was missing the times are the model's: said in the device name,
    # which is what Kernel Tuner and every table built from the file show.
    time_kind = "measured" if kinds <= {"measured"} else "modeled" if kinds == {"modeled"} else "mixed"
    device = meta["target"]["description"]
    return {
        "device_name": device if time_kind == "measured" else f"{device}; times {time_kind.upper()} by forge, "
                                                              "not measured on it",
        "kernel_name": f"forge {problem['op']} {problem['dtype']}",
        "problem_size": list(problem["shape"].values()),   # Kernel Tuner's form: the sizes, in order
        "tune_params_keys": keys,
        "tune_params": params,
        "objective": "time",
        "cache": cache,
        "forge_run": {"run_id": meta.get("run_id"), "valid": meta["space"].get("valid"),
                      "evaluated": len(cache), "time_kind": time_kind, "problem": problem},
    }


def write_cache(doc: dict[str, Any], out: str | Path) -> Path:
    """Write a cache document, gzip-compressed when the name ends in .gz."""
    out = Path(out)
    text = json.dumps(doc, indent=1)
    if out.suffix == ".gz":
        with gzip.open(out, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        out.write_text(text)
    return out
