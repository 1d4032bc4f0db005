"""Constrained spaces: enumeration matches a brute-force check, reasons are kept, overrides validate."""
import pytest
from hypothesis import given, settings, strategies as st

from forge.errors import ForgeInputError
from forge.space import Constraint, Space, choice, int_range, limit, pow2


def small_space() -> Space:
    return Space(
        [pow2("bq", 8, 128), pow2("bk", 8, 128), int_range("unroll", 1, 4), choice("order", ["qk", "kq"])],
        [limit("smem", lambda c: (c["bq"] + c["bk"]) * 64 * 4, 48 * 1024, "KiB", scale=1024,
               parts=lambda c: f"q {c['bq']}×64×4 B, k {c['bk']}×64×4 B"),
         Constraint("unroll divides bk", lambda c: c["bk"] % c["unroll"] == 0)])


def test_enumeration_matches_pointwise_check():
    sp = small_space()
    enum = sp.enumerate()
    valid = {tuple(c.values()) for c in enum.configs()}
    brute = {tuple(c.values()) for c in sp.iter_cartesian() if not sp.check(c)}
    assert valid == brute
    assert len(valid) + sum(enum.reason_counts.values()) == sp.cartesian_size()


def test_rejection_reason_carries_numbers():
    sp = small_space()
    reasons = sp.check({"bq": 128, "bk": 128, "unroll": 3, "order": "qk"})
    assert reasons[0] == "smem: 64 KiB > 48 KiB: q 128×64×4 B, k 128×64×4 B"
    assert reasons[1] == "unroll divides bk"


def test_counts_by_first_failing_rule():
    enum = small_space().enumerate()
    assert set(enum.reason_counts) == {"smem", "unroll divides bk"}
    assert enum.reason_counts["smem"] == sum(
        1 for c in small_space().iter_cartesian() if (c["bq"] + c["bk"]) * 256 > 48 * 1024)


def test_chunked_enumeration_equals_single_chunk():
    sp = small_space()
    a, b = sp.enumerate(), sp.enumerate(chunk=7)
    assert (a.valid == b.valid).all() and a.reason_counts == b.reason_counts


def test_restrict_fixes_and_subsets():
    sp = small_space().restrict({"bq": 32, "order": ["kq"]})
    assert sp.param("bq").values == (32,)
    assert all(c["order"] == "kq" for c in sp.enumerate().configs())


def test_restrict_rejects_unknown_parameter_and_value():
    with pytest.raises(ForgeInputError, match="space.nope"):
        small_space().restrict({"nope": 1})
    with pytest.raises(ForgeInputError, match=r"space.bq.*allowed: \[8, 16, 32, 64, 128\]"):
        small_space().restrict({"bq": 3})
    # true == 1 and 16.0 == 16 in Python, but neither is the value meant: refused, not taken as 1 or 16
    sp = Space([choice("db", [1, 2]), pow2("bq", 8, 128), choice("flag", [False, True])], [])
    for bad in ({"db": True}, {"bq": 16.0}, {"flag": 1}):
        with pytest.raises(ForgeInputError, match="not allowed"):
            sp.restrict(bad)
    assert sp.restrict({"db": 2, "flag": True}).param("flag").values == (True,)
    with pytest.raises(ForgeInputError, match="space.db"):
        sp.indices({"db": True, "bq": 16, "flag": False})


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 5000))
def test_enumeration_agrees_with_scalar_check(na, nb, cap):
    sp = Space([int_range("a", 1, na), int_range("b", 1, nb)],
               [limit("prod", lambda c: c["a"] * c["b"] * 100, cap)])
    enum = sp.enumerate()
    assert {tuple(c.values()) for c in enum.configs()} == {
        tuple(c.values()) for c in sp.iter_cartesian() if not sp.check(c)}
