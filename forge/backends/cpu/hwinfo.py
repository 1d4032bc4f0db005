"""Cache sizes of this machine: l2_bytes (per core) and llc_bytes (shared last level).

The CPU spaces size their tiles against the per-core L2 and the harness flushes the last-level
cache between repetitions, so both numbers are needed. Where each comes from, first hit wins:
the target's `details` (l2_bytes / llc_bytes), sysfs (cpu0's cache/index*), `getconf
LEVEL<n>_CACHE_SIZE` (glibc, from cpuid), then a conservative fallback. sysfs comes before getconf
because on a VM getconf can report the host's whole L3 (seen here: 320 MiB vs sysfs's 32 MiB).
"""
from __future__ import annotations

import subprocess
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


@lru_cache(maxsize=None)
def _getconf_cache_bytes(level: int) -> int | None:
    try:
        out = subprocess.run(["getconf", f"LEVEL{level}_CACHE_SIZE"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return int(out) if out.isdigit() and int(out) > 0 else None


_KEYS = {2: "l2_bytes", 3: "llc_bytes"}


def probe_cache(target: Target, level: int) -> tuple[int, str]:
    """(bytes, where the number comes from) of one core's L2 (level 2) or the last-level cache (3)."""
    key = _KEYS[level]
    if key in target.details:
        return int(target.details[key]), f"target {target.name} details.{key}"
    found = _sysfs_cache_bytes(level)
    if found:
        return found, f"sysfs {_SYSFS}/index*/size (level {level})"
    found = _getconf_cache_bytes(level)
    if found:
        return found, f"getconf LEVEL{level}_CACHE_SIZE"
    return _FALLBACK[level], "fallback (nothing probed)"


def cache_bytes(target: Target, level: int) -> int:
    """Size of one core's cache at `level` (2) or the shared last-level cache (3)."""
    return probe_cache(target, level)[0]


def caches(target: Target) -> dict[str, dict[str, object]]:
    """Both sizes with their sources, for reports: {"l2_bytes": {"bytes": .., "source": ..}, ...}."""
    out: dict[str, dict[str, object]] = {}
    for level, key in _KEYS.items():
        size, source = probe_cache(target, level)
        out[key] = {"bytes": size, "source": source}
    return out


def cores(target: Target) -> int:
    return int(target.details.get("cores", 1))


def available_memory_bytes() -> int | None:
    """Memory a kernel can take without swapping: the kernel's MemAvailable estimate, or less where
    this process's control group has a limit (a container, a Ray worker), whose headroom is what
    the OOM killer goes by; None where neither says (not Linux)."""
    have = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                have = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        pass
    room = _cgroup_headroom()
    return room if have is None else have if room is None else min(have, room)


def _cgroup_headroom(cgroup_file: Path = Path("/proc/self/cgroup"),
                     root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """Limit minus usage of this process's memory control group (v2, else v1), if it has a limit."""
    try:
        lines = cgroup_file.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":                                    # v2: one unified hierarchy
            base, limit_file, used_file = root / path.lstrip("/"), "memory.max", "memory.current"
        elif "memory" in controllers.split(","):
            base, limit_file, used_file = (root / "memory" / path.lstrip("/"),
                                           "memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        try:
            limit, used = (base / limit_file).read_text().strip(), int((base / used_file).read_text())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:               # "max" or v1's huge number: no limit
            return max(0, int(limit) - used)
    return None
