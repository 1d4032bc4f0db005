"""A precompiled emulator header per set of compile flags, so a kernel build skips parsing the API.

Parsing the emulated Ascend C API (`include/kernel_operator.h`) is about a third of an emulator
build on this machine (benchmarks/ascend_emu_overhead.py --pch). g++ reads
`<dir>/forge_emu_pch.h.gch` in place of `forge_emu_pch.h` when `<dir>` comes first on the include
path and the flags and macros it was built with match the build's; otherwise it parses the header
as usual, so a stale or foreign .gch costs time, never correctness. One is built per compiler,
flags and emulator headers (60-80 MB) under the build cache, and the newest `KEEP` are kept.

Beside it, the same flags compile the part of the process entry that is the same for every kernel
(`include/forge_emu/entry_run.cpp`: reading the spec, loading GM buffers, running the cores) into
`ENTRY_OBJECT`, which a kernel build links instead of compiling it again (0.3-0.4 s a build
here, benchmarks/README.md). Where it is missing the launcher includes the source itself.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

WRAPPER = "forge_emu_pch.h"
ENTRY_SOURCE = Path("forge_emu") / "entry_run.cpp"
ENTRY_OBJECT = "entry_run.o"
# Precompiled headers kept per cache: one per target's limits and optimisation level in use.
KEEP = 4


def available(include_dir: Path) -> bool:
    """Whether these emulator headers have the wrapper (headers of an older revision do not)."""
    return (include_dir / WRAPPER).is_file()


def prepared(root: Path, cxx: str, flags: Sequence[str], include_dir: Path, headers_digest: str,
             timeout: float) -> Path | None:
    """The folder holding the .gch for these flags (built now if missing), or None when it cannot
    be built; the kernel build then parses the headers, and reports their errors itself."""
    h = hashlib.sha256(f"{cxx}\0{' '.join(flags)}\0{include_dir}\0{headers_digest}".encode())
    key = h.hexdigest()[:24]
    here = root / key
    gch = WRAPPER + ".gch"
    if (here / gch).is_file():
        os.utime(here)                                     # most recently used: kept by _prune
        return here
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=root))
    try:
        cmd = [cxx, *flags, f"-I{include_dir}", "-x", "c++-header", str(include_dir / WRAPPER), "-o", str(work / gch)]
        try:
            ok = subprocess.run(cmd, capture_output=True, timeout=timeout).returncode == 0
        except (subprocess.TimeoutExpired, OSError):
            ok = False
        if not ok:
            return None
        # the entry's object, read from the header just built; without it builds include its source
        cmd = [cxx, *flags, f"-I{work}", f"-I{include_dir}", "-include", WRAPPER, "-c", str(include_dir / ENTRY_SOURCE),
               "-o", str(work / ENTRY_OBJECT)]
        try:
            subprocess.run(cmd, capture_output=True, timeout=timeout)
        except (subprocess.TimeoutExpired, OSError):
            pass
        try:
            os.replace(work, here)                         # atomic publish
        except OSError:
            pass                                           # another build published it first
        _prune(root)
        return here if (here / gch).is_file() else None
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def _prune(root: Path) -> None:
    """Remove all but the KEEP most recently used .gch folders (never one still being built: those
    have a '.' in their name). A build reading a removed one has it open or parses the header."""
    done = sorted((d for d in root.iterdir() if d.is_dir() and "." not in d.name),
                  key=lambda d: d.stat().st_mtime, reverse=True)
    for d in done[KEEP:]:
        shutil.rmtree(d, ignore_errors=True)
