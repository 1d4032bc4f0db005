"""One forge process at a time per run or bench folder.

Two processes writing one folder (a `--resume` started while the run still goes, the same bench
command in two terminals) would both spend the budget and interleave their records. The guard is
an advisory `flock` on `<folder>/.forge.lock`: the kernel drops it when the holder exits, however
it exits (SIGKILL and power loss included), so a crashed run never leaves a stale lock behind, and
`--resume` works at once after any interruption.
"""
from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from forge.errors import ForgeInputError

LOCK_FILE = ".forge.lock"


class FolderInUse(ForgeInputError):
    """Another live forge process holds the folder: nothing was written, retrying later is fine."""


@contextmanager
def folder_lock(folder: Path, field: str) -> Iterator[None]:
    """Hold `folder` for this process; `field` names the option that chose it in the error."""
    path = Path(folder) / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip()
            raise FolderInUse(field, f"{folder} is being written by another forge process"
                                     f"{f' (pid {holder})' if holder.isdigit() else ''}; wait for it to "
                                     "finish or stop it (what it measured is kept, and the folder can be "
                                     "resumed)") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        os.close(fd)
