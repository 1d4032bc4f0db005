"""Hardware targets as data: one YAML file per target (packaged in `data/`, or the user's own).

A user adds a target by dropping a YAML file into a folder named in `FORGE_TARGET_PATH`
(colon-separated) or into `forge/targets/data/`. The `cpu` target is probed from this machine.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from forge.errors import ForgeInputError, allowed_list
from forge.yamlio import load_yaml

DATA_DIR = Path(__file__).parent / "data"


class Target(BaseModel):
    """Common fields every target has; `details` holds the family's own constants."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    kind: Literal["cpu", "cuda", "ascend", "replay"]
    description: str
    partial: bool = Field(False, description="some numbers are unknown or estimated")
    peak_flops: dict[str, float] = Field(default_factory=dict, description="FLOP/s per dtype")
    memory_bandwidth: float = Field(0.0, description="bytes/s of main memory (HBM/DRAM)")
    details: dict[str, Any] = Field(default_factory=dict)
    sources: dict[str, str] = Field(default_factory=dict, description="field -> where the number comes from")

    def peak(self, dtype: str) -> float:
        if dtype in self.peak_flops:
            return self.peak_flops[dtype]
        return self.peak_flops.get("float32", 0.0)

    def roofline_seconds(self, flops: float, min_bytes: float, dtype: str) -> float:
        """Lower bound on time: max(compute at peak, compulsory traffic at full bandwidth)."""
        compute = flops / self.peak(dtype) if self.peak(dtype) else 0.0
        memory = min_bytes / self.memory_bandwidth if self.memory_bandwidth else 0.0
        return max(compute, memory)


def _search_dirs() -> list[Path]:
    extra = [Path(p) for p in os.environ.get("FORGE_TARGET_PATH", "").split(os.pathsep) if p]
    return extra + [DATA_DIR]


def _load_file(path: Path) -> Target:
    try:
        raw = load_yaml(path.read_text())
    except yaml.YAMLError as exc:
        raise ForgeInputError(str(path), f"not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ForgeInputError(str(path), "a target file must be a mapping")
    raw.setdefault("name", path.stem)
    try:
        return Target(**raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise ForgeInputError(f"{path.name}: {field}", err["msg"]) from None


@lru_cache(maxsize=None)
def all_targets() -> dict[str, Target]:
    found: dict[str, Target] = {}
    for d in reversed(_search_dirs()):
        if d.is_dir():
            for f in sorted(d.glob("*.yaml")):
                t = _load_file(f)
                found[t.name] = t
    from forge.targets.cpu_probe import probe_cpu

    found["cpu"] = probe_cpu(found.get("cpu"))
    return found


def get_target(name: str) -> Target:
    targets = all_targets()
    if name not in targets:
        raise ForgeInputError("target", f"unknown target {name!r}; {allowed_list(name, sorted(targets))}")
    return targets[name]
