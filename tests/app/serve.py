"""Start the real app on 127.0.0.1 (a free port) and drive it with Playwright on the system Chromium.

Used by the browser tests and by take_screenshots.py. Never downloads a browser (no `playwright install`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "app" / "streamlit_app.py"
CHROMIUM = os.environ.get("BERTSCOPE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 10


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served(str):
    """The base URL of a served app; `.proc` is its process (a test may stop it as a crash would)."""

    proc: subprocess.Popen


@contextlib.contextmanager
def serve_app(
    model: str | os.PathLike,
    log_path: Path | None = None,
    *,
    shared: bool = False,
    port: int | None = None,
    hub_offline: bool = True,
    env: dict[str, str] | None = None,
) -> Iterator[Served]:
    """Run `streamlit run app/streamlit_app.py` (or `bertscope --shared`, with `model`'s directory as the one
    model root) on 127.0.0.1 with `model` as default; yield its base URL. `env` is added to the server's
    environment only (not this process's)."""
    port = port or free_port()
    given = env or {}
    env = dict(os.environ, BERTSCOPE_MODEL=str(model), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    if not hub_offline:  # started as a lecturer would, with nothing but bertscope's own settings
        env.pop("HF_HUB_OFFLINE", None)
    env.update(given)
    if shared:
        root = str(Path(model).resolve().parent)
        start = [sys.executable, "-m", "app.cli", "--shared", "--model-roots", root]
    else:
        start = [sys.executable, "-m", "streamlit", "run", str(APP)]
    cmd = [
        *start,
        "--server.address", "127.0.0.1",
        "--server.port", str(port),
        "--server.headless", "true",
        "--client.toolbarMode", "viewer",
        "--server.fileWatcherType", "none",
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    log = open(log_path, "wb") if log_path else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = Served(f"http://127.0.0.1:{port}")
    url.proc = proc
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the app exited with code {proc.returncode} before serving")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the app did not answer on {url} within {START_TIMEOUT_S} s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=STOP_TIMEOUT_S)
        if log_path:
            log.close()


@contextlib.contextmanager
def recording_proxy() -> Iterator[tuple[dict[str, str], list[bytes]]]:
    """A web proxy on 127.0.0.1 that records the start of every request sent to it and answers none: a
    process given its environment (HTTP_PROXY, HTTPS_PROXY; this machine's own addresses left out) shows
    every web request it tries to make. Yields that environment, for a child process only (urllib reads the
    proxy settings of this process once, for good), and the list of requests, complete once the block ends."""
    import threading

    asked: list[bytes] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def take(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(2)
            with contextlib.suppress(OSError):
                asked.append(conn.recv(200))

    def record() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                take(listener.accept()[0])
        listener.setblocking(False)  # what is still queued is recorded too
        while True:
            try:
                take(listener.accept()[0])
            except OSError:
                return

    thread = threading.Thread(target=record, daemon=True)
    thread.start()
    proxy = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env = {name: proxy for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
    env |= {name: "127.0.0.1,localhost" for name in ("NO_PROXY", "no_proxy")}
    try:
        yield env, asked
    finally:
        stop.set()
        thread.join(10)
        listener.close()


def check_chromium() -> None:
    if not Path(CHROMIUM).is_file():
        raise RuntimeError(
            f"Chromium not found at {CHROMIUM}: install it (apt-get update && apt-get install -y chromium), "
            "or set BERTSCOPE_CHROMIUM to its path, or BERTSCOPE_SKIP_BROWSER=1 to skip the browser tests."
        )


@contextlib.contextmanager
def browser() -> Iterator[object]:
    """A Playwright Chromium browser (the system one)."""
    from playwright.sync_api import sync_playwright

    check_chromium()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def wait_for_app(page, timeout_ms: int = 60_000) -> None:
    """Wait until Streamlit finished the current run (no 'running' indicator) and the main area rendered."""
    page.wait_for_selector('[data-testid="stMain"]', timeout=timeout_ms)
    page.wait_for_function(
        """() => {
            const s = document.querySelector('[data-testid="stStatusWidget"]');
            return !s || !/Running|Stop/i.test(s.innerText);
        }""",
        timeout=timeout_ms,
    )
    page.wait_for_timeout(300)


def next_layer(page, expect: str = "Layer 2") -> None:
    """Move the Attention page's layer slider one step with the keyboard, and wait for the chart's title to
    read `expect...` (the rerun has drawn the new layer)."""
    slider = page.locator('input[type="range"][aria-label="Layer"]')
    slider.focus()
    slider.press("ArrowRight")
    page.wait_for_function(
        "(t) => (document.querySelector('[data-testid=\"stPlotlyChart\"] .gtitle') || {}).textContent"
        "?.startsWith(t)",
        arg=expect,
        timeout=30_000,
    )


class Tab:
    """A browser tab reduced to Streamlit's websocket protocol (what the page's JavaScript sends and reads),
    for tests about sessions rather than drawing: no browser needed, and closing it is a closed tab."""

    def __init__(self, ws) -> None:
        self._ws = ws

    async def show(self, query: str = "", page: str = "") -> list[str]:
        """Run `page` (its url path; the default page when "") with `query` as a link's query string, wait
        for the script to finish, and return the texts of the error messages it showed."""
        from streamlit.proto.Alert_pb2 import Alert
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        ask = BackMsg()
        ask.rerun_script.query_string = query
        ask.rerun_script.page_name = page
        await self._ws.send(ask.SerializeToString())
        errors = []
        while True:
            msg = ForwardMsg()
            msg.ParseFromString(await self._ws.recv())
            kind = msg.WhichOneof("type")
            # A run that ends early for a rerun (Inside rewrites a link's short view key, then runs again) is not
            # the page: wait for the run that finishes.
            if kind == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                return errors
            if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                element = msg.delta.new_element
                if element.WhichOneof("type") == "exception":
                    errors.append(element.exception.message)
                elif element.WhichOneof("type") == "alert" and element.alert.format == Alert.ERROR:
                    errors.append(element.alert.body.replace("\\", ""))  # unescaped Markdown


@contextlib.asynccontextmanager
async def tab(url: str, timeout_s: float = 60) -> AsyncIterator[Tab]:
    """An open tab on the served app at `url` (a websocket session), closed on leaving."""
    import asyncio

    import websockets  # Streamlit's own dependency

    stream = url.replace("http://", "ws://", 1) + "/_stcore/stream"
    async with asyncio.timeout(timeout_s):
        async with websockets.connect(stream, subprotocols=["streamlit"], max_size=None) as ws:
            yield Tab(ws)
