"""`forge bench`: tune every case of a suite into its own run folder, resumably.

Layout of a bench folder:
  bench.json                 suite, target, cases and unsupported entries (what was asked)
  cases/<case key>/          the run folder `forge.tuner.tune` fills (forge.sqlite, run.json)
  cases/<case key>/bench_case.json   written when the case finished: a rerun skips it (a refused
                                     case too, unless `--retry-refused`)
  leaderboard.{json,md,html} written by forge.bench.render.write_reports

A case without `bench_case.json` (interrupted) is tuned again into the same folder, where the tuner
resumes from its store.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from forge.bench.cases import BenchCase, Suite
from forge.errors import ForgeInputError, MachineFault, read_json, writing
from forge.ops.acceptance import SOL_KEYS
from forge.results.lock import FolderInUse, folder_lock
from forge.results.store import RUN_FILE, StoreError

BENCH_FILE = "bench.json"
CASE_MARKER = "bench_case.json"
CASES_DIR = "cases"


def _tuner() -> Any:
    """forge.tuner, looked up when first needed (tests put a fake in sys.modules)."""
    return importlib.import_module("forge.tuner")


def case_finished(cdir: Path) -> bool:
    """Whether a case's run is over: its marker says so, or (a bench stopped between the tuner's end
    and the marker, or the case resumed with `forge tune --resume`) its run.json does. The runner
    skips such a case and the board reports it finished, by this one rule."""
    marker = read_marker(cdir)
    return bool(marker and marker.get("done")) or run_state(cdir) == "complete"


def run_state(cdir: Path) -> str | None:
    """The tuner's own view of a case folder (run.json `status`): None, "running" or "complete"."""
    f = Path(cdir) / RUN_FILE
    if not f.is_file():
        return None
    try:
        return json.loads(f.read_text()).get("status")
    except (json.JSONDecodeError, AttributeError):
        return None


def _fields(settings_cls: Any) -> set[str] | None:
    if dataclasses.is_dataclass(settings_cls):
        return {f.name for f in dataclasses.fields(settings_cls)}
    if hasattr(settings_cls, "model_fields"):
        return set(settings_cls.model_fields)
    return None


def acceptance_of(case: BenchCase) -> dict[str, Any] | None:
    """The case's benchmark criterion as forge applies it (forge/ops/acceptance.py), from the
    tolerance spec its importer kept: SOL-ExecBench's ToleranceSpec, or cann-bench's MERE/MARE."""
    tol = case.tolerance or {}
    if "max_atol" in tol:
        return {"kind": "sol", **{k: v for k, v in tol.items() if k in SOL_KEYS}}
    if str(tol.get("kind", "")).startswith("cann-bench"):
        return {"kind": "cann", **({"inputs": tol["inputs"]} if tol.get("inputs") else {})}
    return None


def settings_for(settings_cls: Any, case: BenchCase, target: str, case_dir: Path,
                 budget_per_case: int | None, options: dict[str, Any]) -> Any:
    """TuneSettings for one case; options the tuner's settings do not know are left out."""
    kw: dict[str, Any] = {"op": case.op, "shape": dict(case.shape), "dtype": case.dtype, "attrs": dict(case.attrs),
                          "target": target, "out": case_dir, "acceptance": acceptance_of(case), **options}
    if budget_per_case is not None:
        kw["trials"] = int(budget_per_case)
    known = _fields(settings_cls)
    if known is not None:
        kw = {k: v for k, v in kw.items() if k in known and v is not None}
    return settings_cls(**kw)


def case_dir(bench_dir: Path, case: BenchCase) -> Path:
    return Path(bench_dir) / CASES_DIR / case.key


def read_marker(cdir: Path) -> dict[str, Any] | None:
    m = Path(cdir) / CASE_MARKER
    return json.loads(m.read_text()) if m.is_file() else None


def check_options(options: dict[str, Any], target: str = "cpu") -> None:
    """Search options are checked once, before the folder is made: a bad value would otherwise
    fail every case the same way (and, being an input error, as a final refusal). Options the
    settings do not know are left out, as for a case."""
    from pydantic import ValidationError

    from forge.backends import get_backend
    from forge.config import SearchOptions, pydantic_error
    from forge.executor import check_placement, refuse_device_without_one
    from forge.targets import get_target

    try:
        opts = SearchOptions(**{k: v for k, v in options.items() if v is not None and k in SearchOptions.model_fields})
    except ValidationError as exc:
        raise pydantic_error(exc, as_flag=True) from None
    backend = get_backend(get_target(target), measure=opts.measure)
    check_placement(opts.devices, opts.executor, backend, opts.ray_address)
    if opts.executor == "local":
        refuse_device_without_one(opts.measure, backend.measure_available())
    else:               # a cluster nothing answers at would refuse every case the same way
        from forge.executor.ray_executor import check_reachable

        check_reachable(opts.ray_address)


def run_bench(suite: Suite, target: str, out: str | Path, *, budget_per_case: int | None = None,
              options: dict[str, Any] | None = None, retry_refused: bool = False,
              progress: Callable[[str], None] | None = None, command: str | None = None) -> dict[str, int]:
    """Tune each case of `suite` on `target` into `out`; returns counts (tuned, skipped, failed).
    `command` (the command line that started it) is kept in bench.json and quoted as the way to
    continue an interrupted bench.

    A refused case (an input error: no valid variant, an unsupported shape) is final, since the
    same code refuses it the same way; `retry_refused` tries it again, for a rerun after forge or
    its target data changed. A refusal made no run, so retrying loses nothing."""
    from forge.targets import get_target

    get_target(target)  # unknown target: clear error before anything is written
    check_options(options or {}, target)
    out = Path(out)
    if (out / RUN_FILE).is_file():
        raise ForgeInputError("--out", f"{out} holds a forge run ({RUN_FILE}), not a bench; give another --out")
    with writing("--out", out, "the bench folder"):
        out.mkdir(parents=True, exist_ok=True)
    with folder_lock(out, "--out"):
        return _run_cases(suite, target, out, budget_per_case, options, retry_refused,
                          progress or (lambda _msg: None), command)


def _run_cases(suite: Suite, target: str, out: Path, budget_per_case: int | None, options: dict[str, Any] | None,
               retry_refused: bool, say: Callable[[str], None], command: str | None) -> dict[str, int]:
    meta_path = out / BENCH_FILE
    if meta_path.is_file():
        old = read_json("out", meta_path)
        if old.get("target") != target:
            raise ForgeInputError("--out", f"{out} holds a bench for target {old.get('target')!r}, not {target!r}; "
                                         "use another --out")
        changed = settings_changed(old, suite, budget_per_case, options or {})
        if changed:
            raise ForgeInputError("--out", f"{out} holds a bench made with other settings ({'; '.join(changed)}): "
                                         "rerun it with its own settings to continue it, or give another --out")
    meta = {"suite": suite.name, "description": suite.description, "origin": suite.origin, "target": target,
            "budget_per_case": budget_per_case, "options": dict(options or {}),
            "cases": [c.as_dict() | {"key": c.key} for c in suite.cases],
            "unsupported": [u.as_dict() for u in suite.unsupported], "updated": time.time(), "command": command}
    meta_path.write_text(json.dumps(meta, indent=1, default=str))
    counts = {"tuned": 0, "skipped": 0, "failed": 0}
    tuner = None
    spent: dict[str, list[float]] = {}   # seconds per case tuned whole by this invocation, by op
    for i, case in enumerate(suite.cases, 1):
        cdir = case_dir(out, case)
        marker = read_marker(cdir)
        state = run_state(cdir)
        retry = retry_refused and bool(marker and marker.get("error_kind") == "input")
        if case_finished(cdir) and not retry:
            counts["skipped"] += 1
            say(f"[{i}/{len(suite.cases)}] {case.key}: finished earlier, skipped")
            if not (marker and marker.get("done")):        # the run finished outside this loop
                (cdir / CASE_MARKER).write_text(json.dumps({"case": case.as_dict(), "done": True}))
            continue
        tuner = tuner or _tuner()
        cdir.mkdir(parents=True, exist_ok=True)
        if retry:                   # the old refusal no longer says the case is done
            (cdir / CASE_MARKER).unlink()
        started = time.time()
        record: dict[str, Any] = {"case": case.as_dict(), "started": started}
        try:
            if state is not None and hasattr(tuner, "resume"):
                say(f"[{i}/{len(suite.cases)}] {case.key}: resuming the interrupted run")
                # where it runs is this invocation's, as for the cases not started yet
                placement = effective_options(options or {})
                tuner.resume(cdir, replace_placement=True, **{k: placement.get(k) for k in PLACEMENT})
            else:
                say(f"[{i}/{len(suite.cases)}] {case.key}: tuning {case.problem().short()}"
                    + time_left(spent, [c.op for c in suite.cases[i - 1:]
                                        if c is case or not case_finished(case_dir(out, c))]))
                tuner.tune(settings_for(tuner.TuneSettings, case, target, cdir, budget_per_case,
                                        dict(options or {})))
            record |= {"done": True}
            counts["tuned"] += 1
        except KeyboardInterrupt:
            say(f"interrupted: {continue_hint(command)} (finished cases are skipped, this one resumes)")
            raise
        except FolderInUse:
            raise               # another forge is tuning this case: not a refusal, nothing to record
        except ForgeInputError as exc:
            if exc.field.lstrip("-").replace("-", "_").lower() in (*PLACEMENT, "measure"):
                raise         # where or how to measure, not the case: the whole bench's input error
            if isinstance(exc, (StoreError, MachineFault)):
                say(f"stopped: {exc}; {continue_hint(command)} once that is put right (this case resumes)")
                raise         # the machine, not the case: no refusal is recorded, the rerun resumes it
            # Deterministic refusal (e.g. the backend does not support the shape): final, not retried.
            record |= {"done": True, "error": str(exc), "error_kind": "input"}
            counts["failed"] += 1
            say(f"    refused: {exc} (final for this folder; --retry-refused tries it again)")
        except Exception as exc:  # noqa: BLE001 - one case must not stop the suite; retried on rerun
            record |= {"done": False, "error": f"{type(exc).__name__}: {exc}",
                       "traceback": traceback.format_exc(limit=5)}
            counts["failed"] += 1
            say(f"    failed: {type(exc).__name__}: {exc}")
        record["seconds"] = time.time() - started
        if state is None and record.get("error_kind") != "input":
            spent.setdefault(case.op, []).append(record["seconds"])   # a resumed tail or a refusal says little
        (cdir / CASE_MARKER).write_text(json.dumps(record, indent=1, default=str))
    return counts


# Where a bench's cases run may change between invocations; what they search and measure may not.
PLACEMENT = ("executor", "ray_address", "devices")


def settings_changed(old: dict[str, Any], suite: Suite, budget_per_case: int | None,
                     options: dict[str, Any]) -> list[str]:
    """What a rerun into a bench folder would change, in words: its suite, its case selection, its
    budget or a search option. A rerun continues the bench, so a change would skip the finished
    cases and label their results with settings they were not made with."""
    changed = []
    if old.get("suite") != suite.name:
        changed.append(f"suite {old.get('suite')}, now {suite.name}")
    cases_before = {c.get("key") for c in old.get("cases", [])}
    cases_now = {c.key for c in suite.cases}
    if cases_before != cases_now:
        changed.append(f"its {len(cases_before)} cases, now {len(cases_now)} of which "
                       f"{len(cases_now - cases_before)} new (--ops, --cases)")
    problem = ("op", "shape", "dtype", "attrs")
    was = {c.get("key"): {k: c.get(k) for k in problem} for c in old.get("cases", [])}
    edited = [c.key for c in suite.cases
              if c.key in was and was[c.key] != json.loads(json.dumps({k: c.as_dict()[k] for k in problem}))]
    if edited:                 # the suite file was edited: a finished case would be reported under the new shape
        changed.append(f"the problem of case {', '.join(edited[:3])}{' …' if len(edited) > 3 else ''} "
                       "(the suite file changed)")
    if old.get("budget_per_case") != budget_per_case:
        def budget(n: int | None) -> str:      # left out: each case takes --trials (default 40)
            return f"--budget-per-case {n}" if n is not None else "no --budget-per-case"

        changed.append(f"{budget(old.get('budget_per_case'))}, now {budget(budget_per_case)}")
    before, now = effective_options(old.get("options", {})), effective_options(options)
    for name in now:
        if name not in PLACEMENT and before.get(name) != now[name]:
            changed.append(_change(name, before.get(name), now[name]))
    return changed


def effective_options(options: dict[str, Any]) -> dict[str, Any]:
    """The search settings `options` come to, defaults filled in: an option left out and the same
    option given at its default are one setting. (Benches made before options were stored as
    values hold them as text: "0", "None".)"""
    from pydantic import ValidationError

    from forge.config import SearchOptions

    given = {k: v for k, v in options.items() if k in SearchOptions.model_fields and str(v) != "None"}
    try:
        return SearchOptions(**given).model_dump()
    except ValidationError:      # recorded by a forge that took other values: each differs, and is said
        return given


def setting_text(name: str, value: Any) -> str:
    """A search setting as the command line gives it: "--reps 10", "with --no-bank", "no --time-budget"."""
    from forge.config import flag_name

    flag = flag_name(name)
    if flag.startswith("--no-"):                      # the setting is False when the flag was given
        return f"{'with' if value is False else 'without'} {flag}"
    return f"{flag} {value}" if value is not None else f"no {flag}"


def _change(name: str, before: Any, now: Any) -> str:
    """"--sampler random, now forge"; "without --no-bank, now with it"."""
    was, is_now = setting_text(name, before), setting_text(name, now)
    if is_now.startswith(("with ", "without ")):
        return f"{was}, now {is_now.split()[0]} it"
    return f"{was}, now {now}"


def continue_hint(command: str | None) -> str:
    """How to continue a stopped bench: its own command line when known."""
    return f"continue with: {command}" if command else "run the same forge bench command again to continue"


def time_left(spent: dict[str, list[float]], ops_left: list[str]) -> str:
    """' (about N min left)' for the cases of `ops_left`: each at the mean time of the cases of its
    op tuned so far, or of all of them where none of its op was (a suite's attention cases take
    several times its norm cases); empty before the first."""
    times = [t for ts in spent.values() for t in ts]
    if not times:
        return ""
    overall = sum(times) / len(times)
    seconds = sum(sum(spent[op]) / len(spent[op]) if spent.get(op) else overall for op in ops_left)
    minutes = seconds / 60
    return f" (about {minutes:.0f} min left)" if minutes >= 1 else " (under a minute left)"
