"""The executor contract: variants in, outcomes out, streamed as they finish.

Builds run in parallel on CPUs; measurement runs one variant at a time per device; a crash, hang
or lost worker becomes a failed outcome with its reason, never a lost one.
"""
from __future__ import annotations

import platform
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator

from forge.backends.base import Artifact, Backend, Baseline, Measurement, Verdict
from forge.problem import Problem
from forge.variant import Variant


@dataclass
class Job:
    variant: Variant
    seed: int
    reps: int = 10
    warmup: int = 2
    timeout: float = 60.0
    phase: str = "search"
    trial: int | None = None


@dataclass
class Outcome:
    job: Job
    verdict: Verdict
    artifact: Artifact | None
    measurement: Measurement
    host: str = ""
    extra: dict = field(default_factory=dict)


def precheck(backend: Backend, job: Job) -> Outcome | None:
    """The pure constraint check: an invalid variant never reaches a compiler."""
    verdict = backend.check(job.variant)
    if verdict.ok:
        return None
    return Outcome(job, verdict, None, Measurement("invalid", "; ".join(verdict.reasons)))


def after_build(job: Job, verdict: Verdict, artifact: Artifact) -> Outcome | None:
    """A failed build or a post-build violation (e.g. ptxas spills) ends the variant here."""
    if not artifact.ok:
        return Outcome(job, verdict, artifact, Measurement("compile_error", artifact.error[-4000:]))
    violations = artifact.resources.get("violations") or []
    if violations:
        return Outcome(job, verdict, artifact, Measurement("invalid", "; ".join(violations)))
    return None


def measure(backend: Backend, job: Job, artifact: Artifact) -> Measurement:
    """Run one built variant; any exception from the backend becomes a runtime_error outcome."""
    try:
        return backend.run(artifact, job.variant, seed=job.seed, warmup=job.warmup, reps=job.reps,
                           timeout=job.timeout)
    except Exception as exc:  # a backend bug must not lose the record or stop the run
        return Measurement("runtime_error", f"{type(exc).__name__}: {exc}")


def build(backend: Backend, variant: Variant, cache_dir: Path) -> Artifact:
    try:
        return backend.build(variant, cache_dir)
    except Exception as exc:
        return Artifact(variant.key(), "", ok=False, error=f"build raised {type(exc).__name__}: {exc}")


class Executor(ABC):
    devices: int = 1    # variants measured at once (one per device slot)

    def __init__(self, backend: Backend, cache_dir: Path, build_workers: int | None = None):
        self.backend = backend
        self.cache_dir = Path(cache_dir)
        self.build_workers = build_workers

    @abstractmethod
    def submit(self, job: Job) -> None:
        """Queue one variant; returns at once."""

    @abstractmethod
    def next_result(self, timeout: float | None = None) -> Outcome | None:
        """The next finished outcome, or None when none finished within `timeout` seconds."""

    def results(self) -> Iterator[Outcome]:
        """Every outcome of the submitted jobs, as they finish."""
        while self.pending():
            outcome = self.next_result()
            if outcome is not None:
                yield outcome

    @abstractmethod
    def pending(self) -> int:
        """Jobs submitted whose outcome has not been yielded yet."""

    def measure_available(self) -> tuple[bool, str]:
        """Whether the variants will be measured (not modeled), asked where they will be measured."""
        return self.backend.measure_available()

    def baselines(self, problem: Problem, *, seed: int, reps: int, timeout: float, warmup: int = 2,
                  vendor: bool = True) -> list[Baseline]:
        """The backend's baselines, timed where the variants are (so speedups compare like with like)."""
        return [replace(b, host=platform.node()) for b in
                self.backend.baselines(problem, self.cache_dir, seed=seed, reps=reps, timeout=timeout, warmup=warmup,
                                       vendor=vendor)]

    def close(self) -> None:
        """Release workers."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
