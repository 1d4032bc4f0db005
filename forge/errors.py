"""Errors a user can cause. The CLI turns them into one clear line and exit code 2."""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator
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


def allowed_list(value: object, names: Iterable[str], none: str = "none") -> str:
    """`allowed: a, b, c`, led by `did you mean 'b'?` when one name is close to `value`: users
    type cann-bench's and SOL-ExecBench's spellings (`rms_norm`, `H100`) for forge's."""
    names = list(names)
    listed = f"allowed: {', '.join(names) or none}"
    if not isinstance(value, str) or not names:
        return listed

    def key(name: str) -> str:
        # case, '_' and '-' aside, and torch's short dtype names (fp16, bf16) written out
        k = name.lower().replace("_", "").replace("-", "")
        return re.sub(r"^(b?)f(?:p|loat)?(?=\d)", r"\1float", k)

    # of names equal but for case and separators (rms_norm, rmsnorm), the one spelt most alike
    same = sorted((n for n in names if key(n) == key(value)),
                  key=lambda n: -difflib.SequenceMatcher(None, n.lower(), value.lower().replace("-", "_")).ratio())
    lowered = {n.lower(): n for n in names}
    close = same or [lowered[c] for c in difflib.get_close_matches(value.lower(), lowered, n=1, cutoff=0.75)]
    return f"did you mean {close[0]!r}? {listed}" if close else listed


# strerror texts of a machine that cannot build or run anything more (C library messages for
# ENOSPC, EDQUOT and EROFS, as a compiler or the harness prints them)
MACHINE_FAULTS = ("No space left on device", "Disk quota exceeded", "Read-only file system")


class MachineFault(ForgeInputError):
    """A variant failed because of the machine, not its code (a full disk under the build cache):
    recording it would spend the budget on failures that a resume would never retry."""


def machine_fault(text: str) -> str | None:
    """The machine fault a failure's message names, else None."""
    return next((f for f in MACHINE_FAULTS if f in text), None)


SQLITE_MAGIC = b"SQLite format 3\x00"


def records_at(path: str | Path) -> str | None:
    """What forge keeps at `path` when it is one of its record files (a run's store or run.json, a
    bench's bench.json or case marker, the tuning bank or any other SQLite database), else None."""
    from forge.bench.runner import BENCH_FILE, CASE_MARKER, CASES_DIR
    from forge.results.lock import LOCK_FILE
    from forge.results.store import RUN_FILE, STORE_NAME

    p = Path(path)
    if not p.is_file():
        return None
    # a name is forge's where the folder around it is a run's or a bench's: a report of one's own
    # named run.json elsewhere may be written again
    if (p.name == LOCK_FILE or (p.name == RUN_FILE and (p.parent / STORE_NAME).exists())
            or (p.name == BENCH_FILE and (p.parent / CASES_DIR).is_dir())
            or (p.name == CASE_MARKER and p.parent.parent.name == CASES_DIR)):
        return f"forge's {p.name}"
    try:
        with open(p, "rb") as f:
            if f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC:
                return "an SQLite database (a forge store, an Optuna study or the tuning bank)"
    except OSError:
        pass
    return None


@contextmanager
def writing(field: str, path: str | Path, what: str = "") -> Iterator[None]:
    """A path the user gave that cannot be created or written is their input error (the option
    named by `field`), not a traceback; so is one that would replace what forge has recorded."""
    kept = records_at(path)
    if kept:
        raise ForgeInputError(field, f"{path} is {kept}: writing over it would lose what it records; "
                                     "name another file")
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
