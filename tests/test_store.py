"""The record store is a real SQLite database, append-only, and survives reopening."""
import sqlite3

import pytest

from forge.results import Record, Store, load


def rec(i, status="ok"):
    return Record("run", f"k{i}", "softmax", {"M": 1, "N": 2}, "float32", "cpu", {"x": i}, status,
                  timings=[3e-3, 1e-3, 2e-3] if status == "ok" else [])


def test_records_round_trip_and_summary(tmp_path):
    s = Store.for_run(tmp_path)
    s.add(rec(1))
    s.add(rec(2, "timeout"))
    s.close()
    s = Store.for_run(tmp_path)
    got = s.records()
    assert [r.variant_key for r in got] == ["k1", "k2"]
    assert got[0].median == 2e-3 and got[0].spread == pytest.approx(1e-3)
    assert got[0].config == {"x": 1} and got[1].status == "timeout"
    df = load(tmp_path)
    assert list(df.variant_key) == ["k1", "k2"] and df["median"].iloc[0] == 2e-3


def test_records_cannot_be_overwritten_or_deleted(tmp_path):
    s = Store.for_run(tmp_path)
    s.add(rec(1))
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        s.conn.execute("UPDATE records SET status = 'incorrect'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        s.conn.execute("DELETE FROM records")
    assert s.records()[0].status == "ok"
