"""Where forge keeps what it can make again: built variants and this machine's CPU probe.

One folder for all of it, `FORGE_CACHE` or `~/.cache/forge/build`, so that a single variable
moves (or isolates) every cache forge writes, and nothing lands in the working directory.
"""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    return Path(os.environ.get("FORGE_CACHE", Path.home() / ".cache" / "forge" / "build"))
