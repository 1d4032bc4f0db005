"""The plan contract shared by every Ascend C generator, and rendering of the kernel-launch files."""
from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable

import jinja2
import numpy as np

from forge.backends.ascend.constraints import Resources, hard_constraints
from forge.backends.ascend.hw import AscendHW
from forge.backends.ascend.pipeline import Pipeline
from forge.backends.ascend.pipemodel import ModelResult, Step, simulate
from forge.backends.base import Source
from forge.errors import ForgeInputError
from forge.ops import get_op
from forge.problem import Problem
from forge.space import Constraint, Param, Space, choice

TEMPLATES = Path(__file__).parent / "templates"
_env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                          trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)

# Pipe steps a stream is simulated for before Plan.model_prefixes extrapolates it: row, swiglu and
# softmax-axis streams reach their steady state within a few tiles, and at this length the
# extrapolation stays within 0.1 % of the full simulation (tests/test_ascend_model.py).
SIM_STEPS = 2_000

CTYPE = {"float16": "half", "bfloat16": "bfloat16_t", "float32": "float"}
ELEM = {"float16": 2, "bfloat16": 2, "float32": 4}


def stratified_order(n: int) -> list[int]:
    """0..n-1 in van der Corput order (0, n/2, n/4, 3n/4, ...): every prefix is spread evenly over
    the range, so a model that times the first units of a stream and extrapolates sees units from
    all of it, not only its start."""
    def radical_inverse(i: int) -> float:
        x, d = 0.0, 0.5
        while i:
            x += d * (i & 1)
            i >>= 1
            d /= 2
        return x

    return sorted(range(n), key=radical_inverse)


def cdiv(a: Any, b: Any) -> Any:
    return -(-a // b)


def round_up(a: Any, b: Any) -> Any:
    return cdiv(a, b) * b


class Plan(ABC):
    """The description of one operator on one Ascend target."""

    op = ""
    template = ""
    kind = "aiv"                     # aiv | aic | mix

    def __init__(self, problem: Problem, hw: AscendHW):
        self.p = problem
        self.hw = hw
        self.e = ELEM[problem.dtype]
        self.ctype = CTYPE[problem.dtype]

    @property
    def per_block(self) -> int:
        """Elements of one 32 B block, UB's unit of alignment (ascend.md §1.3)."""
        return 32 // self.e

    # -- the search space --------------------------------------------------------------------
    @abstractmethod
    def params(self) -> list[Param]: ...

    def extra_constraints(self) -> list[Constraint]:
        return []

    @abstractmethod
    def resources(self, c: dict[str, Any]) -> Resources:
        """Vectorised over numpy columns (or scalars for one config)."""

    def space(self) -> Space:
        return Space(self.params(), self.extra_constraints() + hard_constraints(self.hw, self.resources))

    # -- one config ---------------------------------------------------------------------------
    @abstractmethod
    def pipeline(self, cfg: dict[str, Any]) -> Pipeline: ...

    @abstractmethod
    def programs(self, cfg: dict[str, Any]) -> tuple[dict[str, list[Step]], int]:
        """Stage sequence of the most loaded core(s), and the number of active AI cores/AIVs."""

    @abstractmethod
    def context(self, cfg: dict[str, Any]) -> dict[str, Any]: ...

    def model(self, cfg: dict[str, Any]) -> "ModelResult":
        """Modeled time of this config (pipemodel.simulate over `programs`)."""
        progs, active = self.programs(cfg)
        return simulate(self.pipeline(cfg), self.hw, progs, active)

    def model_prefixes(self, cfg: dict[str, Any], costs: list[int], programs_of: Callable[[int], Any],
                       active: int, limit: int, work: list[float] | None = None) -> ModelResult:
        """A core's stream of work units, `costs[i]` the size of unit i (tiles, steps): simulated
        whole when its first `limit` cost covers every unit, else over two prefixes of whole units
        (about limit / 2 and limit) and extrapolated at the steady-state rate between them, so a
        stream of millions of steps models in about a second. `programs_of(n)` is the program of
        the first n units. Units past the prefixes are charged at the prefixes' rate per unit of
        `work` (default: `costs`), so a plan whose units differ in time but not in size (a narrow
        last column block) says how much each one weighs."""
        pl, head = self.pipeline(cfg), float(self.hw.launch_head_s)
        total = sum(costs)
        if total == 0:
            return ModelResult(head, 0.0, head, {}, 0)
        ends = np.cumsum(costs)
        na = min(int(np.searchsorted(ends, limit // 2)) + 1, len(costs))
        nb = max(min(int(np.searchsorted(ends, limit)) + 1, len(costs)), na + 1)
        if nb >= len(costs):
            r = simulate(pl, self.hw, programs_of(len(costs)), active)
            return ModelResult(head + r.makespan, r.makespan, head, r.busy, r.steps)
        ra = simulate(pl, self.hw, programs_of(na), active)
        rb = simulate(pl, self.hw, programs_of(nb), active)
        done = np.cumsum(costs if work is None else work, dtype=float)
        wa, wb = done[na - 1], done[nb - 1]
        rate = (rb.makespan - ra.makespan) / (wb - wa) if wb > wa else 0.0
        span = rb.makespan + rate * (done[-1] - wb)
        return ModelResult(head + span, span, head, rb.busy, int(rb.steps * total / max(int(ends[nb - 1]), 1)))

    def emulation_problem(self, cfg: dict[str, Any]) -> Problem:
        """A small problem with the same tiling structure, run by the CPU emulator."""
        return self.p

    # AIVs an emulated vector kernel is launched on: few, so the small problem gives each of them
    # several tiles, and queue slots, double buffering and the free/alloc cycle turn over in the
    # check as they do on the device (with `cores`' 12 or more AIVs each had one tile at most)
    EMULATED_CORES = 2

    def emulation_config(self, cfg: dict[str, Any]) -> dict[str, Any]:
        """The config the emulated kernel is rendered with: the variant's, on EMULATED_CORES AIVs
        where it chooses its AIV count (every tiling parameter is the variant's own)."""
        return {**cfg, "cores": min(int(cfg["cores"]), self.EMULATED_CORES)} if "cores" in cfg else dict(cfg)

    def emulation_plan(self, cfg: dict[str, Any]) -> "Plan":
        """The plan of `emulation_problem`: the same generator (a plan chosen by shape keeps itself)."""
        return type(self)(self.emulation_problem(cfg), self.hw)

    def workspace_bytes(self, cfg: dict[str, Any]) -> int:
        return 0

    def cores_param(self, divisors: tuple[int, ...] = (4, 2, 1)) -> Param:
        """AIVs a vector kernel asks for: these fractions of the target's AIV count."""
        aiv = int(self.hw.aiv)
        return choice("cores", sorted({max(1, aiv // d) for d in divisors}), ordered=True, doc="AIVs used")

    def cores_constraint(self, units: Callable[[dict[str, Any]], Any]) -> Constraint:
        """Every core count at or above a vector kernel's work units launches the same kernel
        (block_dim = min(cores, units)); only the smallest of them is kept, so no trial measures a
        duplicate."""
        counts = np.array(next(p for p in self.params() if p.name == "cores").values)
        below = np.concatenate([[0], counts])      # the next smaller count of each, 0 for the first

        def ok(c: dict[str, Any]) -> Any:
            return below[np.searchsorted(counts, c["cores"])] < units(c)

        def why(c: dict[str, Any]) -> str:
            n = int(units(c))
            same = int(counts[min(int(np.searchsorted(counts, n)), len(counts) - 1)])
            return f"cores {c['cores']} launches the same kernel as cores {same}: it has only {n} work units"

        return Constraint("cores", ok, why)

    def gm_rows_bytes(self, rows: int, block: int, row: int) -> int:
        """GM bytes of `rows` blocks of `block` elements cut from rows of `row` elements: one
        contiguous transfer when a block is the whole row, else one burst per block, each rounded
        up to whole GM packets (ascend.md §1.3, GM-side rules: "unaligned sizes round up")."""
        if block == row:
            return rows * block * self.e
        return rows * int(round_up(block * self.e, int(self.hw.gm_packet_bytes)))

    # -- rendering ----------------------------------------------------------------------------
    def render(self, cfg: dict[str, Any]) -> Source:
        pl = self.pipeline(cfg)
        ctx = dict(self.context(cfg), pl=pl, cfg=cfg, p=self.p, T=self.ctype, dtype=self.p.dtype,
                   kernel=pl.kernel, config_lines=[f"{k} = {v}" for k, v in cfg.items()])
        # templates compose macros whose blank lines add up: one blank line between blocks
        kernel = re.sub(r"\n{3,}", "\n\n", _env.get_template(self.template).render(**ctx))
        op = get_op(self.p.op)
        ins = [(s.name, int(np.prod(s.shape))) for s in op.inputs(self.p)]
        out = op.output(self.p)
        host = dict(kernel=pl.kernel, inputs=ins, output=(out.name, int(np.prod(out.shape))), elem=self.e,
                    block_dim=pl.block_dim, workspace=self.workspace_bytes(cfg), soc=self.hw.soc_version,
                    npu_arch=self.hw.npu_arch, problem=self.p.short(), config_lines=ctx["config_lines"])
        files = {"kernel.cpp": kernel,
                 "main.cpp": _env.get_template("host_main.cpp.j2").render(**host),
                 "CMakeLists.txt": _env.get_template("CMakeLists.txt.j2").render(**host),
                 "run.sh": _env.get_template("run.sh.j2").render(**host)}
        return Source(files, "kernel.cpp", "ascendc")


# operator -> "module:class" of its plan, imported on first use
PLANS = {"attention": "attention:AttentionPlan", "rmsnorm": "rows:RmsNormPlan", "softmax": "rows:SoftmaxPlan",
         "matmul": "matmul:MatmulPlan", "swiglu": "swiglu:SwigluPlan", "softmax_axis": "softmax_axis:SoftmaxAxisPlan"}
# the plan of rows too long for any whole-row config (RowPlan.whole_rows_fit)
LONG_ROW_PLANS = {"rmsnorm": "long_rows:LongRmsNormPlan", "softmax": "long_rows:LongSoftmaxPlan"}


def _plan_class(spec: str) -> type:
    import importlib

    module, cls = spec.split(":")
    return getattr(importlib.import_module(f"forge.generators.ascendc.{module}"), cls)


def get_plan(problem: Problem, hw: AscendHW) -> Plan:
    if problem.op not in PLANS:
        raise ForgeInputError("op", f"{problem.op!r} has no Ascend C generator; allowed: {', '.join(sorted(PLANS))}")
    plan = _plan_class(PLANS[problem.op])(problem, hw)
    if problem.op in LONG_ROW_PLANS and not plan.whole_rows_fit():
        plan = _plan_class(LONG_ROW_PLANS[problem.op])(problem, hw)
    return plan


def pow2_upto(lo: int, hi: int) -> list[int]:
    return [1 << k for k in range(int(math.log2(lo)), int(math.log2(max(hi, lo))) + 1)]


class RowsPlan(Plan, ABC):
    """An operator over rows of a [M, N] input (rmsnorm, softmax, swiglu)."""

    @property
    def M(self) -> int:
        return self.p.shape["M"]

    @property
    def N(self) -> int:
        return self.p.shape["N"]
