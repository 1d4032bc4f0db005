"""Records, the SQLite store and DataFrame export."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from forge.results.record import Record
from forge.results.store import STORE_NAME, Store


def load(run: str | Path) -> pd.DataFrame:
    """All records of a run folder as a DataFrame (one row per record, JSON fields decoded)."""
    path = Path(run)
    store = Store(path if path.suffix == ".sqlite" else path / STORE_NAME)
    try:
        return pd.DataFrame([r.__dict__ for r in store.iter_records()])
    finally:
        store.close()


__all__ = ["Record", "Store", "load"]
