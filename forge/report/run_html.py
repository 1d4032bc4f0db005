"""Self-contained HTML page for one tuning run: headline, leaderboard, failures, convergence plot."""
from __future__ import annotations

import base64

from jinja2 import Environment, select_autoescape

from forge.report.leaderboard import Leaderboard
from forge.variant import config_text
from forge.report.render import FILE_FAILURES, headline, notes, table_rows

TEMPLATE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>forge run {{ lb.run_dir }}</title>
<style>
 body { font-family: sans-serif; margin: 1.5em; color: #222; }
 table { border-collapse: collapse; margin: 0.8em 0 1.6em; font-size: 12px; }
 th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; } td.l, th.l { text-align: left; }
 th { background: #eee; } .modeled { font-style: italic; color: #a60; } img { max-width: 100%; }
</style></head><body>
<h1>forge run — {{ lb.run_dir }}</h1>
<ul>{% for line in head %}<li>{{ line }}</li>{% endfor %}</ul>
<h2>Leaderboard</h2>
{% if rows %}<table id="leaderboard"><tr>{% for c in columns %}<th{% if c == "config" %} class="l"{% endif %}>{{ c }}</th>{% endfor %}</tr>
{% for row in rows %}<tr>{% for c, v in zip(columns, row) %}<td{% if c == "config" %} class="l"{% elif c == "median" %} class="{{ row[4] }}"{% endif %}>{{ v }}</td>{% endfor %}</tr>
{% endfor %}</table>{% endif %}
{% if notes %}<ul>{% for line in notes %}<li>{{ line }}</li>{% endfor %}</ul>{% endif %}
{% for title, png in images %}<figure><img alt="{{ title }}" src="data:image/png;base64,{{ png }}"><figcaption>{{ title }}</figcaption></figure>{% endfor %}
{% if lb.failures %}<h2>Failed variants</h2><table id="failures"><tr><th class="l">status</th><th class="l">config</th><th class="l">reason</th></tr>
{% for f in lb.failures[:limit] %}<tr><td class="l">{{ f.status }}</td><td class="l">{{ cfg(f.config) }}</td><td class="l">{{ f.reason[:300] }}</td></tr>{% endfor %}
</table>{% if lb.failures|length > limit %}<p>{{ lb.failures|length - limit }} more failed variants (all are in forge.sqlite).</p>{% endif %}{% endif %}
</body></html>
"""


def leaderboard_html(lb: Leaderboard) -> str:
    from forge.report import plots      # matplotlib only when drawing (CLI start-up)

    kind = lb.rows[0].time_kind if lb.rows else "measured"
    op = lb.info.get("problem", {}).get("op", "")
    png = plots.convergence_plot([{"convergence": lb.convergence, "source_name": op, "case_id": "",
                                   "time_kind": kind}])
    images = [("Best time vs evaluations", base64.b64encode(png).decode())] if png else []
    env = Environment(autoescape=select_autoescape(default=True))
    columns, rows = table_rows(lb)
    return env.from_string(TEMPLATE).render(
        lb=lb, head=headline(lb), images=images, columns=columns, rows=rows, notes=notes(lb), zip=zip,
        cfg=config_text, limit=FILE_FAILURES)
