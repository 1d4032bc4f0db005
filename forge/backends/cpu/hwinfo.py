"""Cache sizes of this machine, read from sysfs (the target probe does not carry them yet).

The CPU spaces size their tiles against the per-core L2 and the harness flushes the last-level
cache between repetitions, so both numbers are needed; the target's `details` win when present.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from forge.targets import Target

_SYSFS = Path("/sys/devices/system/cpu/cpu0/cache")
# Used only when neither the target nor sysfs says (a conservative, common size).
_FALLBACK = {2: 512 * 1024, 3: 8 * 1024 * 1024}


def _parse_size(text: str) -> int:
    text = text.strip().upper()
    mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * mult


@lru_cache(maxsize=None)
def _sysfs_cache_bytes(level: int) -> int | None:
    for d in sorted(_SYSFS.glob("index*")):
        try:
            if int((d / "level").read_text()) == level and (d / "type").read_text().strip() != "Instruction":
                return _parse_size((d / "size").read_text())
        except (OSError, ValueError):
            continue
    return None


def cache_bytes(target: Target, level: int) -> int:
    """Size of one core's cache at `level` (2) or the shared last-level cache (3)."""
    key = {2: "l2_bytes", 3: "llc_bytes"}[level]
    if key in target.details:
        return int(target.details[key])
    return _sysfs_cache_bytes(level) or _FALLBACK[level]


def cores(target: Target) -> int:
    return int(target.details.get("cores", 1))
