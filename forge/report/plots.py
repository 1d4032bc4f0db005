"""Report plots as PNG bytes (matplotlib, Agg): convergence, speedup bars, roofline placement.

Modeled points are drawn hollow and labelled "modeled", so a modeled time never looks measured.
"""
from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MAX_SERIES = 12   # beyond this a convergence plot is unreadable; the slowest-converging are kept


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def convergence_plot(rows: list[dict[str, Any]]) -> bytes | None:
    """Best time so far against evaluations, one line per case."""
    series = [r for r in rows if r.get("convergence")]
    if not series:
        return None
    series = sorted(series, key=lambda r: -len(r["convergence"]))[:MAX_SERIES]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for r in series:
        xs, ys = zip(*r["convergence"])
        ax.step(xs, [y * 1e6 for y in ys], where="post", label=f"{r['source_name']} #{r['case_id']}"[:40],
                linestyle="-" if r.get("time_kind") != "modeled" else "--")
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best time so far (µs)")
    ax.set_yscale("log")
    ax.set_title("Convergence (dashed: modeled times)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, ncol=2, loc="upper right")
    return _png(fig)


def speedup_plot(rows: list[dict[str, Any]]) -> bytes | None:
    """Speedup over the baseline per passed case; the 1.0 line is the baseline."""
    data = [r for r in rows if r.get("speedup")]
    if not data:
        return None
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.22 * len(data) + 1)))
    labels = [f"{r['source_name']} #{r['case_id']}"[:44] for r in data]
    vals = [r["speedup"] for r in data]
    colors = ["#2a7" if v >= 1 else "#c44" for v in vals]
    bars = ax.barh(range(len(data)), vals, color=colors)
    for b, r in zip(bars, data):
        if r.get("time_kind") == "modeled":
            b.set_hatch("//")
    ax.axvline(1.0, color="k", linewidth=0.8)
    ax.set_yticks(range(len(data)), labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("speedup over baseline (hatched: modeled)")
    ax.set_title("Speedup per case")
    return _png(fig)


def roofline_plot(rows: list[dict[str, Any]], peak_flops: dict[str, float], bandwidth: float) -> bytes | None:
    """Each best variant at (arithmetic intensity, achieved FLOP/s) under the target's roofline."""
    data = [r for r in rows if r.get("achieved_flops") and r.get("min_bytes")]
    if not data or not bandwidth:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ai = [r["flops"] / r["min_bytes"] for r in data]
    lo, hi = min(ai) / 4, max(ai) * 4
    xs = [lo * (hi / lo) ** (i / 100) for i in range(101)]
    for dtype in sorted({r["dtype"] for r in data}):
        peak = peak_flops.get(dtype) or peak_flops.get("float32")
        if peak:
            ax.plot(xs, [min(peak, x * bandwidth) / 1e9 for x in xs], label=f"roofline {dtype}")
    for r, a in zip(data, ai):
        modeled = r.get("time_kind") == "modeled"
        ax.scatter([a], [r["achieved_flops"] / 1e9], s=18, marker="o",
                   facecolors="none" if modeled else "C3", edgecolors="C3")
    ax.scatter([], [], facecolors="C3", edgecolors="C3", label="measured")
    ax.scatter([], [], facecolors="none", edgecolors="C3", label="modeled")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / compulsory byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("Best variants against the roofline")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=7)
    return _png(fig)
