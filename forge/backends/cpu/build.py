"""Compile a generated C source into `cache_dir/<source_hash>/prog`, cached and race-safe.

Several processes may build the same source at once: each compiles in its own temporary folder
and renames it into place; the loser of the rename discards its identical copy. An entry is used
only while its program still matches the size and digest written beside it when it was built: a
cache folder damaged since (a program missing or cut short by a full disk or a careless clean-up)
is built again, rather than failing every later run of the variant as if its kernel crashed.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from forge.backends.base import Artifact, Source

EXE = "prog"
STAMP = "prog.sha256"       # "<size> <sha256>" of EXE, written last: an entry without it is unfinished
BUILD_TIMEOUT_S = 300


def _stamp_of(exe: Path) -> str:
    data = exe.read_bytes()
    return f"{len(data)} {hashlib.sha256(data).hexdigest()}"


def _intact(final: Path) -> bool:
    try:
        return (final / STAMP).read_text() == _stamp_of(final / EXE)
    except OSError:
        return False


def _discard(final: Path) -> None:
    """Move a damaged entry out of the way and remove it. A concurrent builder may have put a good
    entry in its place since it was judged damaged: one found intact once moved is put back."""
    aside = final.with_name(f".damaged-{final.name}-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.rename(final, aside)
    except OSError:
        return
    if _intact(aside):
        try:
            os.rename(aside, final)
            return
        except OSError:          # another good entry is in place by now: this copy is not needed
            pass
    shutil.rmtree(aside, ignore_errors=True)


@lru_cache(maxsize=None)
def compiler_version(compiler: str) -> str:
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{compiler} (unavailable: {exc})"
    return out.splitlines()[0].strip() if out else compiler


def build_source(source: Source, key: str, cache_dir: Path, compiler: str, flags: list[str]) -> Artifact:
    """Build `source` (all its .c files) with `compiler flags`; compile errors -> ok=False."""
    toolchain = compiler_version(compiler)
    digest = source.digest([compiler, *flags])
    cache_dir = Path(cache_dir)
    final = cache_dir / digest
    exe = final / EXE
    common = dict(variant_key=key, source_hash=digest, toolchain=toolchain, flags=list(flags))
    if final.exists():
        if _intact(final):
            return Artifact(ok=True, path=str(exe), cached=True, **common)
        _discard(final)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=cache_dir))
    try:
        for name, text in source.files.items():
            (tmp / name).write_text(text)
        c_files = sorted(n for n in source.files if n.endswith(".c"))
        cmd = [compiler, *flags, *c_files, "-o", EXE, "-lm"]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except FileNotFoundError:
            return Artifact(ok=False, error=f"compiler {compiler!r} not found", **common)
        except subprocess.TimeoutExpired:
            return Artifact(ok=False, error=f"compiler did not finish within {BUILD_TIMEOUT_S} s", **common)
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            return Artifact(ok=False, error=(proc.stderr or proc.stdout).strip()[-4000:],
                            build_seconds=seconds, **common)
        (tmp / STAMP).write_text(_stamp_of(tmp / EXE))
        try:
            os.rename(tmp, final)
        except OSError:
            if not _intact(final):  # not a lost race: a real failure
                raise
        return Artifact(ok=True, path=str(exe), build_seconds=seconds, **common)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
