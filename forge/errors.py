"""Errors a user can cause. The CLI turns them into one clear line and exit code 2."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class ForgeInputError(ValueError):
    """Bad input from the user: names the field or value and what is allowed."""

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(f"{field}: {message}")

    def __reduce__(self):
        # rebuilt from its two arguments, so the error crosses a process pool (benchmarks' workers)
        return type(self), (self.field, self.message)


@contextmanager
def writing(field: str, path: str | Path, what: str = "") -> Iterator[None]:
    """A path the user gave that cannot be created or written is their input error (the option
    named by `field`), not a traceback."""
    try:
        yield
    except OSError as exc:
        why = exc.strerror or str(exc)
        if isinstance(exc, (FileExistsError, NotADirectoryError)):
            # mkdir of a folder under a file says only "File exists": name the file in the way
            blocking = next((a for a in (Path(path), *Path(path).parents) if a.exists() and not a.is_dir()), None)
            if blocking is not None and blocking != Path(path):
                why = f"{blocking} is a file, not a folder"
        raise ForgeInputError(field, f"cannot write {what + ' ' if what else ''}{path}: {why}") from None


def read_json(field: str, path: str | Path) -> dict:
    """A JSON file forge wrote into a folder the user named (run.json, bench.json): damage to it is
    reported as that file's, with exit 2, rather than as a decoder traceback."""
    import json

    try:
        data = json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ForgeInputError(field, f"{path} is not readable ({exc}); the folder is damaged") from None
    if not isinstance(data, dict):
        raise ForgeInputError(field, f"{path} is not a JSON object; the folder is damaged")
    return data
