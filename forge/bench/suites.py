"""Suite loading: a suite name (benchmarks/suites/<name>.yaml), a suite YAML file, or a folder of
SOL-ExecBench problems / cann-bench tasks. Every entry goes through the importers, so suites and
imported folders map to forge problems by the same rules; bad input names the entry and field.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any


from forge.bench.cases import Suite, Unsupported
from forge.bench.importers import CANN, SOL, import_cann_task, import_folder, import_sol_definition
from forge.errors import ForgeInputError, allowed_list
from forge.yamlio import read_yaml_file

SUITES_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "suites"


def suite_dirs() -> list[Path]:
    """Where suite names are looked up: FORGE_SUITE_PATH (colon-separated), then the repo's suites."""
    extra = [Path(p) for p in os.environ.get("FORGE_SUITE_PATH", "").split(os.pathsep) if p]
    return extra + [SUITES_DIR]


def available() -> list[str]:
    return sorted({p.stem for d in suite_dirs() if d.is_dir() for p in d.glob("*.yaml")})


def load_suite(spec: str | Path) -> Suite:
    """`spec` is a suite name, a suite YAML file, or a SOL problem / cann-bench task folder."""
    path = Path(spec)
    if path.is_dir():
        return _unique(import_folder(path))
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return _unique(load_suite_file(path))
    for d in suite_dirs():
        cand = d / f"{spec}.yaml"
        if cand.is_file():
            return _unique(load_suite_file(cand))
    raise ForgeInputError("suite", f"{spec!r} is neither a suite name, a suite YAML file, nor a SOL-ExecBench "
                                   f"problem / cann-bench task folder; {allowed_list(str(spec), available(), 'none found')}")


def _unique(suite: Suite) -> Suite:
    """Each case is tuned into a folder named after its key (source, operator, case id), so two
    cases with one key would share a run: the second would be skipped as finished and reported
    with the first one's results."""
    seen: dict[str, str] = {}
    for c in suite.cases:
        what = c.problem().short()
        if c.key in seen:
            raise ForgeInputError(f"{suite.origin or suite.name}: {c.source_name} case {c.case_id}",
                                  f"appears twice, or beside an id that names the same folder {c.key} "
                                  f"({seen[c.key]} and {what}); case ids must be unique within an operator, "
                                  "since each case is tuned into a folder named after it")
        seen[c.key] = what
    return suite


def _need(entry: dict[str, Any], key: str, where: str) -> Any:
    if key not in entry:
        raise ForgeInputError(f"{where}.{key}", "required field missing")
    return entry[key]


def load_suite_file(path: Path) -> Suite:
    data = read_yaml_file(path, str(path))
    if not isinstance(data, dict):
        raise ForgeInputError(str(path), "a suite file must be a mapping with `source` and `problems` or `tasks`")
    source = data.get("source")
    suite = Suite(data.get("name", Path(path).stem), data.get("description", ""), origin=str(path))
    if source == SOL:
        _load_sol(data, suite, str(path))
    elif source == CANN:
        _load_cann(data, suite, str(path))
    else:
        raise ForgeInputError(f"{path}: source", f"{source!r}; allowed: {SOL}, {CANN}")
    return suite


def _load_sol(data: dict[str, Any], suite: Suite, where: str) -> None:
    layouts = data.get("layouts") or {}
    problems = data.get("problems")
    if not isinstance(problems, list):
        raise ForgeInputError(f"{where}: problems", "must be a list")
    for i, p in enumerate(problems):
        pw = f"{where}: problems[{i}]"
        if not isinstance(p, dict):
            raise ForgeInputError(pw, "must be a mapping")
        name = str(_need(p, "name", pw))
        pid = str(_need(p, "id", pw))
        if "unsupported" in p:
            suite.unsupported.append(Unsupported(SOL, name, pid, f"{p.get('workloads', 'all')} workloads",
                                                 str(p["unsupported"])))
            continue
        kind = _need(p, "kind", pw)
        if kind not in layouts:
            raise ForgeInputError(f"{pw}.kind", f"{kind!r} has no layout; allowed: {', '.join(layouts)}")
        dtype = _need(p, "dtype", pw)
        const = p.get("const") or {}
        var = p.get("var") or {}
        if not isinstance(var, dict) or not var or len({len(v) for v in var.values()}) != 1:
            raise ForgeInputError(f"{pw}.var", "must map each var axis to a list of values, all lists equally long")
        layout = layouts[kind]
        axis_names = {a for spec in (layout["inputs"], layout["outputs"]) for shape in spec.values() for a in shape}
        axes: dict[str, Any] = {a: {"type": "var"} for a in axis_names}
        for a, v in const.items():
            if a not in axis_names:
                raise ForgeInputError(f"{pw}.const.{a}", f"not an axis of layout {kind} ({', '.join(sorted(axis_names))})")
            axes[a] = {"type": "const", "value": v}
        reference = f"EPS = {p['eps']!r}\n" if "eps" in p else ""
        defn = {"name": name, "op_type": kind.replace("_kn", ""), "axes": axes, "reference": reference,
                "inputs": {n: {"shape": s, "dtype": dtype} for n, s in layout["inputs"].items()},
                "outputs": {n: {"shape": s, "dtype": dtype} for n, s in layout["outputs"].items()}}
        n_wl = len(next(iter(var.values())))
        workloads = [{"uuid": f"{pid}:{j}", "axes": {a: vals[j] for a, vals in var.items()},
                      "inputs": {n: {"type": "random"} for n in layout["inputs"]}} for j in range(n_wl)]
        suite.extend(import_sol_definition(defn, workloads, source_id=pid, where=pw))


def _load_cann(data: dict[str, Any], suite: Suite, where: str) -> None:
    tasks = data.get("tasks")
    if not isinstance(tasks, list):
        raise ForgeInputError(f"{where}: tasks", "must be a list")
    for i, t in enumerate(tasks):
        tw = f"{where}: tasks[{i}]"
        if not isinstance(t, dict):
            raise ForgeInputError(tw, "must be a mapping")
        op = str(_need(t, "operator", tw))
        proto = {"operator": {"name": op, "attrs": [{"name": k, "default": v} for k, v in (t.get("attrs") or {}).items()]}}
        cases = _need(t, "cases", tw)
        if not isinstance(cases, list):
            raise ForgeInputError(f"{tw}.cases", "must be a list")
        suite.extend(import_cann_task(op, proto, cases, source_id=str(t.get("path", op)), where=f"{tw}.cases"))
