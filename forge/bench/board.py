"""The bench leaderboard: per case, per benchmark problem/operator, per suite (benchmark-formats §5).

Anchors are forge's own: T_SOL = T_HW = the target's roofline bound for the case's shape and dtype
(`Target.roofline_seconds(op.flops(p), op.min_bytes(p), dtype)`); T_b = the baseline forge measured
or modeled (the vendor kernel when there is one, else the unfused sequence). Raw anchors are kept
so every score can be recomputed. Times are seconds; `time_kind` says measured or modeled.
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

from forge.backends.base import unchecked
from forge.bench.importers import CANN
from forge.bench.runner import BENCH_FILE, CASES_DIR, RUN_FILE, case_finished, continue_hint, read_marker
from forge.errors import read_json
from forge.ops import acceptance, get_op
from forge.report import scores
from forge.results import Record, Store
from forge.results.record import convergence, failed_finalists
from forge.results.lock import folder_holder, holder_text
from forge.results.store import STORE_NAME
from forge.targets import Target, get_target

# forge record status -> SOL-ExecBench trace status (benchmark-formats.md §1.5), worst first.
SOL_STATUS = {"ok": "PASSED", "incorrect": "INCORRECT_NUMERICAL", "runtime_error": "RUNTIME_ERROR",
              "timeout": "TIMEOUT", "compile_error": "COMPILE_ERROR", "invalid": "COMPILE_ERROR"}
FAIL_ORDER = ("incorrect", "runtime_error", "timeout", "compile_error", "invalid")
BUILT = ("ok", "incorrect", "runtime_error", "timeout")   # a kernel was compiled
UNSUPPORTED = "UNSUPPORTED"
NOT_RUN = "NOT_RUN"         # a case an interrupted bench did not reach
# What PASSED means here (benchmark-formats §5 asks for "the tolerance spec actually applied"). forge
# checks with its own per-dtype bound; a case's `tolerance` is the benchmark's spec, kept as data.
CORRECTNESS_NOTE = ("PASSED: every checked output value within forge's bound of the float64 reference, and "
                    "the values meet the benchmark's own criterion (SOL-ExecBench: atol + rtol·|ref| over a "
                    "matched ratio; cann-bench: MERE/MARE over all values, else its count of values off per "
                    "range against its same-dtype CPU golden, which forge models, and a case whose verdict "
                    "rests on that model says so); each case's tolerance_applied names what its run checked")
NOT_CHECKED_STATUS = "NOT_CHECKED"   # every variant that ran was left unchecked (no device, no host check)


def _baselines_by_name(records: list[Record], kind: str) -> dict[str, Record]:
    """The fastest ok baseline of each name, of time kind `kind` where the name has one of it, else
    of the other (shown, never divided by a time of another kind)."""
    out: dict[str, Record] = {}
    for r in records:
        if r.phase == "baseline" and r.status == "ok" and r.median is not None:
            name, have = baseline_name(r), out.get(baseline_name(r))
            if (have is None or (r.time_kind == kind) > (have.time_kind == kind)
                    or (r.time_kind == have.time_kind and r.median < have.median)):
                out[name] = r
    return out


def baseline_name(r: Record) -> str:
    for src in (r.extra, r.config):
        for k in ("baseline", "name"):
            if isinstance(src.get(k), str):
                return src[k]
    return "unfused"


def _load_records(run_dir: Path) -> list[Record]:
    if not (run_dir / STORE_NAME).is_file():
        return []
    store = Store.for_run(run_dir)
    try:
        return store.records()
    finally:
        store.close()


def case_row(case: dict[str, Any], bench_dir: Path, target: Target) -> dict[str, Any]:
    cdir = bench_dir / CASES_DIR / case["key"]
    marker = read_marker(cdir) or {}
    run_dir = cdir     # the case's run is its folder, wherever the bench folder has been moved or copied
    records = _load_records(run_dir) if run_dir.is_dir() else []
    row: dict[str, Any] = {k: case[k] for k in ("key", "source", "source_name", "source_id", "case_id", "op",
                                                  "shape", "dtype", "attrs", "axes", "notes", "tolerance")}
    op = get_op(case["op"])
    p = op.problem(dict(case["shape"]), case["dtype"], dict(case["attrs"]))
    flops, nbytes = op.flops(p), op.min_bytes(p)
    # The bound the case's run computed (run.json): on the CPU target the probed figures may be
    # probed again (another host, a deleted cpu_probe.json), and a bound computed again at every
    # report would then move every score a little.
    run_file = run_dir / RUN_FILE
    run_info = read_json("bench", run_file) if run_file.is_file() else {}
    recorded = run_info.get("roofline_seconds")
    t_sol = recorded if isinstance(recorded, (int, float)) else target.roofline_seconds(flops, nbytes, p.dtype)
    # what the case's run checked: forge's bound, and the benchmark's criterion where the run had it
    # (a run made before forge applied it has none)
    settings = run_info.get("settings") if isinstance(run_info.get("settings"), dict) else {}
    criterion = acceptance.describe(settings.get("acceptance"), p.dtype)
    row["tolerance_applied"] = f"forge: {op.tolerance_text(p)}" + (f"; {criterion}" if criterion else "")
    row["benchmark_criterion_applied"] = bool(criterion)
    row |= {"flops": flops, "min_bytes": nbytes, "t_sol": t_sol, "run_dir": str(run_dir),
            "evaluations": sum(1 for r in records if r.phase == "search"), "finished": case_finished(cdir)}

    tuned = [r for r in records if r.phase in ("search", "final")]
    failed = failed_finalists(records)      # a finalist that failed its re-measure is not a result
    ok = [r for r in tuned if r.status == "ok" and r.median is not None and r.variant_key not in failed]
    # A variant whose output nothing checked is no answer (it counts as never run), and a measured
    # time is never set against a modeled one: the best is the fastest checked variant of one kind,
    # measured where the case has measured ones (a case started without its device and resumed on
    # it holds both), and its baseline is of that kind too.
    checked = [r for r in ok if not unchecked(r.extra)]
    final_ok = [r for r in checked if r.phase == "final"]
    pool = final_ok or checked
    pool = [r for r in pool if r.time_kind == "measured"] or pool
    best = min(pool, key=lambda r: r.median) if pool else None
    bases = _baselines_by_name(records, best.time_kind if best else "measured")
    same_kind = {n: r for n, r in bases.items() if best is None or r.time_kind == best.time_kind}
    base = same_kind.get("vendor") or same_kind.get("unfused")
    row["baselines"] = {n: {"time": r.median, "time_kind": r.time_kind,
                            "label": r.extra.get("label") or r.config.get("label", n)} for n, r in bases.items()}
    row["baseline_kind"] = baseline_name(base) if base else None
    row["t_b"] = base.median if base else None
    row["baseline_time_kind"] = base.time_kind if base else None

    if best is not None:
        status, reason = "PASSED", ""
    elif ok:      # only variants nothing checked: not a pass, and no failure either
        status, reason = NOT_CHECKED_STATUS, str(ok[0].extra.get("correctness", ""))
    elif marker.get("error_kind") == "input":          # refused before anything ran: forge cannot tune it
        status, reason = UNSUPPORTED, marker["error"]
        row["refused"] = True
    elif marker.get("error"):
        status, reason = "RUNTIME_ERROR", marker["error"]
    elif not records and (run_dir / RUN_FILE).is_file():
        status, reason = (NOT_RUN, "started, nothing recorded yet: stopped (or still) starting, before its baselines")
    elif not records:
        status, reason = (NOT_RUN, "no records yet (bench interrupted before this case)")
    elif not tuned:
        status, reason = (NOT_RUN, "interrupted before its first variant was evaluated (only its baselines were)")
    else:
        worst = next((s for s in FAIL_ORDER if any(r.status == s for r in tuned)), "invalid")
        status = SOL_STATUS[worst]
        reason = next((r.reason for r in tuned if r.status == worst), "")
    row |= {"status": status, "reason": reason,
            "compiled": any(r.status in BUILT for r in tuned),
            # a case stopped part way has a best so far, not the result of its budget
            "status_text": f"{status} (unfinished)" if status == "PASSED" and not row["finished"] else status}
    t_k = best.median if best else None
    row |= {"time": t_k, "time_kind": best.time_kind if best else None, "spread": best.spread if best else None,
            "config": best.config if best else None, "errors": best.errors if best else {},
            # a variant ranked by the model without running (CUDA without a GPU) passed no check
            "unchecked": status == NOT_CHECKED_STATUS,
            "source_hash": best.source_hash if best else "", "best_phase": best.phase if best else None}
    # a cann-bench verdict that rests on forge's model of its same-dtype CPU golden is named
    row["criterion_note"] = (acceptance.model_note((best.errors or {}).get("criterion") or {}, p.dtype)
                             if best else None)
    row["speedup"] = (row["t_b"] / t_k) if (t_k and row["t_b"]) else None
    row["kinds_differ"] = bool(best and base and best.time_kind != base.time_kind)
    row["sol_score"] = scores.sol_score(t_k, t_sol, row["t_b"]) if (t_k is not None and row["t_b"] is not None) else None
    row["hap"] = scores.hap(t_k, t_sol, row["t_b"]) if t_k is not None else None
    row["hap_baseline_fallback"] = row["t_b"] is None and t_k is not None
    row["achieved_flops"] = flops / t_k if t_k else None
    row["convergence"] = convergence(records)
    return row


def _unsupported_row(u: dict[str, Any]) -> dict[str, Any]:
    empty = dict.fromkeys(("op", "shape", "dtype", "time", "time_kind", "t_b", "baseline_time_kind",
                           "baseline_kind", "speedup", "t_sol", "sol_score", "hap", "evaluations", "config"))
    return {**empty, **u, "status": UNSUPPORTED, "status_text": UNSUPPORTED, "compiled": False, "convergence": [],
            "key": f"{u['source']}-{u['source_name']}-{u['case_id']}"}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Pass rate, geomean speedup, fast_p, gated mean SOL score over `rows` (unsupported count as failed)."""
    n = len(rows)
    passed = [r for r in rows if r["status"] == "PASSED"]
    # A passed case with no baseline has neither a speedup nor a SOL score (both need T_b): fast_p
    # and the mean SOL score leave it out rather than count it failed. cann-bench instead stands in
    # max(10 T_HW, 10 us) for a missing baseline (scores.hap), so its score keeps such cases.
    scored = [r for r in rows if r["status"] != "PASSED" or r["t_b"] is not None]
    speedups = [r["speedup"] if r["status"] == "PASSED" else None for r in scored]
    out = {"cases": n, "supported": sum(1 for r in rows if r["status"] != UNSUPPORTED), "passed": len(passed),
           "not_run": sum(1 for r in rows if r["status"] == NOT_RUN),
           "pass_rate": len(passed) / n if n else None,
           "geomean_speedup": scores.geomean_speedup(speedups),
           "geomean_time": scores.geomean(r["time"] for r in passed),
           "fast_p": {str(p): scores.fast_p(speedups, p) for p in scores.FAST_P},
           "mean_sol_score": scores.gated_mean([r["sol_score"] if r["status"] == "PASSED" else None for r in scored]),
           "sol_unscored": sum(1 for r in passed if r["t_b"] is None),
           "measured": sum(1 for r in passed if r.get("time_kind") == "measured"),
           "modeled": sum(1 for r in passed if r.get("time_kind") == "modeled"),
           "unchecked": sum(1 for r in rows if r["status"] == NOT_CHECKED_STATUS)}
    return out


def bench_state(bench_dir: Path, case_rows: list[dict[str, Any]], command: str | None) -> dict[str, Any]:
    """How far the bench got, and whether a forge process is still at it: a board of an unfinished
    bench must not read as the suite's result. `line` is empty for a finished one."""
    cases, finished = len(case_rows), sum(1 for r in case_rows if r["finished"])
    holder = folder_holder(bench_dir)
    # `detail` says the same as `line` without its capital heading, for a caller that gives it a
    # heading of its own (forge compare: "A is not finished: ...")
    if holder is not None:
        so_far = f"{finished} of {cases} cases finished so far"
        line, detail = f"BENCH IN PROGRESS ({holder_text(holder)}): {so_far}", f"still going ({holder_text(holder)}): {so_far}"
    elif finished < cases:
        detail = (f"{finished} of {cases} cases finished (the others were not reached or failed); "
                  f"{continue_hint(command)}")
        line = f"BENCH NOT FINISHED: {detail}"
    else:
        line = detail = ""
    return {"cases": cases, "finished": finished, "holder": holder, "line": line, "detail": detail}


def build_board(bench_dir: str | Path) -> dict[str, Any]:
    bench_dir = Path(bench_dir)
    meta = read_json("bench", bench_dir / BENCH_FILE)
    target = get_target(meta["target"])
    rows = [case_row(c, bench_dir, target) for c in meta["cases"]]
    state = bench_state(bench_dir, rows, meta.get("command"))
    rows += [_unsupported_row(u) for u in meta["unsupported"]]
    groups: "OrderedDict[tuple[str, str], list[dict]]" = OrderedDict()
    for r in rows:
        groups.setdefault((r["source"], r["source_name"]), []).append(r)
    operators = []
    for (source, name), grp in groups.items():
        s = summarize(grp)
        s |= {"source": source, "name": name, "ops": sorted({r["op"] for r in grp if r.get("op")}),
              "cann_score": scores.cann_operator_score(any(r["compiled"] for r in grp),
                                                       [(r["status"] == "PASSED", r["hap"]) for r in grp])}
        operators.append(s)
    total = summarize(rows)
    # Benchmark level (benchmark-formats §5): the mean of the per-problem gated SOL scores, not of
    # every workload (a problem of many workloads would outweigh the rest), and the cann-bench total
    # is a sum over cann-bench operators only.
    per_problem = [o["mean_sol_score"] for o in operators if o["mean_sol_score"] is not None]
    total["mean_sol_score"] = sum(per_problem) / len(per_problem) if per_problem else None
    total["cann_total_score"] = sum(o["cann_score"] for o in operators if o["source"] == CANN)
    return {"suite": meta["suite"], "description": meta.get("description", ""), "origin": meta.get("origin", ""),
            "target": target.name, "target_kind": target.kind, "target_partial": target.partial,
            "anchors": "T_SOL = T_HW = target roofline max(flops/peak, min_bytes/bandwidth); "
                       "T_b = forge's baseline (vendor if measured, else unfused)",
            "budget_per_case": meta.get("budget_per_case"), "options": meta.get("options", {}),
            "correctness": CORRECTNESS_NOTE, "state": state, "cases": rows, "operators": operators,
            "total": total}
