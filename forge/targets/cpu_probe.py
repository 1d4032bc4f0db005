"""Probe this machine's CPU: cores, SIMD width, clock, caches -> a nominal roofline.

The peak is nominal (cores x clock x FMA lanes x 2 pipes x 2 FLOP), the bandwidth is a quick
numpy copy measured once per process; both are labelled as such in `sources`.
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

import numpy as np

from forge.targets import Target


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def simd_lanes_fp32(flags: set[str]) -> int:
    if "avx512f" in flags:
        return 16
    if "avx2" in flags or "avx" in flags:
        return 8
    return 4


def _copy_bandwidth() -> float:
    n = 1 << 24  # 64 MiB of float32: larger than any last-level cache this probe expects
    a = np.ones(n, dtype=np.float32)
    b = np.empty_like(a)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t)
    return 2 * a.nbytes / best


def probe_cpu(base: Target | None) -> Target:
    info = _cpuinfo()
    flags = set(re.search(r"^flags\s*:(.*)$", info, re.M).group(1).split()) if "flags" in info else set()
    model = re.search(r"^model name\s*:\s*(.*)$", info, re.M)
    mhz = re.search(r"^cpu MHz\s*:\s*([\d.]+)", info, re.M)
    cores = len(os.sched_getaffinity(0))
    ghz = float(mhz.group(1)) / 1000 if mhz else 2.0
    lanes = simd_lanes_fp32(flags)
    peak32 = cores * ghz * 1e9 * lanes * 2 * 2
    details = dict(base.details) if base else {}
    details.update({"cores": cores, "model": model.group(1).strip() if model else "unknown",
                    "ghz": ghz, "simd_lanes_fp32": lanes,
                    "isa": sorted(f for f in flags if f in {"avx", "avx2", "fma", "avx512f", "avx512_bf16", "neon"})})
    return Target(
        name="cpu", kind="cpu",
        description=(base.description if base else "this machine's CPU") + f" — {details['model']}, {cores} cores",
        peak_flops={"float32": peak32, "float64": peak32 / 2},
        memory_bandwidth=_copy_bandwidth(),
        details=details,
        sources={"peak_flops": "nominal: cores x clock x SIMD lanes x 2 FMA pipes x 2 FLOP (probed)",
                 "memory_bandwidth": "numpy copy of 64 MiB, best of 3 (probed)"},
    )
