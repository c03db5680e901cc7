"""A room of students on one server: N sessions open one `bertscope --shared` server on 127.0.0.1 at once,
against a trivial Streamlit page (one text box, one plotly heatmap) opened by the same crowd in the same run.

Two kinds of client (--client), both driving the real protocol:
  browser  (default) Playwright browser contexts in the system Chromium (never downloaded), each a separate
           Streamlit session with its own websocket, exactly as a student's laptop opens it. The browsers
           share this machine's cores with the server, so the trivial page is the yardstick of a whole page:
           fetching it, the server's work and drawing it. At most 64 sessions.
  ws       bare clients of Streamlit's websocket protocol (the messages the page's JavaScript exchanges, with
           nothing fetched or drawn), all in this process: what is left is the server's share alone, which is
           what a room of laptops, each drawing its own page, waits for. At most 200 sessions.

Scenarios (--scenario, several allowed; each on a fresh server with an empty cache):
  a  N sessions, the same sentence: a link to the Attention page, then Masked words from the sidebar
  b  N sessions, each its own 128-token text, on the Attention page
  c  N/3 sessions pasting their own 512-token texts (Attention) while the other 2N/3 do (a)
Reports per scenario: seconds until each session's first chart (p50 / p95 / max), forward passes the server
ran (counted from its log: one line per computation that really runs), errors (a page that showed an
exception, an error message, or no chart in time), the server's peak resident memory, and its growth per
session while the N sessions sit idle on their pages; and where the machine's CPU went: seconds of CPU the
server used during the crowd against those of the clients (browser: every Chromium process of the run and the
Playwright driver that steers them; ws: this process), which says how much of a page's wait is the server's
doing and how much is the browsers drawing it. --against REV also runs each scenario on the app as of git
revision REV (a temporary worktree) and prints the ratios, so a change is measured against its base in one
run. --rounds K repeats the yardstick and the scenarios K times in turn and reports each round's goal ratios
(each against its own round's yardstick) and their median: the yardstick alone moves by up to a quarter
between runs, so one run cannot settle a ratio near its goal. Bounded: --sessions, --rounds, a timeout per
page, and every server stops at the end. Everything listens on and talks to 127.0.0.1 only.

    .venv/bin/python bench/sessions.py --sessions 30 --scenario a b c
    .venv/bin/python bench/sessions.py --sessions 30 --scenario a --rounds 3
    .venv/bin/python bench/sessions.py --sessions 30 --scenario a --rounds 2 --one-page
    .venv/bin/python bench/sessions.py --client ws --sessions 100 --scenario a b c
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
from dataclasses import dataclass, field
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
FAILED = '[data-testid="stException"], [data-testid="stAlertContentError"]'
# The page finished its run: Streamlit's status widget no longer says Running.
IDLE = """() => { const s = document.querySelector('[data-testid="stStatusWidget"]');
                  return !s || !/Running|Stop/i.test(s.innerText); }"""
LECTURE = "The man went to the bank to deposit his money, and then sat on the river bank to fish."


@dataclass
class Server:
    proc: subprocess.Popen
    url: str
    log: Path

    def passes(self) -> int:
        """Computations the server ran so far (app/server.py logs one line each with BERTSCOPE_LOG=info)."""
        return sum(" pass " in line for line in self.log.read_text(errors="replace").splitlines())

    def rss_mb(self, field: str = "VmRSS") -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def start(cmd: list[str], log: Path, model: Path, tree: Path = REPO) -> Server:
    port = free_port()
    env = dict(
        os.environ,
        BERTSCOPE_MODEL=str(model),
        BERTSCOPE_LOG="info",
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    flags = ["--server.port", str(port), "--server.headless", "true", "--server.fileWatcherType", "none"]
    proc = subprocess.Popen(
        [*cmd, *flags],
        cwd=tree,  # `-m app.cli` runs the app of this source tree
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(log, "wb"),  # noqa: SIM115
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).status == 200:
                return Server(proc, url, log)
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"the server did not start; see {log}")


@dataclass
class Crowd:
    first: list[float | None] = field(default_factory=list)  # per session, seconds to its first chart
    errors: int = 0
    idle_rss_mb: float = 0.0  # the server's RSS while every session sits on its last page
    server_cpu_s: float = 0.0  # CPU seconds the server used during the crowd
    browser_cpu_s: float = 0.0  # CPU seconds of the crowd's Chromium processes and their Playwright driver


TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int, children: bool = False) -> float:
    """CPU seconds (user + system) of a process; with `children`, of its waited-for children too."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11 : 15 if children else 13]) / TICK


def descendants_cpu_s(root: int) -> float:
    """CPU seconds of every live process below `root` (the browser and its renderers, which stay open until
    the crowd is measured), with the children they already reaped."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    total = 0.0
    for pid in parent:
        up, seen = parent.get(pid), 0
        while up not in (None, 0, 1, root) and seen < 64:
            up, seen = parent.get(up), seen + 1
        if up == root:
            try:
                total += cpu_s(pid, children=True)
            except OSError:
                continue
    return total


def _ws_messages():
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    return BackMsg, ForwardMsg


async def ws_crowd(server: Server, visits: list[list[str]], timeout_s: float) -> Crowd:
    """The same crowd as `crowd`, each session a bare client of Streamlit's websocket protocol (what the page's
    JavaScript sends and receives, with nothing drawn): it asks for its first path's page with that path's
    query string, then for the pages titled by the rest as the sidebar's links do, and stays connected until
    all are done. Nothing but the server and these clients runs, so every second is the server's."""
    import websockets
    from streamlit.proto.Alert_pb2 import Alert

    BackMsg, ForwardMsg = _ws_messages()
    out = Crowd(first=[None] * len(visits))
    all_done = asyncio.Event()
    left = [len(visits)]
    server_before, clients_before = cpu_s(server.proc.pid), time.process_time()
    stream = server.url.replace("http://", "ws://", 1) + "/_stcore/stream"

    def rerun(query: str, page_name: str = "", page_hash: str = "") -> bytes:
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page_name
        msg.rerun_script.page_script_hash = page_hash
        return msg.SerializeToString()

    async def page_run(ws, request: bytes, start: float | None, n: int, pages: dict[str, str]) -> bool:
        """Ask for a page and read until its script has finished; False when the page showed an error."""
        await ws.send(request)
        ok = True
        while True:
            msg = ForwardMsg()
            msg.ParseFromString(await ws.recv())
            kind = msg.WhichOneof("type")
            if kind == "navigation":
                pages.update({p.page_name: p.page_script_hash for p in msg.navigation.app_pages})
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                element = msg.delta.new_element
                what = element.WhichOneof("type")
                if what == "plotly_chart" and start is not None and out.first[n] is None:
                    out.first[n] = time.monotonic() - start
                if what == "exception" or (what == "alert" and element.alert.format == Alert.ERROR):
                    ok = False
            elif kind == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                return ok  # (a run that ends early for a rerun is not the page: the next run is)

    async def session(n: int, paths: list[str]) -> None:
        counted = False

        def done(ok: bool) -> None:
            nonlocal counted
            if not counted:
                counted = True
                out.errors += not ok
                left[0] -= 1
                if not left[0]:
                    all_done.set()

        try:
            async with websockets.connect(stream, subprotocols=["streamlit"], max_size=None) as ws:
                start = time.monotonic()
                page, _, query = paths[0].partition("?")
                pages: dict[str, str] = {}
                async with asyncio.timeout(timeout_s):
                    ok = await page_run(ws, rerun(query, page_name=page), start, n, pages)
                    ok = ok and out.first[n] is not None
                    for title in paths[1:]:
                        ok = await page_run(ws, rerun(query, page_hash=pages[title]), None, n, pages) and ok
                done(ok)
                await release.wait()  # connected, like an open tab, until the crowd has been measured
        except Exception:  # noqa: BLE001 - a timeout or a dropped connection counts as an error
            done(False)

    release = asyncio.Event()
    sessions = asyncio.gather(*(session(n, v) for n, v in enumerate(visits)))
    await all_done.wait()
    await asyncio.sleep(2)
    out.idle_rss_mb = server.rss_mb()
    out.server_cpu_s = cpu_s(server.proc.pid) - server_before
    out.browser_cpu_s = time.process_time() - clients_before
    release.set()
    await sessions
    return out


async def crowd(server: Server, visits: list[list[str]], timeout_s: float) -> Crowd:
    """Open every session at once; each opens its first path (a shared link), then follows the sidebar links
    titled by the rest, and stays open until all are done."""
    from playwright.async_api import async_playwright

    out = Crowd(first=[None] * len(visits))
    server_before = cpu_s(server.proc.pid)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        contexts = []

        async def session(n: int, paths: list[str]) -> None:
            context = await browser.new_context()
            contexts.append(context)
            page = await context.new_page()
            start = time.monotonic()
            try:
                await page.goto(f"{server.url}/{paths[0]}", timeout=timeout_s * 1000)
                await page.wait_for_selector(CHART, timeout=timeout_s * 1000)
                out.first[n] = time.monotonic() - start
                for title in paths[1:]:
                    # On to the next page as a student does: its link in the sidebar, in the same session.
                    if await page.locator(FAILED).count():
                        out.errors += 1
                    await page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
                    await page.get_by_role("heading", name=title).first.wait_for(timeout=timeout_s * 1000)
                    await page.wait_for_selector(CHART, timeout=timeout_s * 1000)
                await page.wait_for_function(IDLE, timeout=timeout_s * 1000)
                if await page.locator(FAILED).count():
                    out.errors += 1
            except Exception:  # noqa: BLE001 - a timeout or a crash counts as an error, the run goes on
                out.errors += 1

        await asyncio.gather(*(session(n, v) for n, v in enumerate(visits)))
        await asyncio.sleep(2)  # the last reruns settle
        out.idle_rss_mb = server.rss_mb()
        out.server_cpu_s = cpu_s(server.proc.pid) - server_before
        # The Playwright driver and the Chromium it started are this process's descendants; the server is a
        # child too, so its share is taken out.
        out.browser_cpu_s = descendants_cpu_s(os.getpid()) - cpu_s(server.proc.pid, children=True)
        for context in contexts:
            await context.close()
        await browser.close()
    return out


def done_times(crowd: Crowd) -> list[float]:
    return [t for t in crowd.first if t is not None] or [float("nan")]


def report_c(result: Crowd, long_n: int, n: int) -> None:
    short = [t for t in result.first[long_n:] if t is not None]
    long = [t for t in result.first[:long_n] if t is not None]
    print(f"  c: {long_n} long   {summary(long)}")
    print(f"  c: {n - long_n} short  {summary(short)}")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def summary(times: list[float | None]) -> str:
    done = [t for t in times if t is not None]
    if not done:
        return "no chart appeared"
    return f"p50 {statistics.median(done):5.1f} s, p95 {p95(done):5.1f} s, max {max(done):5.1f} s"


def cpu_line(crowd: Crowd, n: int, clients: str) -> str:
    return f"CPU a session: server {crowd.server_cpu_s / n:.2f} s, {clients} {crowd.browser_cpu_s / n:.2f} s"


def goal_ratios(rounds: list[dict[str, Crowd]], long_n: int) -> dict[str, list[float]]:
    """The issue's two goals, one ratio per round: (a)'s p95 over the yardstick's measured in the same round,
    and (c)'s short sessions' p95 over (a)'s."""
    out: dict[str, list[float]] = {"a / trivial": [], "c short / a": []}
    for rows in rounds:
        a, base = rows.get("a"), rows.get("trivial")
        if a is None or base is None:
            continue
        a_done, base_done = [t for t in a.first if t is not None], [t for t in base.first if t is not None]
        if a_done and base_done:
            out["a / trivial"].append(p95(a_done) / p95(base_done))
        short = [t for t in rows["c"].first[long_n:] if t is not None] if "c" in rows else []
        if a_done and short:
            out["c short / a"].append(p95(short) / p95(a_done))
    return out


def report_goals(rounds: list[dict[str, Crowd]], long_n: int) -> None:
    goals = {"a / trivial": 1.25, "c short / a": 2.0}
    for name, ratios in goal_ratios(rounds, long_n).items():
        if ratios:
            each = ", ".join(f"{x:.2f}" for x in ratios)
            middle = f"; median {statistics.median(ratios):.2f}" if len(ratios) > 1 else ""
            print(f"p95 ratio {name}: {each}{middle} (goal <= {goals[name]})", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=30)
    p.add_argument("--scenario", nargs="+", choices=["a", "b", "c"], default=["a", "b", "c"])
    p.add_argument(
        "--model", help="a checkpoint directory (default: bert-base-size random weights, built once)"
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a page may take")
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the yardstick and the scenarios this many times in turn, each ratio against the yardstick "
        "of its own round, and report every round's ratios and their median (the yardstick alone moves by up "
        "to a quarter between runs)",
    )
    p.add_argument(
        "--client",
        choices=["browser", "ws"],
        default="browser",
        help="browser: Chromium contexts (default); ws: bare websocket-protocol clients, the server's share alone",
    )
    p.add_argument(
        "--against",
        metavar="REV",
        help="also run each scenario on the app as of git revision REV (a temporary worktree), and print the "
        "ratios of this tree's p95 and server CPU to that one's, measured in this one run",
    )
    p.add_argument(
        "--one-page",
        action="store_true",
        help="the lecture sessions of (a) and (c) open the Attention link only, without Masked words after it: "
        "how much of (a)'s wait the early sessions' second page makes",
    )
    args = p.parse_args()
    # Bounded: browsers share this machine with the server; bare clients cost it next to nothing.
    n = max(3, min(args.sessions, 64 if args.client == "browser" else 200))
    n_rounds = max(1, args.rounds)
    run_crowd = crowd if args.client == "browser" else ws_crowd
    clients = "browsers" if args.client == "browser" else "clients"
    # Built only when no model is given: the tests run these scripts on the small demo model.
    model = Path(args.model or c.bert_base_checkpoint()).resolve()
    app = [
        sys.executable,
        "-m",
        "app.cli",
        "--shared",
        "--model-roots",
        str(model.parent),
        "--max-chars",
        "20000",
    ]

    def q(text: str) -> str:
        return urllib.parse.urlencode({"a": text})

    def lecture(count: int) -> list[list[str]]:
        return [[f"attention?{q(LECTURE)}", *([] if args.one_page else ["Masked words"])]] * count

    def own(count: int, tokens: int) -> list[list[str]]:
        return [[f"attention?{q(c.text_of_tokens(tokens, seed=i + 1))}"] for i in range(count)]

    long_n = n // 3
    scenarios = {
        "a": lecture(n),
        "b": own(n, 128),
        "c": own(long_n, 512) + lecture(n - long_n),  # the long ones first, so they are ahead in the line
    }
    print(f"{n} sessions ({args.client} clients); {c.machine()}; {c.load_average()}", flush=True)
    rounds: list[dict[str, Crowd]] = []
    with tempfile.TemporaryDirectory() as tmp:
        trivial = Path(tmp) / "trivial.py"
        trivial.write_text(TRIVIAL)
        other = None
        if args.against:
            other = Path(tmp) / "against"
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(other), args.against],
                           check=True)  # fmt: skip

        def yardstick() -> Crowd:
            server = start([sys.executable, "-m", "streamlit", "run", str(trivial), "--server.address", "127.0.0.1"],
                           Path(tmp) / "trivial.log", model)  # fmt: skip
            try:
                base = asyncio.run(run_crowd(server, [[f"?{q(LECTURE)}"]] * n, args.timeout))
            finally:
                server.stop()
            print(
                f"trivial page      {summary(base.first)}; errors {base.errors}; {cpu_line(base, n, clients)}",
                flush=True,
            )
            return base

        def scenario(name: str, tree: Path, label: str) -> Crowd:
            server = start([*app, "--address", "127.0.0.1"], Path(tmp) / f"{name}.log", model, tree)
            try:
                # One session first loads the model, so the crowd's growth is the sessions', not the weights'.
                asyncio.run(run_crowd(server, [[f"attention?{q('warm up')}"]], args.timeout))
                warm, before = server.rss_mb(), server.passes()
                result = asyncio.run(run_crowd(server, scenarios[name], args.timeout))
                passes = server.passes() - before
                peak = server.rss_mb("VmHWM")
            finally:
                server.stop()
            print(
                f"scenario {label:<9} {summary(result.first)}; errors {result.errors}; forward passes {passes}; "
                f"RSS model loaded {warm:.0f} MB, peak {peak:.0f} MB, with {n} idle sessions {result.idle_rss_mb:.0f} MB "
                f"({(result.idle_rss_mb - warm) / n:.1f} MB a session); {cpu_line(result, n, clients)}",
                flush=True,
            )  # fmt: skip
            return result

        try:
            for r in range(n_rounds):
                if n_rounds > 1:
                    print(f"-- round {r + 1} of {n_rounds}", flush=True)
                rows: dict[str, Crowd] = {"trivial": yardstick()}
                for name in args.scenario:
                    result = rows[name] = scenario(name, REPO, name)
                    if name == "c":
                        report_c(result, long_n, n)
                    if other is not None:
                        then = scenario(name, other, f"{name}@{args.against[:7]}")
                        if name == "c":
                            report_c(then, long_n, n)
                        now_p95, then_p95 = p95(done_times(result)), p95(done_times(then))
                        print(
                            f"  {name} this tree / {args.against}: p95 {now_p95 / then_p95:.2f}, "
                            f"server CPU {result.server_cpu_s / then.server_cpu_s:.2f}",
                            flush=True,
                        )
                rounds.append(rows)
                report_goals([rows], long_n)
        finally:
            if other is not None:
                subprocess.run(
                    ["git", "-C", str(REPO), "worktree", "remove", "--force", str(other)], check=False
                )
    if len(rounds) > 1:
        print(f"over {len(rounds)} rounds:")
        report_goals(rounds, long_n)
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
