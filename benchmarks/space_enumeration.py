"""How fast forge enumerates a constrained space: a 10^6-point Cartesian product with
capacity, alignment and divisibility rules of the kind the backends use (bar: < 2 s).

    .venv/bin/python benchmarks/space_enumeration.py
"""
from __future__ import annotations

import time

from forge.space import Constraint, Space, choice, int_range, limit, pow2


def million_point_space() -> Space:
    # 10 x 10 x 10 x 10 x 10 x 10 = 10^6 Cartesian points.
    params = [
        pow2("block_m", 1, 512),
        pow2("block_n", 1, 512),
        int_range("stages", 1, 10),
        int_range("warps", 1, 10),
        choice("order", [f"o{i}" for i in range(10)]),
        int_range("unroll", 1, 10),
    ]
    ub = 192 * 1024
    rules = [
        limit("UB", lambda c: (c["block_m"] + c["block_n"]) * 128 * 2 * c["stages"], ub, "KiB", scale=1024,
              parts=lambda c: f"{c['stages']} stages × ({c['block_m']}+{c['block_n']})×128×2 B"),
        Constraint("warps divide block_m", lambda c: c["block_m"] % c["warps"] == 0),
        Constraint("unroll ≤ block_n", lambda c: c["unroll"] <= c["block_n"]),
    ]
    return Space(params, rules)


def main() -> None:
    sp = million_point_space()
    rows = []
    for chunk in (1 << 16, 1 << 20):
        t = time.perf_counter()
        enum = sp.enumerate(chunk=chunk)
        dt = time.perf_counter() - t
        rows.append((chunk, sp.cartesian_size(), len(enum), dt))
    print(f"{'chunk':>8} {'cartesian':>10} {'valid':>8} {'seconds':>8} {'Mpoints/s':>10}  bar < 2 s")
    for chunk, n, valid, dt in rows:
        print(f"{chunk:>8} {n:>10} {valid:>8} {dt:>8.3f} {n / dt / 1e6:>10.1f}  {'ok' if dt < 2 else 'MISSED'}")
    print("rejections by reason:", enum.reason_counts)


if __name__ == "__main__":
    main()
