"""Records, the SQLite store and DataFrame export."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from forge.results.record import Record
from forge.results.store import STORE_NAME, Store

if TYPE_CHECKING:
    import pandas as pd


def load(run: str | Path) -> "pd.DataFrame":
    """A run folder's records as a DataFrame (one row per record, JSON fields decoded; a final
    re-measure superseded by a later one is left out, as everywhere: Store.records)."""
    import pandas as pd         # imported here: a quarter of every CLI command's start-up otherwise

    path = Path(run)
    store = Store(path if path.suffix == ".sqlite" else path / STORE_NAME)
    try:
        return pd.DataFrame([r.__dict__ for r in store.iter_records()])
    finally:
        store.close()


__all__ = ["Record", "Store", "load"]
