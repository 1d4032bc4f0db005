"""Self-contained HTML leaderboard: tables plus matplotlib PNGs inlined as base64 (no network).

A tiny inline script counts the images that decoded and writes it to <body data-images-loaded>, so
a headless browser test can check that the page really rendered its plots.
"""
from __future__ import annotations

import base64
from typing import Any

from jinja2 import Environment, select_autoescape

from forge.report.progress import clip, plural
from forge.variant import config_text

TEMPLATE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>forge bench: {{ b.suite }} on {{ b.target }}</title>
<style>
 body { font-family: sans-serif; margin: 1.5em; color: #222; }
 table { border-collapse: collapse; margin: 0.8em 0 1.6em; font-size: 12px; }
 th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
 th { background: #eee; } td.l, th.l { text-align: left; }
 .PASSED { color: #176; font-weight: bold; } .UNSUPPORTED { color: #888; } .fail { color: #b22; font-weight: bold; }
 .modeled { font-style: italic; color: #a60; } img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
 .note { color: #666; font-size: 12px; }
</style></head>
<body>
<h1>forge bench — {{ b.suite }} on {{ b.target }} ({{ b.target_kind }})</h1>
{% if b.state.line %}<p class="fail" id="state">{{ b.state.line }}</p>{% endif %}
<p class="note">{% if b.description.strip() %}{{ b.description.rstrip(".") }}. {% endif %}{{ b.anchors }}. {{ b.correctness }}.{% if b.target_partial %} The target description is partial
(some hardware numbers are estimates).{% endif %} Times in µs; <span class="modeled">italic = modeled</span>, never measured.</p>

<h2>Suite totals</h2>
<table id="totals"><tr><th>cases</th><th>supported</th><th>passed</th><th>pass rate</th><th>geomean speedup</th>
{% for p in fast_ps %}<th>fast_{{ p }}</th>{% endfor %}<th>mean SOL score</th><th>cann-bench total</th><th>measured / modeled</th></tr>
<tr><td>{{ t.cases }}</td><td>{{ t.supported }}</td><td>{{ t.passed }}</td><td>{{ pct(t.pass_rate) }}</td><td>{{ num(t.geomean_speedup) }}</td>
{% for p in fast_ps %}<td>{{ pct(t.fast_p[p]) }}</td>{% endfor %}<td>{{ num(t.mean_sol_score) }}</td><td>{{ num(t.cann_total_score, 1) }}</td>
<td>{{ t.measured }} / {{ t.modeled }}</td></tr></table>
{% if t.sol_unscored %}<p class="note" id="unscored">{{ plural(t.sol_unscored, "passed case") }} without a baseline left out of the
mean SOL score and fast_p: both need T_b; cann-bench stands in max(10 T_HW, 10 µs) for it.</p>{% endif %}
{% if t.unchecked %}<p class="note" id="unchecked">{{ plural(t.unchecked, "case") }} not passed: no variant ran where its
output could be checked (compiled and within the limits, correctness not checked).</p>{% endif %}

<h2>Per problem / operator</h2>
<table id="operators"><tr><th class="l">source</th><th class="l">name</th><th class="l">forge op</th><th>cases</th><th>passed</th>
<th>pass rate</th><th>geomean speedup</th>{% for p in fast_ps %}<th>fast_{{ p }}</th>{% endfor %}<th>mean SOL score</th><th>cann-bench score</th></tr>
{% for o in b.operators %}<tr><td class="l">{{ o.source }}</td><td class="l">{{ o.name }}</td><td class="l">{{ o.ops|join(", ") }}</td>
<td>{{ o.cases }}</td><td>{{ o.passed }}</td><td>{{ pct(o.pass_rate) }}</td><td>{{ num(o.geomean_speedup) }}</td>
{% for p in fast_ps %}<td>{{ pct(o.fast_p[p]) }}</td>{% endfor %}<td>{{ num(o.mean_sol_score) }}</td><td>{{ num(o.cann_score, 1) }}</td></tr>
{% endfor %}</table>

<h2>Plots</h2>
{% for title, png in images %}<figure><img alt="{{ title }}" src="data:image/png;base64,{{ png }}"><figcaption class="note">{{ title }}</figcaption></figure>
{% endfor %}

<h2>Per case</h2>
<table id="cases"><tr><th class="l">source</th><th class="l">name</th><th class="l">id</th><th class="l">forge problem</th><th class="l">status</th>
<th>best (µs)</th><th>baseline (µs)</th><th class="l">baseline</th><th>speedup</th><th>T_SOL (µs)</th><th>SOL score</th><th>HAP</th>
<th>evals</th><th class="l">best config / reason</th></tr>
{% for r in b.cases %}<tr><td class="l">{{ r.source }}</td><td class="l">{{ r.source_name }}</td><td class="l">{{ r.case_id }}</td>
<td class="l">{% if r.op %}{{ r.op }} {{ shape(r.shape) }} {{ r.dtype }}{% endif %}</td>
<td class="l {{ r.status if r.status in ('PASSED', 'UNSUPPORTED') else 'fail' }}">{{ r.status_text }}</td>
<td class="{{ r.time_kind }}">{{ us(r.time) }}</td><td class="{{ r.baseline_time_kind }}">{{ us(r.t_b) }}</td><td class="l">{{ r.baseline_kind or "" }}</td>
<td>{{ num(r.speedup) }}</td><td>{{ us(r.t_sol) }}</td><td>{{ num(r.sol_score) }}</td><td>{{ num(r.hap) }}</td><td>{{ r.evaluations or "" }}</td>
<td class="l">{% if r.status == "PASSED" %}{{ cfg(r.config) }}{% if r.criterion_note %}; {{ r.criterion_note }}{% endif %}{% else %}{{ clip(r.reason or "", 200) }}{% endif %}</td></tr>
{% endfor %}</table>
<script>
 window.addEventListener("load", function () {
   var imgs = document.images, ok = 0;
   for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
   document.body.setAttribute("data-images-loaded", String(ok));
   document.body.setAttribute("data-images-total", String(imgs.length));
 });
</script>
</body></html>
"""


def _num(x: Any, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _pct(x: Any) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def _us(x: Any) -> str:
    """Seconds as µs to three significant digits, whole µs from 1000 up (not 2.11e+03)."""
    if x is None:
        return "—"
    us = x * 1e6
    return f"{us:.0f}" if us >= 999.5 else f"{us:.3g}"


def _shape(s: dict | None) -> str:
    return "[" + ",".join(f"{k}={v}" for k, v in (s or {}).items()) + "]"


def figures(board: dict[str, Any]) -> list[tuple[str, bytes]]:
    from forge.report import plots      # matplotlib: a third of the CLI's start-up, so only when drawing
    from forge.targets import get_target

    target = get_target(board["target"])
    rows = [r for r in board["cases"] if r["status"] != "UNSUPPORTED"]
    out = []
    for title, png in (("Convergence: best time vs evaluations", plots.convergence_plot(rows)),
                       ("Speedup over the baseline per case", plots.speedup_plot(rows)),
                       ("Best variants against the roofline", plots.roofline_plot(rows, target.peak_flops,
                                                                                   target.memory_bandwidth))):
        if png:
            out.append((title, png))
    return out


def render_html(board: dict[str, Any]) -> str:
    env = Environment(autoescape=select_autoescape(default=True))
    tpl = env.from_string(TEMPLATE)
    images = [(t, base64.b64encode(p).decode()) for t, p in figures(board)]
    return tpl.render(b=board, t=board["total"], images=images, fast_ps=list(board["total"]["fast_p"]),
                      num=_num, pct=_pct, us=_us, shape=_shape, cfg=config_text, clip=clip, plural=plural)
