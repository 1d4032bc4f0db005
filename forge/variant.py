"""A variant is (problem, target, config): the one description everything else is derived from."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from forge.problem import Problem


def config_text(config: Mapping[str, Any] | None) -> str:
    """A config as `name=value` pairs, the form the CLI's `--space` takes and every report shows."""
    return " ".join(f"{k}={v}" for k, v in (config or {}).items())


@dataclass(frozen=True)
class Variant:
    """The config is kept in name order: a config read back from the store (JSON with sorted keys)
    then generates the very source the search built, not a copy whose header lists the same values
    in another order and so hashes, and compiles, as another program."""

    problem: Problem
    target: str
    config: dict[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "config", dict(sorted(self.config.items())))

    def key(self) -> str:
        """Identity used to never measure the same variant twice within a run."""
        text = json.dumps({"p": self.problem.key(), "t": self.target, "c": self.config}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def config_str(self) -> str:
        return config_text(self.config)

    def __hash__(self) -> int:
        return hash(self.key())
