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


def test_every_committed_record_is_in_the_database_file_itself(tmp_path):
    """A copy of forge.sqlite alone, taken while the store is still open (as after a SIGKILL), holds
    every committed record: the write-ahead log kept them in forge.sqlite-wal until the next open. A
    store an earlier forge left in that mode is turned back when opened."""
    s = Store.for_run(tmp_path / "a")
    s.add(rec(1))
    s.add(rec(2))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "forge.sqlite").write_bytes((tmp_path / "a" / "forge.sqlite").read_bytes())
    assert [r.variant_key for r in Store.for_run(tmp_path / "b").records()] == ["k1", "k2"]
    s.close()
    # an earlier forge's log-mode store, with a record still only in its log and another program
    # holding it open: used as it is (not turned back, which needs it alone), then turned back
    raw = sqlite3.connect(tmp_path / "a" / "forge.sqlite", isolation_level=None)
    assert raw.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    raw.execute("PRAGMA wal_autocheckpoint=0")
    raw.execute("INSERT INTO meta (key, value) VALUES ('only_in_the_log', '1')")
    s = Store.for_run(tmp_path / "a")
    assert s.get_meta("only_in_the_log") == 1 and s.count() == 2
    s.add(rec(3))
    s.close()
    raw.close()
    s = Store.for_run(tmp_path / "a")
    assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete" and s.count() == 3
    assert s.get_meta("only_in_the_log") == 1


def test_a_store_damaged_past_its_first_page_is_named_not_a_traceback(tmp_path):
    from forge.results.store import StoreError

    s = Store.for_run(tmp_path)
    for i in range(200):
        s.add(rec(i))
    s.close()
    path = tmp_path / "forge.sqlite"
    data = bytearray(path.read_bytes())
    data[4096:4108] = b"\xff" * 12          # the header of page 2
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="forge.sqlite is not a readable forge store .*; the run folder is damaged"):
        Store.for_run(tmp_path).records()


def test_a_record_that_does_not_decode_is_named_not_a_traceback(tmp_path):
    from forge.results.store import StoreError

    s = Store.for_run(tmp_path)
    s.add(rec(1))
    s.conn.execute("DROP TRIGGER records_no_update")
    s.conn.execute("UPDATE records SET config = '{broken'")
    with pytest.raises(StoreError, match="holds a record that does not read .*JSONDecodeError.*the run folder is damaged"):
        s.records()


def test_a_store_another_program_keeps_locked_is_named_not_a_traceback(tmp_path, monkeypatch):
    import forge.results.store as store_module

    s = Store.for_run(tmp_path)
    s.add(rec(1))
    s.close()
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.2)
    other = sqlite3.connect(tmp_path / "forge.sqlite", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(store_module.StoreError, match=r"is locked by another program \(forge waits up to 0.2 s"):
            Store.for_run(tmp_path).add(rec(2))
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert Store.for_run(tmp_path).count() == 1
