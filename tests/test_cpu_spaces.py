"""CPU search spaces: modest sizes, and every kind of rejection explained with its numbers."""
from __future__ import annotations

import pytest

from forge.generators.c.spaces import space_data
from forge.ops import get_op
from forge.targets import get_target
from forge.variant import Variant


def _problem(op, shape, **attrs):
    return get_op(op).problem(shape, "float32", attrs)


@pytest.mark.parametrize("op,shape,attrs", [
    ("attention", dict(B=1, H=8, S=1024, D=64), {}),
    ("attention", dict(B=1, Hq=16, Hkv=4, S=2048, D=128), {"causal": True}),
    ("rmsnorm", dict(M=4096, N=4096), {"residual": True}),
    ("softmax", dict(M=4096, N=4096), {}),
    ("matmul", dict(M=1024, N=1024, K=1024), {}),
])
def test_space_sizes_are_modest(backend, op, shape, attrs):
    e = backend.space(_problem(op, shape, **attrs)).enumerate()
    assert 50 <= len(e) <= 10000, (op, len(e))
    cores = get_target("cpu").details["cores"]
    assert all(c["threads"] <= cores for c in e.configs()[:200])


def test_mha_offers_only_per_head_order(backend):
    sp = backend.space(_problem("attention", dict(B=1, H=4, S=64, D=32)))
    assert sp.param("order").values == ("head",)
    sp = backend.space(_problem("attention", dict(B=1, Hq=4, Hkv=2, S=64, D=32)))
    assert set(sp.param("order").values) == {"head", "group"}
    sp = backend.space(_problem("attention", dict(B=1, H=4, Sq=1, Skv=64, D=32)))
    assert sp.param("order").values == ("head",)


def test_heads_share_the_lanes_only_where_a_head_leaves_lanes_empty(backend):
    """order=lanes is offered below the smallest block_q (16 queries); its block_q is capped by the
    group's query rows padded, and must hold one query of every head of the group."""
    assert "lanes" not in backend.space(_problem("attention", dict(B=1, Hq=8, Hkv=2, Sq=16, Skv=64, D=32))).param(
        "order").values
    sp = backend.space(_problem("attention", dict(B=1, Hq=8, Hkv=2, Sq=5, Skv=64, D=32)))
    assert set(sp.param("order").values) == {"head", "group", "lanes"}
    lanes = _base_attention() | {"order": "lanes"}
    assert not sp.check(lanes | {"block_q": 32, "qv": 2})              # 4 heads x 5 queries pad to 32
    assert any("block_q<=padded Sq: 64 > 32: 4 heads x Sq=5 padded to a multiple of 16" in r
               for r in sp.check(lanes | {"block_q": 64}))
    assert any("block_q<=padded Sq: 32 > 16: Sq=5" in r for r in sp.check(_base_attention() | {"block_q": 32}))
    sp = backend.space(_problem("attention", dict(B=1, Hq=32, Hkv=1, Sq=1, Skv=64, D=32)))
    assert any(r.startswith("lanes hold the group: block_q=16 < 32") for r in sp.check(lanes))
    assert not sp.check(lanes | {"block_q": 32, "qv": 2})


def _base_attention():
    return dict(block_q=16, block_kv=32, vec=16, kr=2, qv=1, mr=1, order="head", threads=1, schedule="static")


def test_rejections_name_rule_and_numbers(backend):
    p = _problem("attention", dict(B=1, Hq=32, Hkv=4, S=4096, D=256))
    sp = backend.space(p)
    cores = get_target("cpu").details["cores"]
    cfg = _base_attention() | {"threads": 64}
    assert any(r.startswith("threads: 64 threads") and f"{cores} cores" in r for r in sp.check(cfg))
    cfg = _base_attention() | {"block_q": 64, "kr": 8, "qv": 4}
    assert any(r.startswith("accumulators: 32 vectors > %d" % space_data()["max_accumulators"]) for r in sp.check(cfg))
    cfg = _base_attention() | {"qv": 2}                           # 2 x 16 query lanes do not divide 16 queries
    assert any("qv*vec=32" in r for r in sp.check(cfg))
    cfg = _base_attention() | {"block_q": 128, "block_kv": 256, "order": "group"}
    reasons = sp.check(cfg)
    assert any(r.startswith("L2 working set:") and "KiB >" in r and "Q " in r for r in reasons), reasons
    assert not sp.check(_base_attention())


def test_block_larger_than_padded_dim_rejected(backend):
    sp = backend.space(_problem("attention", dict(B=1, H=1, Sq=20, Skv=40, D=32)))
    reasons = sp.check(_base_attention() | {"block_q": 64})
    assert any("block_q<=padded Sq: 64 > 32" in r for r in reasons), reasons
    sp = backend.space(_problem("matmul", dict(M=5, N=70, K=9)))
    cfg = dict(mc=32, nc=128, kc=64, mr=1, nv=1, vec=16, threads=1, schedule="static")
    assert not any(r.startswith("nc<=") for r in sp.check(cfg))      # N=70 pads to 128: allowed
    assert any(r.startswith("kc<=padded K") for r in sp.check(cfg | {"kc": 128}))


def test_check_uses_the_same_rules_as_enumeration(backend):
    sp = backend.space(_problem("softmax", dict(M=3, N=10)))
    e = sp.enumerate()
    valid = {tuple(sorted(c.items())) for c in e.configs()}
    for cfg in sp.iter_cartesian():
        assert (not sp.check(cfg)) == (tuple(sorted(cfg.items())) in valid)
    assert backend.check(Variant(_problem("softmax", dict(M=3, N=10)), "cpu", e.config(0))).ok


def test_dot_product_scores_are_offered_for_decode_with_one_query_vector(backend):
    """qk (outer-product tiles or dot products along D) is a knob only where lanes go empty (Sq below
    the smallest block_q); qv shapes only the outer-product tile, so qk=dot takes qv=1 alone."""
    names = lambda shape: [q.name for q in backend.space(_problem("attention", shape)).params]  # noqa: E731
    assert "qk" not in names(dict(B=1, H=4, Sq=16, Skv=64, D=32))
    sp = backend.space(_problem("attention", dict(B=1, H=4, Sq=1, Skv=64, D=32)))
    assert sp.param("qk").values == ("outer", "dot")
    dot = _base_attention() | {"block_q": 32, "qk": "dot"}
    assert not sp.check(dot | {"block_q": 16})
    assert any(r.startswith("dot scores take no query tile: qk=dot with qv=2") for r in sp.check(dot | {"qv": 2}))
    assert not sp.check(dot | {"block_q": 16, "qk": "outer", "vec": 8, "qv": 2})
