"""bench/first_visit.py end to end with the small demo model: the numbers docs/deploy.md gives for a room's
Wi-Fi keep coming from a script that runs, and the deployed Caddyfile keeps shrinking what a first visit
downloads. Needs Chromium and the `caddy` binary, as tests/deploy/test_proxy.py does; BERTSCOPE_SKIP_PROXY=1 or
BERTSCOPE_SKIP_BROWSER=1 skips it, as it skips those."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app.models import DEMO_MODEL_DIR

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.browser]

for _switch in ("BERTSCOPE_SKIP_PROXY", "BERTSCOPE_SKIP_BROWSER"):
    if os.environ.get(_switch) == "1":
        pytest.skip(f"{_switch}=1", allow_module_level=True)


def test_a_first_visit_through_the_caddyfile_downloads_a_third_of_it_straight():
    run = subprocess.run(
        [sys.executable, "bench/first_visit.py", "--visits", "1", "--model", str(DEMO_MODEL_DIR)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    first = {}
    for label in ("straight from the app", "Caddy, no encode", "through the Caddyfile"):
        line = next(line for line in run.stdout.splitlines() if re.match(rf"{label}\s+first visit", line))
        first[label] = float(re.search(r"first visit ([\d.]+) MB", line).group(1))
        # A return visit finds the scripts in the browser's cache, however they came.
        assert float(re.search(r"return visit ([\d.]+) kB", line).group(1)) < 50, line
    assert first["Caddy, no encode"] == pytest.approx(first["straight from the app"], rel=0.02)
    assert first["through the Caddyfile"] < first["straight from the app"] / 2
    ratio = float(re.search(r"through the Caddyfile / straight: ([\d.]+)", run.stdout).group(1))
    assert ratio < 0.5
