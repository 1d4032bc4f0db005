"""Search spaces of the CPU C kernels: value lists from spaces.yaml, constraints written once.

Every constraint is a numpy expression of the parameter columns, so the same line checks one
config (scalars), enumerates the Cartesian product (arrays) and explains a rejection with numbers.
A dimension is "padded" to a multiple of the smallest block the space offers for it: a block may
not exceed the padded dimension (a larger block would only compute padding).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np
import yaml

from forge.backends.cpu.hwinfo import cache_bytes, cores
from forge.errors import ForgeInputError
from forge.problem import Problem
from forge.space import Constraint, Param, Space, choice, limit
from forge.targets import Target

_DATA = Path(__file__).with_name("spaces.yaml")
FLOAT = 4  # bytes; every CPU kernel computes in fp32 (inputs are exchanged as float32)


@lru_cache(maxsize=1)
def space_data() -> dict[str, Any]:
    return yaml.safe_load(_DATA.read_text())


def roundup(x: Any, m: Any) -> Any:
    return -(-x // m) * m


def padded_dp(d: int, vec: Any) -> Any:
    """Head dim / row length rounded up to whole vectors (the packed buffers' row length)."""
    return roundup(d, vec)


def _ordered(name: str, values: list[Any], doc: str = "") -> Param:
    return Param(name, tuple(values), True, doc)


def _common_params(data: dict[str, Any], op: dict[str, Any] | None = None) -> list[Param]:
    """threads and schedule; an operator's own `schedules` list replaces the global one."""
    schedules = (op or {}).get("schedules", data["schedules"])
    return [_ordered("threads", data["threads"], "OpenMP threads"),
            choice("schedule", schedules, doc="OpenMP loop schedule")]


def _threads_rule(target: Target) -> Constraint:
    n = cores(target)
    return limit("threads", lambda c: c["threads"], n, "threads",
                 parts=lambda c: f"{n} cores on {target.name}")


def _block_rule(param: str, dim_name: str, dim: int, smallest: int) -> Constraint:
    cap = roundup(dim, smallest)
    return limit(f"{param}<=padded {dim_name}", lambda c: c[param], cap,
                 parts=lambda c: f"{dim_name}={dim} padded to a multiple of {smallest}")


def _divides(name: str, outer: str, inner: Callable[[Any], Any], inner_text: str) -> Constraint:
    return Constraint(name, lambda c: c[outer] % inner(c) == 0,
                      lambda c: f"{outer}={c[outer]} is not a multiple of {inner_text}={inner(c)}")


def _l2_budget(target: Target) -> float:
    return space_data()["l2_fraction"] * cache_bytes(target, 2)


def _kib_parts(terms: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[dict[str, Any]], str]:
    return lambda c: " + ".join(f"{k} {float(v) * FLOAT / 1024:g} KiB" for k, v in terms(c).items() if float(v))


# --------------------------------------------------------------------------------------------
def attention_group(p: Problem) -> int:
    return p.shape["Hq"] // p.shape["Hkv"]


def attention_pack_v(p: Problem, vec: Any) -> Any:
    """V rows are read in place when D is whole vectors; otherwise each key block is packed padded."""
    return p.shape["D"] % vec != 0


def attention_scratch_floats(p: Problem, c: Any) -> dict[str, Any]:
    """Per-thread working set of the fused attention kernel, in floats, by buffer.

    Qt/O/S/V/m/l/alpha are the thread's scratch; "K tile" and "V tile" are the key/value block
    read in place from the input, counted because it must stay cached while the task reuses it.
    """
    D = p.shape["D"]
    g = np.where(c["order"] == "group", attention_group(p), 1)
    dp = padded_dp(D, c["vec"])
    bq, bkv = c["block_q"], c["block_kv"]
    q_row = np.where(c.get("qk", "outer") == "dot", dp, D)     # dot packs Q row-major, rows padded to DP
    return {"Q": g * q_row * bq, "O": g * bq * dp, "S": bkv * bq,
            "V": np.where(attention_pack_v(p, c["vec"]), bkv * dp, 0),
            "K tile": bkv * D, "V tile": bkv * D, "m/l": 2 * g * bq, "alpha": bq}


def attention_space(p: Problem, target: Target) -> Space:
    d = space_data()
    a = d["attention"]
    group = attention_group(p)
    # MHA: every order is one kernel; lanes only pays where a head's queries leave lanes empty
    decode = p.shape["Sq"] < min(a["block_q"])
    orders = [o for o in a["order"] if o == "head" or group > 1 and (o != "lanes" or decode)]
    params = [_ordered("block_q", a["block_q"], "query rows per task"),
              _ordered("block_kv", a["block_kv"], "keys per block (online softmax step)"),
              _ordered("vec", a["vec"], "floats per SIMD vector"),
              _ordered("kr", a["kr"], "keys per S = Q K^T register tile"),
              _ordered("qv", a["qv"], "query vectors per S = Q K^T register tile"),
              _ordered("mr", a["mr"], "query rows per O += P V register tile"),
              choice("order", orders, doc="head: one head per task; group: a GQA group per task; "
                                          "lanes: a GQA group per task, its heads sharing the query lanes")]
    if decode:
        params.append(choice("qk", a["qk"], doc="S = Q K^T as outer-product register tiles (outer) or as dot "
                                                "products along D for the lanes holding a query (dot)"))
    params += _common_params(d, a)
    usage = lambda c: sum(attention_scratch_floats(p, c).values()) * FLOAT  # noqa: E731
    rules = [
        _query_block_rule(p, group, min(a["block_q"])),
        Constraint("lanes hold the group", lambda c: (c["order"] != "lanes") | (c["block_q"] >= group),
                   lambda c: f"block_q={c['block_q']} < {group} query heads sharing a kv head"),
        _block_rule("block_kv", "Skv", p.shape["Skv"], min(a["block_kv"])),
        Constraint("dot scores take no query tile", lambda c: (c.get("qk", "outer") != "dot") | (c["qv"] == 1),
                   lambda c: f"qk=dot with qv={c['qv']}: qv only shapes the outer-product tile; use qv=1"),
        _divides("query micro-tile divides block_q", "block_q", lambda c: c["qv"] * c["vec"], "qv*vec"),
        _divides("kr divides block_kv", "block_kv", lambda c: c["kr"], "kr"),
        _divides("mr divides block_q", "block_q", lambda c: c["mr"], "mr"),
        limit("accumulators", lambda c: c["kr"] * c["qv"], d["max_accumulators"], "vectors",
              parts=lambda c: f"kr={c['kr']} x qv={c['qv']}"),
        limit("L2 working set", usage, _l2_budget(target), "KiB",
              parts=_kib_parts(lambda c: attention_scratch_floats(p, c)), scale=1024),
        _threads_rule(target),
    ]
    return Space(params, rules)


def _query_block_rule(p: Problem, group: int, smallest: int) -> Constraint:
    """block_q <= the task's query rows padded: Sq, or with order=lanes the group's Sq rows of each head."""
    sq = p.shape["Sq"]
    cap = lambda c: roundup(np.where(c["order"] == "lanes", group * sq, sq), smallest)  # noqa: E731

    def explain(c: dict[str, Any]) -> str:
        rows = f"{group} heads x Sq={sq}" if c["order"] == "lanes" else f"Sq={sq}"
        return f"{c['block_q']} > {int(cap(c))}: {rows} padded to a multiple of {smallest}"

    return Constraint("block_q<=padded Sq", lambda c: c["block_q"] <= cap(c), explain)


def _vector_step_rule(n: int, vecs: list[int]) -> Constraint:
    """vec x unroll floats per loop step, no more than the row padded to whole vectors."""
    return limit("vector step<=padded N", lambda c: c["vec"] * c["unroll"], roundup(n, min(vecs)),
                 parts=lambda c: f"vec={c['vec']} x unroll={c['unroll']}, N={n}")


def _vector_space(p: Problem, target: Target, op: str, task: tuple[str, str, str],
                  extra: list[Param] | None = None) -> Space:
    """A streaming kernel: work items of `task` = (parameter, the dimension it blocks, its doc),
    SIMD width and unroll; the row (N) is walked in vec x unroll steps."""
    d = space_data()
    o = d[op]
    name, dim, doc = task
    params = (extra or []) + [_ordered(name, o[name], doc), _ordered("vec", o["vec"], "floats per SIMD vector"),
                              _ordered("unroll", o["unroll"], "vectors per loop step (independent accumulators)")]
    params += _common_params(d)
    rules = [
        _block_rule(name, dim, p.shape[dim], min(o[name])),
        _vector_step_rule(p.shape["N"], o["vec"]),
        _threads_rule(target),
    ]
    return Space(params, rules)


ROWS_TASK = ("rows_per_task", "M", "rows per OpenMP work item")


def rmsnorm_space(p: Problem, target: Target) -> Space:
    return _vector_space(p, target, "rmsnorm", ROWS_TASK)


def softmax_space(p: Problem, target: Target) -> Space:
    algos = space_data()["softmax"]["algo"]
    return _vector_space(p, target, "softmax", ROWS_TASK,
                         [choice("algo", algos, doc="online: running max+sum in one read; twopass: max, then exp+sum")])


def softmax_axis_space(p: Problem, target: Target) -> Space:
    d = space_data()
    o = d["softmax_axis"]
    params = [choice("algo", o["algo"], doc="online: running max+sum in one read; twopass: max, then exp+sum"),
              _ordered("cw", o["cw"], "adjacent columns per work item"),
              _ordered("vec", o["vec"], "floats per SIMD vector")]
    params += _common_params(d)
    rules = [
        _block_rule("cw", "I", p.shape["I"], min(o["cw"])),
        _threads_rule(target),
    ]
    return Space(params, rules)


def swiglu_space(p: Problem, target: Target) -> Space:
    return _vector_space(p, target, "swiglu", ("cols_per_task", "N", "columns of y per OpenMP work item"))


def matmul_scratch_floats(c: Any) -> dict[str, Any]:
    """Per-thread packed panels of the matmul kernel, in floats."""
    return {"A panel": c["mc"] * c["kc"], "B panel": c["kc"] * c["nc"]}


def matmul_space(p: Problem, target: Target) -> Space:
    d = space_data()
    m = d["matmul"]
    params = [_ordered("mc", m["mc"], "rows of A per block"), _ordered("nc", m["nc"], "columns of B per block"),
              _ordered("kc", m["kc"], "depth per packed panel"), _ordered("mr", m["mr"], "micro-tile rows"),
              _ordered("nv", m["nv"], "micro-tile vectors along N"), _ordered("vec", m["vec"], "floats per SIMD vector")]
    params += _common_params(d)
    usage = lambda c: sum(matmul_scratch_floats(c).values()) * FLOAT  # noqa: E731
    rules = [
        _block_rule("mc", "M", p.shape["M"], min(m["mc"])),
        _block_rule("nc", "N", p.shape["N"], min(m["nc"])),
        _block_rule("kc", "K", p.shape["K"], min(m["kc"])),
        _divides("mr divides mc", "mc", lambda c: c["mr"], "mr"),
        _divides("micro-tile divides nc", "nc", lambda c: c["nv"] * c["vec"], "nv*vec"),
        limit("accumulators", lambda c: c["mr"] * c["nv"], d["max_accumulators"], "vectors",
              parts=lambda c: f"mr={c['mr']} x nv={c['nv']}"),
        limit("L2 working set", usage, _l2_budget(target), "KiB",
              parts=_kib_parts(matmul_scratch_floats), scale=1024),
        _threads_rule(target),
    ]
    return Space(params, rules)


SPACES: dict[str, Callable[[Problem, Target], Space]] = {
    "attention": attention_space, "rmsnorm": rmsnorm_space, "softmax": softmax_space,
    "softmax_axis": softmax_axis_space, "matmul": matmul_space, "swiglu": swiglu_space,
}


def cpu_space(p: Problem, target: Target) -> Space:
    if p.op not in SPACES:
        raise ForgeInputError("op", f"{p.op!r} has no CPU generator; allowed: {', '.join(SPACES)}")
    return SPACES[p.op](p, target)
