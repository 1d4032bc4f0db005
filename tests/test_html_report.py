"""The HTML leaderboard opened in a real headless browser: tables and inlined plots render."""
import re
import shutil
import subprocess

import pytest

from forge.bench.render import write_reports
from forge.bench.runner import run_bench
from test_bench import PLAN, fake_tuner, make_suite  # noqa: F401 (fixture)

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


@pytest.mark.skipif(BROWSER is None, reason="no chromium on PATH; .ci/install-chromium.sh installs Debian's chromium")
def test_html_renders_tables_and_images_in_chromium(tmp_path, fake_tuner):  # noqa: F811
    fake_tuner(PLAN)
    bench = tmp_path / "bench"
    run_bench(make_suite(), "cpu", bench)
    html = write_reports(bench, terminal=False)["html"]
    flags = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(flags + ["--virtual-time-budget=5000", "--dump-dom", html.as_uri()],
                         capture_output=True, text=True, timeout=90).stdout
    assert re.search(r'data-images-loaded="3"', dom), dom[:500]        # all three PNGs decoded
    assert 'data-images-total="3"' in dom
    for table in ("totals", "operators", "cases"):
        assert f'<table id="{table}">' in dom
    assert dom.count("<tr>") >= 1 + 1 + 5
    shot = tmp_path / "page.png"
    subprocess.run(flags + ["--window-size=1200,1600", f"--screenshot={shot}", html.as_uri()],
                   capture_output=True, timeout=90)
    assert shot.is_file() and shot.stat().st_size > 10_000
