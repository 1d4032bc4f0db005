"""Search settings and the YAML config schema (pydantic), with errors that name the field.

`SearchOptions` holds every knob with its one default; `TuneSettings` is one problem to tune,
`TuneConfig` is the YAML file (a list of shapes). CLI flags override the file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from forge.errors import ForgeInputError, allowed_list
from forge.search.strategies import check_strategy_options, strategy_names, strategy_unavailable
from forge.yamlio import read_yaml_file


RESULTS_DIR = Path("results")   # where runs and benches go without --out (forge runs lists it)
# Bounds that keep every value usable downstream: seeds reach numpy's and Optuna's samplers, which
# take 32-bit seeds; a timeout or a time budget becomes a subprocess or monotonic-clock deadline,
# which infinity or a huge number overflows (a week and a year are beyond any tuning run).
MAX_SEED = 2**32 - 1
MAX_TIMEOUT_S = 7 * 24 * 3600
MAX_TIME_BUDGET_S = 365 * 24 * 3600


class SearchOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dtype: str = "float32"
    attrs: dict[str, Any] = Field(default_factory=dict, description="operator attributes, e.g. causal")
    target: str = "cpu"
    space: dict[str, Any] = Field(default_factory=dict, description="fix (scalar) or restrict (list) parameters")
    trials: int = Field(40, ge=1, description="unique variants to evaluate")
    time_budget: float | None = Field(None, gt=0, le=MAX_TIME_BUDGET_S, description="seconds of wall time for the search")
    patience: int | None = Field(None, ge=1, description="stop after this many evaluations without improvement")
    sampler: str = "forge"
    sampler_options: dict[str, Any] = Field(default_factory=dict,
                                            description="the sampler's own options, e.g. path_floor: 0.75")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="seeds the search and the inputs (a 32-bit seed, as numpy "
                                                          "and Optuna's samplers take)")
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    build_workers: int | None = Field(None, ge=1, description="compiles at once (default: this machine's "
                                                                 "cores, or the Ray cluster's CPUs)")
    devices: int = Field(1, ge=1, description="device slots measuring at once, one device each (Ray executor)")
    measure: Literal["auto", "model", "device"] = "auto"
    reps: int = Field(10, ge=1, description="timed repetitions per variant")
    warmup: int = Field(2, ge=0)
    timeout: float = Field(60.0, gt=0, le=MAX_TIMEOUT_S, description="seconds before a running variant counts as hung")
    top_k: int = Field(3, ge=0, description="best variants re-measured at the end")
    final_reps: int = Field(30, ge=1, description="repetitions of the final re-measure, split over several runs "
                                                  "of each finalist taking turns (forge.tuner.FINAL_ROUNDS)")
    batch: int | None = Field(None, ge=1, description="proposals in flight (default: build workers + devices, at most "
                                                   "a quarter of the trials; forge/tuner.py default_batch)")
    bank: bool = Field(True, description="look up and update the tuning bank")
    vendor: bool = Field(True, description="time the vendor's kernel as a baseline (the '× vendor' column; on the "
                                           "CPU it is PyTorch's, whose import alone takes seconds)")
    acceptance: dict[str, Any] | None = Field(None, description="a benchmark's own pass criterion, checked beside "
                                                                 "forge's bound (a bench case's; forge/ops/acceptance.py)")
    host_check: bool = Field(True, description="CUDA without a GPU: check each variant on the CPU by host "
                                                "emulation at a reduced shape (a few seconds of a build worker each)")

    @field_validator("sampler")
    @classmethod
    def _known_sampler(cls, value: str) -> str:
        # checked with the rest of the settings, before baselines are measured or a folder is made
        if value not in strategy_names():
            raise ValueError(f"unknown sampler; {allowed_list(value, strategy_names())}")
        why = strategy_unavailable(value)
        if why:
            raise ValueError(why)
        return value

    @field_validator("acceptance")
    @classmethod
    def _known_acceptance(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        from forge.ops.acceptance import check_spec

        try:
            check_spec(value)
        except ForgeInputError as exc:
            raise ValueError(f"{exc.field}: {exc.message}") from None
        return value

    @field_validator("sampler_options")
    @classmethod
    def _known_options(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        # a misspelt option would otherwise run the whole search on the default silently
        if "sampler" in info.data:
            try:
                check_strategy_options(info.data["sampler"], value)
            except ForgeInputError as exc:
                raise ValueError(str(exc).removeprefix("sampler_options.")) from None
        return value


class TuneSettings(SearchOptions):
    op: str
    shape: dict[str, int]
    out: Path | None = None


def shape_folder(out: Path, i: int) -> Path:
    """Where a config of several shapes writes the run of its i-th shape."""
    return Path(out) / f"shape{i}"


class TuneConfig(SearchOptions):
    """The YAML search config: like TuneSettings, with a list of shapes."""

    op: str
    shapes: list[dict[str, int]] = Field(min_length=1)
    out: Path | None = None

    def settings(self) -> list[TuneSettings]:
        base = self.model_dump(exclude={"shapes", "out"})
        many = len(self.shapes) > 1
        out = []
        for i, shape in enumerate(self.shapes):
            folder = None
            if self.out is not None:
                folder = shape_folder(self.out, i) if many else self.out
            out.append(TuneSettings(**base, shape=shape, out=folder))
        return out


# Settings whose command-line option is not named after them.
FLAGS = {"attrs": "--attr", "bank": "--no-bank", "host_check": "--no-host-check", "vendor": "--no-vendor"}


def flag_name(setting: str) -> str:
    """The command-line option that sets `setting` (time_budget -> --time-budget, bank -> --no-bank)."""
    return FLAGS.get(setting, "--" + setting.replace("_", "-"))


def pydantic_error(exc: ValidationError, prefix: str = "", as_flag: bool = False) -> ForgeInputError:
    """The first validation error as a ForgeInputError naming the field (or, `as_flag`, the
    command-line option that sets it) and what is allowed."""
    err = exc.errors()[0]
    field = ".".join(str(x) for x in err["loc"]) or "config"
    if as_flag:
        head, _, rest = field.partition(".")
        field = flag_name(head) + (f".{rest}" if rest else "")
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        model = TuneConfig if prefix else TuneSettings
        msg = f"unknown field; {allowed_list(str(err['loc'][-1]), sorted(model.model_fields))}"
    elif "input" in err and err["type"] not in ("missing",):
        msg = f"{msg} (got {err['input']!r})"
    return ForgeInputError(f"{prefix}{field}", msg)


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> TuneConfig:
    p = Path(path)
    if p.is_dir():
        raise ForgeInputError("--config", f"{p} is a folder; give a YAML file (e.g. configs/attention.yaml)")
    if not p.is_file():
        raise ForgeInputError("--config", f"no such file: {p}")
    raw = read_yaml_file(p, str(p)) or {}
    if not isinstance(raw, dict):
        raise ForgeInputError(str(p), "the config must be a mapping of fields")
    raw.update({k: v for k, v in (overrides or {}).items() if v is not None})
    if "shape" in raw and "shapes" not in raw:     # the flag's name: said so, not "shapes: Field required"
        raise ForgeInputError(f"{p.name}: shape", "not a config field; a config lists its shapes under `shapes:`, "
                                                  "e.g. shapes: [{M: 64, N: 128}]")
    try:
        return TuneConfig(**raw)
    except ValidationError as exc:
        raise pydantic_error(exc, prefix=f"{p.name}: ") from None


def make_settings(**fields: Any) -> TuneSettings:
    """Settings from command-line options: an error names the option (--time-budget, not time_budget)."""
    try:
        return TuneSettings(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        raise pydantic_error(exc, as_flag=True) from None
