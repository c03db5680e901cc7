"""A room of students on one server: N browser sessions (Playwright contexts in the system Chromium) open one
`bertscope` server on 127.0.0.1 at once, against a trivial Streamlit page (one text box, one plotly heatmap)
opened by the same crowd in the same run — the browsers share the machine's cores, so that page is the
yardstick.

Scenarios (--scenario):
  a  every session the same sentence: the Attention page, then Masked words
  b  every session its own 128-token text on the Attention page
Reports per scenario: seconds until each session's first chart (p50 / p95 / max), errors, the server's peak
resident memory, and its growth per session. Bounded: --sessions (default 8), a timeout per page, and the
server stops itself at the end. Everything listens on and talks to 127.0.0.1 only.

    .venv/bin/python bench/sessions.py --sessions 8 --scenario a
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import _common as c

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.app.serve import CHROMIUM, CHROMIUM_ARGS, free_port  # noqa: E402

TRIVIAL = """
import numpy as np, plotly.graph_objects as go, streamlit as st
text = st.text_input("Sentence", key="a", bind="query-params")
words = (text or "x").split()
st.plotly_chart(go.Figure(go.Heatmap(z=np.random.default_rng(0).random((len(words), len(words))))))
"""
CHART = '[data-testid="stPlotlyChart"] .main-svg'


def start(script: Path, model: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = dict(os.environ, BERTSCOPE_MODEL=str(model), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.address", "127.0.0.1",
           "--server.port", str(port), "--server.headless", "true", "--server.fileWatcherType", "none",
           "--browser.gatherUsageStats", "false"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).status == 200:
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("the server did not start")


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return 0.0


async def crowd(url: str, paths: list[list[str]], timeout_s: float) -> tuple[list[float], int]:
    """Open every session at once; each visits its paths in turn. Returns (seconds to first chart, errors)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        errors = 0

        async def session(visits: list[str]) -> float | None:
            nonlocal errors
            context = await browser.new_context()
            page = await context.new_page()
            start = time.monotonic()
            first = None
            try:
                for visit in visits:
                    await page.goto(f"{url}/{visit}", timeout=timeout_s * 1000)
                    await page.wait_for_selector(CHART, timeout=timeout_s * 1000)
                    first = first or time.monotonic() - start
                    if await page.locator('[data-testid="stException"]').count():
                        errors += 1
            except Exception:  # noqa: BLE001 - a timeout or a crash counts as an error, the run goes on
                errors += 1
            finally:
                await context.close()
            return first

        times = await asyncio.gather(*(session(v) for v in paths))
        await browser.close()
    return [t for t in times if t is not None], errors


def summary(times: list[float]) -> str:
    if not times:
        return "no chart appeared"
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return f"p50 {statistics.median(ordered):.1f} s, p95 {p95:.1f} s, max {ordered[-1]:.1f} s"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=8)
    p.add_argument("--scenario", choices=["a", "b"], default="a")
    p.add_argument(
        "--model", default=str(c.bert_base_checkpoint()), help="default: bert-base-size random weights"
    )
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a page may take")
    args = p.parse_args()
    n = max(1, min(args.sessions, 64))  # bounded: this machine runs the browsers too

    def text(i: int) -> str:
        return c.text_of_tokens(12 if args.scenario == "a" else 128, seed=0 if args.scenario == "a" else i)

    def query(i: int) -> str:
        return urllib.parse.urlencode({"a": text(i)})

    with tempfile.TemporaryDirectory() as tmp:
        trivial = Path(tmp) / "trivial.py"
        trivial.write_text(TRIVIAL)
        proc, url = start(trivial, Path(args.model))
        try:
            base, base_errors = asyncio.run(crowd(url, [[f"?{query(i)}"] for i in range(n)], args.timeout))
        finally:
            proc.terminate()
            proc.wait(10)
    proc, url = start(REPO / "app" / "streamlit_app.py", Path(args.model))
    try:
        # One session first loads the model, so the crowd's growth is the sessions', not the weights'.
        asyncio.run(crowd(url, [[f"attention?{urllib.parse.urlencode({'a': 'warm up'})}"]], args.timeout))
        idle = rss_mb(proc.pid)
        visits = [
            [f"attention?{query(i)}"] + ([f"masked?{query(i)}"] if args.scenario == "a" else [])
            for i in range(n)
        ]
        times, errors = asyncio.run(crowd(url, visits, args.timeout))
        peak = rss_mb(proc.pid, "VmHWM")
        after = rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"scenario {args.scenario}, {n} sessions; {c.machine()}; {c.load_average()}")
    print(f"trivial page:  {summary(base)}; errors {base_errors}")
    print(f"BERTScope:     {summary(times)}; errors {errors}")
    if times and base:
        ratio = (
            sorted(times)[int(round(0.95 * (len(times) - 1)))]
            / sorted(base)[int(round(0.95 * (len(base) - 1)))]
        )
        print(f"p95 ratio BERTScope / trivial: {ratio:.2f} (goal for scenario a: <= 1.25)")
    print(
        f"server RSS: model loaded {idle:.0f} MB, peak {peak:.0f} MB, after {after:.0f} MB ({(after - idle) / n:.1f} MB per session)"
    )
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
