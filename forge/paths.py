"""Where forge keeps what it can make again: built variants and this machine's CPU probe.

One folder for all of it, `FORGE_CACHE` or `~/.cache/forge/build`, so that a single variable
moves (or isolates) every cache forge writes, and nothing lands in the working directory.
"""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """`FORGE_CACHE` with `~` expanded (an empty value counts as unset), else ~/.cache/forge/build."""
    env = os.environ.get("FORGE_CACHE", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "forge" / "build"
