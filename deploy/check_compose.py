"""Check a running `deploy/compose.yaml` stack the way a room uses it: through the proxy, with Docker's DNS.

    docker compose -f deploy/compose.yaml up -d --scale app=2
    python deploy/check_compose.py [--url http://127.0.0.1:8080] [--compose "docker compose -f deploy/compose.yaml"]

What it checks, printing one line each and exiting non-zero at the first that fails:
  1. every replica answers Docker's health check (`healthy`), the proxy answers /_stcore/health, and it
     compresses the page's scripts;
  2. new clients are spread over every replica (Caddy's cookie names the replica: HMAC-SHA256, empty key, of
     its address, so the script can tell which one served without changing the Caddyfile);
  3. a client with the cookie keeps reaching its replica (no new cookie in 10 requests);
  4. a browser page (Attention, the system Chromium through Playwright) draws its chart over the websocket
     the proxy passes through;
  5. that browser's replica is stopped: plain requests with the old cookie reach another replica within
     seconds, and the open page (Streamlit reconnects by itself, through the proxy) keeps what it shows and
     runs its next change (the layer slider) on the other replica, with no error;
  6. the replica is started again, and `--scale app=N+1` adds one: new clients reach every replica within
     seconds, without restarting the proxy;
  7. with --model /models/NAME: a page with that checkpoint from the shared read-only volume loads and draws.
It starts and stops containers of the stack it is pointed at, so run it on a test stack, not during a lecture.
Needs Docker's CLI, and Playwright with Chromium for step 4 (skipped with --no-browser).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import re
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

COOKIE = "bertscope_replica"
CHART = '[data-testid="stPlotlyChart"] .main-svg'
# The app turns a page's exception into an error box, so a failed page shows one of these, not a traceback.
FAILED = '[data-testid="stException"], [data-testid="stAlertContentError"]'
IDLE = """() => { const s = document.querySelector('[data-testid="stStatusWidget"]');
                  return !s || !/Running|Stop|Connecting/i.test(s.innerText); }"""


class CheckFailed(AssertionError):
    pass


def check(ok: bool, what: str) -> None:
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        raise CheckFailed(what)


def replica_cookie(dial: str, secret: str = "") -> str:
    """The cookie Caddy's `lb_policy cookie` gives a browser it sent to the upstream at `dial` (host:port):
    HMAC-SHA256 of the address keyed by the policy's secret (none in deploy/Caddyfile); checked against a real
    Caddy in tests/deploy/test_proxy.py."""
    return hmac.new(secret.encode(), dial.encode(), hashlib.sha256).hexdigest()


class Stack:
    def __init__(self, compose: list[str], service: str) -> None:
        self.compose, self.service = compose, service

    def run(self, *args: str) -> str:
        return subprocess.run([*self.compose, *args], check=True, capture_output=True, text=True).stdout

    def replicas(self) -> dict[str, str]:
        """Running replicas: cookie value -> container id."""
        out = {}
        for cid in self.run("ps", "-q", self.service).split():
            state = self.inspect(cid)
            if not state["State"]["Running"]:
                continue
            for net in state["NetworkSettings"]["Networks"].values():
                if net.get("IPAddress"):
                    out[replica_cookie(f"{net['IPAddress']}:8501")] = cid
        return out

    def inspect(self, cid: str) -> dict:
        return json.loads(subprocess.run(["docker", "inspect", cid], check=True, capture_output=True).stdout)[
            0
        ]

    def health(self, cid: str) -> str:
        out = subprocess.run(
            ["docker", "inspect", "--format", "{{.State.Health.Status}}", cid], capture_output=True, text=True
        )
        return out.stdout.strip()


def get(url: str, cookie: str | None = None) -> tuple[int, str | None]:
    """(status, the replica cookie the proxy set or None)."""
    request = urllib.request.Request(url, headers={"Cookie": f"{COOKIE}={cookie}"} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, headers = response.status, response.headers
    except urllib.error.HTTPError as exc:
        status, headers = exc.code, exc.headers
    except OSError:
        return 0, None
    for header in headers.get_all("Set-Cookie") or []:
        name, _, rest = header.partition("=")
        if name.strip() == COOKIE:
            return status, rest.split(";", 1)[0]
    return status, None


def compressed_script(url: str) -> str | None:
    """The Content-Encoding of the page's entry script fetched as Chromium asks for it (Streamlit sends it
    uncompressed; the Caddyfile's `encode` compresses it)."""
    with urllib.request.urlopen(url, timeout=10) as response:
        found = re.search(r'src="\./(static/js/[^"]+\.js)"', response.read().decode())
    if found is None:
        return None
    request = urllib.request.Request(
        f"{url}/{found.group(1)}", headers={"Accept-Encoding": "gzip, deflate, br, zstd"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.headers.get("Content-Encoding")


def spread(url: str, clients: int = 20) -> set[str]:
    return {get(f"{url}/_stcore/health")[1] for _ in range(clients)} - {None}


def wait_healthy(stack: Stack, timeout: float = 180.0) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replicas = stack.replicas()
        if replicas and all(stack.health(c) == "healthy" for c in replicas.values()):
            return replicas
        time.sleep(2)
    check(False, f"replicas healthy within {timeout:.0f} s")  # raises
    return {}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--url", default="http://127.0.0.1:8080", help="the proxy, as a student's browser reaches it"
    )
    p.add_argument("--compose", default="docker compose -f deploy/compose.yaml", help="how to call Compose")
    p.add_argument("--service", default="app")
    p.add_argument("--no-browser", action="store_true", help="skip the browser steps (4, 5's page and 7)")
    p.add_argument(
        "--model",
        help="a checkpoint directory as the replicas see it on the shared volume (e.g. /models/NAME): step 7 "
        "opens a page with it through the proxy",
    )
    args = p.parse_args()
    pw = None
    stack, url = Stack(shlex.split(args.compose), args.service), args.url.rstrip("/")
    try:
        replicas = wait_healthy(stack)
        check(
            len(replicas) >= 2, f"{len(replicas)} replicas running, every one healthy (Docker's HEALTHCHECK)"
        )
        cpus = {stack.inspect(c)["HostConfig"].get("NanoCpus", 0) / 1e9 for c in replicas.values()}
        check(all(n > 0 for n in cpus), f"every replica is held to a CPU limit ({sorted(cpus)} CPUs)")
        check(get(f"{url}/_stcore/health")[0] == 200, "the proxy answers /_stcore/health")
        encoding = compressed_script(url)
        check(encoding in ("zstd", "gzip"), f"the proxy compresses the page's scripts ({encoding})")
        seen = spread(url)
        check(seen == set(replicas), f"20 new clients spread over {len(seen)} of {len(replicas)} replicas")
        home = next(iter(replicas))
        again = [get(f"{url}/_stcore/health", home) for _ in range(10)]
        check(
            all(s == 200 and c is None for s, c in again),
            "a client with the cookie stays on its replica (10/10)",
        )

        pw = page = None
        if not args.no_browser:
            from playwright.sync_api import sync_playwright

            pw = sync_playwright().start()
            chromium = pw.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--no-sandbox", "--disable-gpu", "--disable-quic"],
                headless=True,
            )
            context = chromium.new_context()
            page = context.new_page()
            # Frames each of the page's websockets received: a change run by another replica comes back over
            # a websocket opened after the stop.
            sockets: list[list[int]] = []

            def opened(ws) -> None:
                frames = [0]
                sockets.append(frames)
                ws.on("framereceived", lambda _payload: frames.__setitem__(0, frames[0] + 1))

            page.on("websocket", opened)
            page.goto(f"{url}/attention?{urllib.parse.urlencode({'a': 'the bank of the river'})}")
            page.wait_for_selector(CHART, timeout=120_000)
            check(page.locator(FAILED).count() == 0, "a browser draws Attention via the proxy")
            home = next(c["value"] for c in context.cookies() if c["name"] == COOKIE)

        # The browser's replica goes away.
        sockets_before = len(sockets) if page is not None else 0
        stopped_at = time.monotonic()
        subprocess.run(["docker", "stop", replicas[home]], check=True, capture_output=True)
        failures, moved_to = 0, None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, cookie = get(f"{url}/_stcore/health", home)
            if status == 200 and cookie not in (None, home):
                moved_to = cookie
                break
            failures += status != 200
            time.sleep(0.5)
        check(
            moved_to in replicas,
            f"the old cookie reaches another replica {time.monotonic() - stopped_at:.1f} s after the stop "
            f"({failures} failed request(s) before)",
        )
        if page is not None:
            # Streamlit reconnects by itself, through the proxy to another replica (which sets its cookie). The
            # page keeps what it shows; its next change runs on the new replica with the page's own state.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if any(c["name"] == COOKIE and c["value"] != home for c in page.context.cookies()):
                    break
                page.wait_for_timeout(500)
            while time.monotonic() < deadline and len(sockets) == sockets_before:
                page.wait_for_timeout(500)
            # Widgets are disabled while the page is disconnected; a change made then would be lost.
            page.wait_for_function(
                "() => { const s = document.querySelector('input[type=range][aria-label=Layer]');"
                " return s && !s.disabled; }",
                timeout=60_000,
            )
            page.wait_for_timeout(1000)
            slider = page.locator('input[type="range"][aria-label="Layer"]')
            slider.focus()
            slider.press("ArrowRight")
            title = page.locator('[data-testid="stPlotlyChart"] .gtitle').first
            while time.monotonic() < deadline and not (title.text_content() or "").startswith("Layer 2"):
                page.wait_for_timeout(500)
            page.wait_for_function(IDLE, timeout=120_000)
            moved = next(c["value"] for c in page.context.cookies() if c["name"] == COOKIE) != home
            rerun = sum(f[0] for f in sockets[sockets_before:])
            check(
                moved
                and rerun > 0
                and (title.text_content() or "").startswith("Layer 2")
                and page.locator(FAILED).count() == 0,
                f"the open page's next change (layer 1 -> 2) ran on another replica "
                f"({time.monotonic() - stopped_at:.1f} s after the stop; {rerun} messages over the new websocket)",
            )

        subprocess.run(["docker", "start", replicas[home]], check=True, capture_output=True)
        stack.run("up", "-d", "--no-build", "--no-recreate", "--scale", f"{args.service}={len(replicas) + 1}")
        replicas = wait_healthy(stack)
        deadline, seen = time.monotonic() + 30, set()
        while time.monotonic() < deadline and seen != set(replicas):
            seen |= spread(url, 10)
        check(
            seen == set(replicas),
            f"after a restart and a scale-up, new clients reach all {len(replicas)} replicas",
        )

        if page is not None and args.model:
            query = urllib.parse.urlencode({"model": args.model, "a": "the bank of the river"})
            page.goto(f"{url}/attention?{query}")
            page.wait_for_selector(CHART, timeout=120_000)
            page.wait_for_function(IDLE, timeout=120_000)
            sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
            check(
                f"local directory {args.model}" in sidebar and page.locator(FAILED).count() == 0,
                f"{args.model} from the shared volume loads and draws",
            )
        if args.model:
            mounts = [
                m
                for c in replicas.values()
                for m in stack.inspect(c)["Mounts"]
                if m["Destination"] == "/models"
            ]
            probe = subprocess.run(
                [
                    "docker",
                    "exec",
                    "--user",
                    "root",
                    next(iter(replicas.values())),
                    "touch",
                    f"{args.model}/written",
                ],
                capture_output=True,
                text=True,
            )
            check(
                len(mounts) == len(replicas)
                and not any(m["RW"] for m in mounts)
                and "Read-only file system" in probe.stderr,
                "the shared volume is mounted read-only in every replica (even root cannot write to it)",
            )
    except CheckFailed:  # check() has said which
        return 1
    finally:
        if pw is not None:
            pw.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
