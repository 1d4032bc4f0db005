"""Ascend C generators: one plan per operator (its description) rendered through Jinja2 templates.

`get_plan(problem, hw)` returns the plan; a plan gives the tunable params, the vectorised resource
accounting behind the hard constraints, the pipeline description (sync, buffers, flags) of one
config, the per-core stage sequence the pipe model simulates, and the source files.
"""
from __future__ import annotations

from forge.generators.ascendc.base import Plan, get_plan

__all__ = ["Plan", "get_plan"]
