"""deploy/Caddyfile in front of real `bertscope --shared` replicas: a browser's session works through the
proxy (websocket included), each browser keeps reaching one replica, one whose replica stops is sent to the
other, and what a first visit downloads is compressed.

The Caddyfile is the deployed one with two test-only changes: its upstreams are the two replicas on 127.0.0.1
(Docker's DNS, which `dynamic a` asks for the replicas, is not here), and each response names the replica that
served it. Needs the `caddy` binary (CI installs it: apt-get install caddy); BERTSCOPE_SKIP_PROXY=1 skips.
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.app.serve import browser, free_port, serve_app, wait_for_app

pytestmark = [pytest.mark.slow, pytest.mark.browser]

if os.environ.get("BERTSCOPE_SKIP_PROXY") == "1":
    pytest.skip("BERTSCOPE_SKIP_PROXY=1", allow_module_level=True)

CADDYFILE = Path(__file__).resolve().parents[2] / "deploy" / "Caddyfile"


def check_compose():
    """deploy/check_compose.py, a script rather than a package module."""
    path = CADDYFILE.with_name("check_compose.py")
    spec = importlib.util.spec_from_file_location("check_compose", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHART = '[data-testid="stPlotlyChart"] .main-svg'


def caddy() -> str:
    found = shutil.which("caddy")
    if not found:
        raise RuntimeError(
            "caddy not found: install it (apt-get install -y caddy) or set BERTSCOPE_SKIP_PROXY=1 to skip"
        )
    return found


def proxy_config(proxy_port: int, upstreams: list[str]) -> str:
    text = CADDYFILE.read_text()
    text, n = re.subn(r"dynamic a [^\n]*\{[^}]*\}", "to " + " ".join(upstreams), text)
    assert n == 1, "the Caddyfile's dynamic upstream block changed shape"
    text, n = re.subn(r"^:8080 \{", f":{proxy_port} {{\n\tbind 127.0.0.1", text, flags=re.M)
    assert n == 1, "the Caddyfile no longer serves :8080"
    text = text.replace(
        "lb_policy cookie",
        "header_down X-Replica {http.reverse_proxy.upstream.hostport}\n\t\tlb_policy cookie",
    )
    return "{\n\tadmin off\n\tauto_https off\n}\n" + text


@contextlib.contextmanager
def proxy(config: str, directory: Path):
    path = directory / "Caddyfile"
    path.write_text(config)
    proc = subprocess.Popen(
        [caddy(), "run", "--config", str(path), "--adapter", "caddyfile"],
        stdout=subprocess.DEVNULL,
        stderr=open(directory / "caddy.log", "wb"),  # noqa: SIM115
        env=dict(
            os.environ, HOME=str(directory), XDG_DATA_HOME=str(directory), XDG_CONFIG_HOME=str(directory)
        ),
    )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {port}")


@pytest.mark.skipif(os.environ.get("BERTSCOPE_SKIP_BROWSER") == "1", reason="BERTSCOPE_SKIP_BROWSER=1")
def test_two_replicas_behind_the_caddyfile_keep_each_browser_on_its_replica(tiny_checkpoint, tmp_path):
    ports = [free_port(), free_port()]
    upstreams = [f"127.0.0.1:{p}" for p in ports]
    proxy_port = free_port()
    with contextlib.ExitStack() as stack:
        replicas = [
            stack.enter_context(serve_app(tiny_checkpoint, tmp_path / f"r{n}.log", shared=True, port=p))
            for n, p in enumerate(ports)
        ]
        stack.enter_context(proxy(proxy_config(proxy_port, upstreams), tmp_path))
        wait_for_port(proxy_port)
        url = f"http://127.0.0.1:{proxy_port}"
        chromium = stack.enter_context(browser())

        # A page through the proxy: its script runs over the websocket Caddy passes through.
        context = chromium.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(f"{url}/attention?{urllib.parse.urlencode({'a': 'the bank of the river'})}")
        page.wait_for_selector(CHART, timeout=60_000)
        wait_for_app(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        cookie = [c for c in context.cookies() if c["name"] == "bertscope_replica"]
        assert len(cookie) == 1

        # Every later request of that browser reaches the same replica.
        served = {context.request.get(f"{url}/_stcore/health").headers["x-replica"] for _ in range(12)}
        assert len(served) == 1
        home = served.pop()
        assert home in upstreams
        # deploy/check_compose.py tells replicas apart by this cookie alone (no header in the real Caddyfile).
        assert cookie[0]["value"] == check_compose().replica_cookie(home)

        # New browsers are spread over both replicas (the first pick is random: 20 all alike is 1 in 500,000).
        seen = set()
        for _ in range(20):
            other = chromium.new_context()
            seen.add(other.request.get(f"{url}/_stcore/health").headers["x-replica"])
            other.close()
        assert seen == set(upstreams)

        # Its replica stops: the same browser is sent to the other one instead of an error.
        stopped = replicas[upstreams.index(home)].proc
        stopped.terminate()
        stopped.wait(15)
        response = context.request.get(f"{url}/_stcore/health")
        assert response.status == 200
        assert response.headers["x-replica"] == next(u for u in upstreams if u != home)


def test_the_caddyfile_compresses_the_pages_scripts(tiny_checkpoint, tmp_path):
    """Streamlit sends its scripts uncompressed and leaves that to a proxy; on a room's one Wi-Fi a first visit
    is ~9 MB as served (bench/first_visit.py). Through the Caddyfile they come compressed, and unchanged."""
    port, proxy_port = free_port(), free_port()
    with (
        serve_app(tiny_checkpoint, tmp_path / "app.log", shared=True, port=port) as app,
        proxy(proxy_config(proxy_port, [f"127.0.0.1:{port}"]), tmp_path),
    ):
        wait_for_port(proxy_port)
        page = urllib.request.urlopen(app, timeout=30).read().decode()
        script = re.search(r'src="\./(static/js/[^"]+\.js)"', page).group(1)  # the entry bundle, ~0.5 MB
        served = urllib.request.urlopen(f"{app}/{script}", timeout=30).read()

        def through_proxy(accept: str | None):
            headers = {"Accept-Encoding": accept} if accept else {}
            request = urllib.request.Request(f"http://127.0.0.1:{proxy_port}/{script}", headers=headers)
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.headers.get("Content-Encoding"), response.read()

        encoding, body = through_proxy("gzip")
        assert encoding == "gzip"
        assert len(body) < len(served) / 2
        assert gzip.decompress(body) == served
        # Chromium accepts zstd too, which the Caddyfile names first.
        assert through_proxy("gzip, deflate, br, zstd")[0] == "zstd"
        # A client that asks for nothing gets the script as it was.
        assert through_proxy(None) == (None, served)
