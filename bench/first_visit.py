"""What a student's browser downloads to open BERTScope, and what compressing it costs: every byte of a first
visit (an empty browser cache: the shared link to Attention, then Masked words from the sidebar) and of a
return visit, taken straight from `bertscope --shared` and through deploy/Caddyfile in front of it, with the
CPU seconds Caddy spends on each first visit.

Streamlit serves its scripts uncompressed on purpose (compressing at the Python origin costs CPU on every
request; it leaves that to a proxy), so on a room's one Wi-Fi what each student downloads is what counts. The
bytes are Chromium's own count of what crossed the wire (the DevTools protocol's encodedDataLength, headers
included) plus the websocket's messages. Bounded: --visits fresh browser contexts per route, one at a time;
the server and Caddy listen on 127.0.0.1 and stop at the end. Needs the `caddy` binary (apt-get install caddy).

    .venv/bin/python bench/first_visit.py --visits 5
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import statistics
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import _common as c  # puts the repository on sys.path, so `tests` imports below
from sessions import CHART, LECTURE, cpu_s, start

from tests.app.serve import browser, free_port, wait_for_app
from tests.deploy.test_proxy import proxy, proxy_config, wait_for_port


@dataclass
class Visit:
    requests: int = 0
    wire_bytes: int = 0  # HTTP responses as they crossed the wire, headers included
    ws_bytes: int = 0  # websocket messages received, as decoded (the page's elements and figures)
    first_chart_s: float = 0.0


def visit(context, url: str, then: str | None) -> Visit:
    """Open `url` in a new page of `context` until its chart is drawn, then the sidebar link titled `then`."""
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    seen = Visit()

    def finished(event: dict) -> None:
        seen.requests += 1
        seen.wire_bytes += int(event["encodedDataLength"])

    def frame(event: dict) -> None:
        data = event["response"]["payloadData"]  # a binary message (Streamlit's protobuf) comes as base64
        seen.ws_bytes += len(base64.b64decode(data)) if event["response"]["opcode"] == 2 else len(data)

    cdp.on("Network.loadingFinished", finished)
    cdp.on("Network.webSocketFrameReceived", frame)
    began = time.monotonic()
    page.goto(url)
    page.wait_for_selector(CHART, timeout=120_000)
    seen.first_chart_s = time.monotonic() - began
    wait_for_app(page)
    if then:
        page.locator('[data-testid="stSidebarNav"] a', has_text=then).first.click()
        page.get_by_role("heading", name=then).first.wait_for(timeout=120_000)
        page.wait_for_selector(CHART, timeout=120_000)
        wait_for_app(page)
    page.wait_for_timeout(1000)  # late requests (fonts, chunks) are counted too
    page.close()
    return seen


def route(chromium, url: str, visits: int, cpu_of=None) -> tuple[list[Visit], Visit, float]:
    """`visits` first visits, each in a fresh context, and one return visit in the last one's context; the
    CPU seconds `cpu_of()` grew by over the first visits."""
    link = f"{url}/attention?{urllib.parse.urlencode({'a': LECTURE})}"
    firsts, before = [], cpu_of() if cpu_of else 0.0
    for n in range(visits):
        context = chromium.new_context(viewport={"width": 1400, "height": 1000})
        firsts.append(visit(context, link, "Masked words"))
        if n < visits - 1:
            context.close()
    spent = (cpu_of() - before) / visits if cpu_of else 0.0
    again = visit(context, link, "Masked words")
    context.close()
    return firsts, again, spent


def mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def report(label: str, firsts: list[Visit], again: Visit, caddy_cpu_s: float | None) -> float:
    wire = statistics.median(v.wire_bytes for v in firsts)
    ws = statistics.median(v.ws_bytes for v in firsts)
    cpu = f"; Caddy's CPU {caddy_cpu_s * 1000:.0f} ms a first visit" if caddy_cpu_s is not None else ""
    print(
        f"{label:<22} first visit {mb(wire)} over {firsts[0].requests} requests, websocket {ws / 1e3:.0f} kB; "
        f"return visit {again.wire_bytes / 1e3:.1f} kB; first chart {statistics.median(v.first_chart_s for v in firsts):.1f} s "
        f"on 127.0.0.1{cpu}",
        flush=True,
    )
    return wire + ws


def measure(
    stack: contextlib.ExitStack, logs: Path, app: list[str], model: Path, visits: int
) -> dict[str, float]:
    """Every route's report; the bytes of a first visit (with its websocket messages) by route."""
    server = start([*app, "--address", "127.0.0.1"], logs / "app.log", model)
    stack.callback(server.stop)
    chromium = stack.enter_context(browser())
    route(chromium, server.url, 1)  # the model is loaded and the analyses cached before anything is counted
    sizes = {
        "straight from the app": report(
            "straight from the app", *route(chromium, server.url, visits)[:2], None
        )
    }
    port = free_port()  # each Caddy in turn, the first stopped before the next starts
    deployed = proxy_config(port, [server.url.removeprefix("http://")])
    plain = deployed.replace("\tencode zstd gzip\n", "")
    assert plain != deployed, "deploy/Caddyfile no longer has its encode line"
    for n, (label, config) in enumerate([("Caddy, no encode", plain), ("through the Caddyfile", deployed)]):
        (logs / f"caddy{n}").mkdir()
        with proxy(config, logs / f"caddy{n}") as caddy:
            wait_for_port(port)
            firsts, again, spent = route(
                chromium, f"http://127.0.0.1:{port}", visits, lambda: cpu_s(caddy.pid)
            )
        sizes[label] = report(label, firsts, again, spent)
    return sizes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--visits", type=int, default=5, help="first visits per route (fresh contexts)")
    p.add_argument(
        "--model", help="a checkpoint directory (default: bert-base-size random weights, built once)"
    )
    args = p.parse_args()
    visits = max(1, min(args.visits, 20))
    # Built only when no model is given: the tests run these scripts on the small demo model.
    model = Path(args.model or c.bert_base_checkpoint()).resolve()
    print(f"{c.machine()}; {c.load_average()}", flush=True)
    app = [sys.executable, "-m", "app.cli", "--shared", "--model-roots", str(model.parent)]
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        logs = Path(tmp)
        try:
            sizes = measure(stack, logs, app, model, visits)
        except Exception:
            # A page that never drew: what the server and Caddy said is the first thing to read.
            for log in sorted(logs.rglob("*.log"), key=lambda log: log.name == "app.log"):  # the app's last
                tail = log.read_text(errors="replace")[-3000:]
                print(f"--- {log.relative_to(logs)} (last 3000 characters)\n{tail}", file=sys.stderr)
            raise
    direct, proxied = sizes["straight from the app"], sizes["through the Caddyfile"]
    print(
        f"through the Caddyfile / straight: {proxied / direct:.2f}; a room of 30 first visits: {mb(30 * direct)} "
        f"straight, {mb(30 * proxied)} through the Caddyfile"
    )
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
