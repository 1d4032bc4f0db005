"""One forge process at a time per run or bench folder.

Two processes writing one folder (a `--resume` started while the run still goes, the same bench
command in two terminals) would both spend the budget and interleave their records. The guard is
an advisory `flock` on `<folder>/.forge.lock`: the kernel drops it when the holder exits, however
it exits (SIGKILL and power loss included), so a crashed run never leaves a stale lock behind, and
`--resume` works at once after any interruption. Forked children close their copy of the lock's
descriptor, so a build worker left behind cannot hold the folder.
"""
from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from forge.errors import ForgeInputError

LOCK_FILE = ".forge.lock"


class FolderInUse(ForgeInputError):
    """Another live forge process holds the folder: nothing was written, retrying later is fine."""


PATIENCE_S = 1.0   # a reader's probe (folder_holder) holds the lock for microseconds: wait it out

# Descriptors of the locks this process holds. A forked child (a build worker) would share the
# lock through its copy of the descriptor and keep the folder held after this process died, so
# children close their copies at once.
_HELD: set[int] = set()


def _close_held_in_child() -> None:
    for fd in list(_HELD):
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


os.register_at_fork(after_in_child=_close_held_in_child)


def _pid(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None


def _try_lock(fd: int, patience: float) -> bool:
    deadline = time.monotonic() + patience
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


@contextmanager
def folder_lock(folder: Path, field: str) -> Iterator[None]:
    """Hold `folder` for this process; `field` names the option that chose it in the error."""
    fd = os.open(Path(folder) / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _try_lock(fd, PATIENCE_S):
            pid = _pid(fd)
            raise FolderInUse(field, f"{folder} is being written by another forge process"
                                     f"{f' (pid {pid})' if pid else ''}; wait for it to finish or stop it "
                                     "(what it measured is kept, and the folder can be resumed)")
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        _HELD.add(fd)
        yield
    finally:
        _HELD.discard(fd)
        os.close(fd)


def folder_holder(folder: Path) -> int | None:
    """The pid of the live forge process writing `folder` (0 when it wrote none), or None when no
    process is: a report can then tell a run still going from an interrupted one."""
    path = Path(folder) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _pid(fd) or 0
        return None
    finally:
        os.close(fd)


def holder_text(holder: int) -> str:
    """Who holds a folder, for a message: "pid N", or "another process" when it wrote no pid."""
    return f"pid {holder}" if holder else "another process"


def activity(folder: Path, finished: bool) -> str:
    """A run's or bench's state in a word or two: "in progress (pid N)" while a process holds it
    (a finished run being resumed with a raised budget too), else "complete" or "interrupted"."""
    holder = folder_holder(folder)
    if holder is not None:
        return f"in progress ({holder_text(holder)})"
    return "complete" if finished else "interrupted"
