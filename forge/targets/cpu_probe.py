"""Probe this machine's CPU: cores, SIMD width, clock, caches -> a roofline.

The compute roof is the larger of the nominal peak (base clock) and a measured BLAS matmul rate;
the bandwidth is a quick numpy copy. The measured figures (and the clock, which /proc/cpuinfo
gives as of the moment read) are kept in the cache folder (`forge.paths.cache_dir()`,
`cpu_probe.json`) as the highest each has read on this machine, so runs, benches and reports here
share one roofline instead of one that moves a few per cent with each probe, and a probe taken on
a busy host does not lower the bound. `sources` says so.
"""
from __future__ import annotations

import fcntl
import json
import os
import platform
import re
import time
from pathlib import Path

import numpy as np

from forge.paths import cache_dir
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


def fma_lanes_per_cycle(flags: set[str], vendor: str) -> int:
    """fp32 FMA lanes issued per cycle per core: two FMA pipes of the datapath width. AMD cores with
    AVX-512 (Zen 4) split a 512-bit FMA over their two 256-bit pipes, so they count as 2 x 8."""
    lanes = simd_lanes_fp32(flags)
    if vendor == "AuthenticAMD":
        lanes = min(lanes, 8)
    return 2 * lanes


def _matmul_rate() -> float:
    """Best of 3 float32 1024^3 matmuls through numpy's BLAS, in FLOP/s."""
    n = 1024
    a = np.ones((n, n), dtype=np.float32)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t)
    return 2.0 * n**3 / best


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


PROBE_FILE = "cpu_probe.json"


def _read(path: Path) -> dict:
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _usable(entry: object) -> bool:
    return isinstance(entry, dict) and all(isinstance(entry.get(k), (int, float)) and entry[k] > 0
                                           for k in ("ghz", "blas", "bandwidth"))


def _probed(key: str, mhz: float) -> tuple[dict[str, float], str]:
    """This machine's probed figures (clock in GHz, BLAS rate, copy bandwidth) and where they are
    kept. Each process probes, and the kept figures are the highest seen for `key`: a probe taken
    while the host was busy reads low, and a bound must not sink with it, while the highest rates
    seen settle within a few probes, so runs and benches on one machine share one roofline.
    Processes take turns under a lock on the file, so two never probe at once (each would time the
    other's load) nor overwrite each other's entries. A cache that cannot be written only loses the
    keeping, and the source then says so."""
    path = cache_dir() / PROBE_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = os.open(path.with_name(PROBE_FILE + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        lock = None
    try:
        if lock is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        kept = _read(path)
        now = {"ghz": mhz / 1000 if mhz else 2.0, "blas": _matmul_rate(), "bandwidth": _copy_bandwidth()}
        old = kept.get(key)
        entry = {k: max(v, old[k]) for k, v in now.items()} if _usable(old) else now
        if entry == old:
            return entry, f"the highest of this machine's probes, kept in {path}"
        tmp = path.with_name(f"{PROBE_FILE}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps({**kept, key: entry}, indent=1))
            tmp.replace(path)
            return entry, f"the highest of this machine's probes, kept in {path}"
        except OSError:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:            # its folder is not there to hold it either
                pass
            return entry, f"probed by this process; {path} could not be written"
    finally:
        if lock is not None:
            os.close(lock)


def machine_key(model: str, isa: list[str]) -> str:
    """What the probed figures belong to: this host, its CPU, the cores this process may use and
    the BLAS threads it is told to start (a Ray worker runs with fewer)."""
    return (f"{platform.node()} | {model} | cores {sorted(os.sched_getaffinity(0))} | {' '.join(isa)} | "
            f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '')}")


def probe_cpu(base: Target | None) -> Target:
    info = _cpuinfo()
    flags = set(re.search(r"^flags\s*:(.*)$", info, re.M).group(1).split()) if "flags" in info else set()
    found = re.search(r"^model name\s*:\s*(.*)$", info, re.M)
    model = found.group(1).strip() if found else "unknown"
    mhz = re.search(r"^cpu MHz\s*:\s*([\d.]+)", info, re.M)
    cores = len(os.sched_getaffinity(0))
    lanes = simd_lanes_fp32(flags)
    vendor = re.search(r"^vendor_id\s*:\s*(\S+)", info, re.M)
    isa = sorted(f for f in flags if f in {"avx", "avx2", "fma", "avx512f", "avx512_bf16", "neon"})
    probed, kept = _probed(machine_key(model, isa), float(mhz.group(1)) if mhz else 0.0)
    ghz, blas = probed["ghz"], probed["blas"]
    nominal = cores * ghz * 1e9 * fma_lanes_per_cycle(flags, vendor.group(1) if vendor else "") * 2
    # The base clock understates a boosting core; a measured BLAS rate above the nominal peak
    # raises the roof, so the roofline stays a bound on what a kernel can reach.
    peak32 = max(nominal, blas)
    details = dict(base.details) if base else {}
    details.update({"cores": cores, "model": model,
                    "ghz": ghz, "simd_lanes_fp32": lanes, "nominal_peak_fp32": nominal,
                    "numpy_matmul_fp32": blas, "isa": isa})
    return Target(
        name="cpu", kind="cpu",
        description=(base.description if base else "this machine's CPU") + f" — {details['model']}, {cores} cores",
        peak_flops={"float32": peak32, "float64": peak32 / 2},
        memory_bandwidth=probed["bandwidth"],
        details=details,
        sources={"peak_flops": "max of nominal (cores x clock x 2 FMA pipes x lanes x 2 FLOP) and "
                               f"a measured numpy float32 1024^3 matmul ({kept})",
                 "memory_bandwidth": f"numpy copy of 64 MiB, best of 3 ({kept})"},
    )
