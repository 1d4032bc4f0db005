"""Programs forge starts to run a kernel (harnesses, emulators, torch timers, NPU launchers) die
with the process that started them.

They run in sessions of their own, so a Ctrl-C meant for forge does not reach them mid-timing; a
forge that is then killed (SIGKILL, or an exit that never reaches its cleanup) would leave a
hanging kernel burning a core and skewing every later timing on the machine. The parent-death
signal (Linux `prctl(PR_SET_PDEATHSIG)`, set by util-linux's `setpriv` just before the program is
executed) has the kernel killed with its parent instead. Where `setpriv` is missing or too old to
take `--pdeathsig`, programs start as before.
"""
from __future__ import annotations

import functools
import shutil
import subprocess
import sys


@functools.cache
def _setpriv() -> str | None:
    if not sys.platform.startswith("linux"):
        return None
    exe = shutil.which("setpriv")
    if exe is None:
        return None
    try:
        ok = subprocess.run([exe, "--pdeathsig", "KILL", "--", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return exe if ok else None


def dies_with_parent(cmd: list[str]) -> list[str]:
    """`cmd`, started so that it is killed when the process that starts it dies."""
    exe = _setpriv()
    return [exe, "--pdeathsig", "KILL", "--", *cmd] if exe else list(cmd)
