"""A real `bertscope --shared` server: it listens on the chosen address only, keeps XSRF protection on, asks
the network for nothing, and a shared link reproduces the view after the server restarts (the browser part is
marked)."""

from __future__ import annotations

import asyncio
import os
import socket
import urllib.parse
import urllib.request

import pytest
import websockets

from app.registry import PAGES
from tests.app.serve import browser, free_port, next_layer, recording_proxy, serve_app, tab, wait_for_app
from tests.conftest import make_checkpoint

pytestmark = pytest.mark.slow

CHART = '[data-testid="stPlotlyChart"] .main-svg'


def other_addresses() -> list[str]:
    """This machine's addresses other than loopback (where a server bound to 127.0.0.1 must not answer)."""
    found = set()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            found.add(info[4][0])
    except OSError:
        pass
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
            found.add(s.getsockname()[0])
        except OSError:
            pass
    return sorted(a for a in found if not a.startswith("127.") and a != "0.0.0.0")


def test_a_shared_server_answers_on_loopback_only_and_keeps_xsrf_protection(tiny_checkpoint, tmp_path):
    with serve_app(tiny_checkpoint, tmp_path / "log", shared=True) as url:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as r:
            assert r.status == 200
            cookies = r.headers.get_all("Set-Cookie") or []
        port = urllib.parse.urlparse(url).port
        for address in other_addresses():
            with pytest.raises(OSError):
                socket.create_connection((address, port), timeout=2).close()
        # With XSRF protection on, Streamlit's health answer hands the browser an XSRF cookie and an upload
        # without its token is refused; with it off there is no cookie and the request reaches the upload handler.
        assert any(c.startswith("_streamlit_xsrf=") for c in cookies)
        upload = urllib.request.Request(f"{url}/_stcore/upload_file/session/file", data=b"x", method="PUT")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(upload, timeout=5)
        assert refused.value.code == 403


def test_a_shared_server_refuses_a_message_past_16_mb_and_serves_on(tiny_checkpoint, tmp_path):
    """A tab's typed text is kept in its session's state: at Streamlit's default limit (200 MB a message) a
    script could grow the server by that much a tab. The connection that sends more is closed; others go on."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from websockets.exceptions import ConnectionClosed

    async def room(url: str) -> None:
        big = BackMsg()
        big.rerun_script.query_string = urllib.parse.urlencode({"a": "bank " * 4_000_000})  # 20 MB
        stream = url.replace("http://", "ws://", 1) + "/_stcore/stream"
        with pytest.raises((ConnectionClosed, ConnectionResetError)) as closed:
            async with websockets.connect(stream, subprotocols=["streamlit"], max_size=None) as ws:
                await ws.send(big.SerializeToString())
                for _ in range(1000):  # the server's answers, were it to take the message
                    await asyncio.wait_for(ws.recv(), timeout=30)
        assert "1009" in str(closed.value) or isinstance(
            closed.value, ConnectionResetError
        )  # message too big
        async with tab(url, timeout_s=120) as student:
            assert await student.show(urllib.parse.urlencode({"a": "the river bank"}), "attention") == []

    with serve_app(tiny_checkpoint, tmp_path / "log", shared=True) as url:
        asyncio.run(room(url))


def test_a_shared_server_asks_the_network_for_nothing_while_a_room_uses_it(tiny_checkpoint, tmp_path):
    """Started with --shared alone (no HF_HUB_OFFLINE), every page is opened with a pair of sentences, and
    students type a hub id, a URL and a path outside the roots into the model box, and another site's page
    tries the server's websocket (Streamlit refuses it after comparing the site with this machine's public
    address, which it would ask the internet for): every web request the server tries goes to a recording
    proxy, which must see none. On a server without --shared both the hub id and that public address are
    asked for, so the proxy does see what a server asks."""
    link = {"a": "the river [MASK] flooded the bank .", "b": "she went home ."}
    typed = ["bert-base-cased", "https://example.com/some-model", "/etc"]

    async def room(url: str, pages: list[str], models: list[str]) -> list[list[str]]:
        told = []
        async with tab(url, timeout_s=180) as student:
            for page in pages:
                assert await student.show(urllib.parse.urlencode(link), page) == [], page
            for model in models:
                told.append(await student.show(urllib.parse.urlencode({**link, "model": model}), "attention"))
        # Twice: Streamlit keeps only an answer, so a lookup that went unanswered is tried at each attempt.
        for _ in range(2):
            with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
                async with websockets.connect(
                    url.replace("http://", "ws://", 1) + "/_stcore/stream",
                    subprotocols=["streamlit"],
                    origin="http://another-site.example",
                ):
                    pass
            assert refused.value.response.status_code == 403
        return told

    with recording_proxy() as (proxy_env, asked):
        with serve_app(
            tiny_checkpoint, tmp_path / "log", shared=True, hub_offline=False, env=proxy_env
        ) as url:
            told = asyncio.run(room(url, [p.url_path for p in PAGES], typed))
    assert asked == []
    hub, web, outside = (" ".join(errors) for errors in told)
    assert "hub is switched off" in hub
    assert web and "can't be loaded" in web
    assert "only under" in outside

    with recording_proxy() as (proxy_env, asked):
        with serve_app(tiny_checkpoint, tmp_path / "open.log", hub_offline=False, env=proxy_env) as url:
            asyncio.run(room(url, [], ["bert-base-cased"]))
    assert any(b"huggingface.co" in request for request in asked)
    assert any(b"checkip.amazonaws.com" in request for request in asked)


def test_a_closed_tab_does_not_keep_its_model_in_memory_on_a_server_that_keeps_one(tmp_path, monkeypatch):
    """BERTSCOPE_MAX_MODELS counts the models open pages hold. A closed tab's session lives on in Streamlit
    (server.disconnectedSessionTTL, 2 minutes) with its state, so without the store letting go of its hold,
    the model a student opened and left would refuse every other model until then, or longer."""
    lecturers = make_checkpoint(tmp_path / "models" / "lecturer")
    students = make_checkpoint(tmp_path / "models" / "student")
    monkeypatch.setenv("BERTSCOPE_MAX_MODELS", "1")
    sentence = urllib.parse.urlencode({"a": "the river bank"})
    student_link = urllib.parse.urlencode({"a": "the river bank", "model": str(students)})

    async def lecture(url: str) -> None:
        async with tab(url) as student:
            assert await student.show(student_link, "attention") == []
            async with tab(url) as lecturer:  # the student's tab is open: its model is in use
                refused = " ".join(await lecturer.show(sentence, "attention"))
                assert "at most 1 model in memory" in refused and str(students) in refused
        # The student's tab has closed. Once a tab that reconnects would have (10 s), the lecturer's next try
        # works, long before Streamlit forgets the session (2 minutes, and only when another tab disconnects).
        await asyncio.sleep(11)
        async with tab(url) as lecturer:
            assert await lecturer.show(sentence, "attention") == []

    with serve_app(lecturers, tmp_path / "log", shared=True) as url:
        asyncio.run(lecture(url))


@pytest.mark.browser
@pytest.mark.skipif(os.environ.get("BERTSCOPE_SKIP_BROWSER") == "1", reason="BERTSCOPE_SKIP_BROWSER=1")
def test_a_shared_link_reproduces_the_view_after_the_server_restarts(tiny_checkpoint, tmp_path):
    """A lecturer's link (every choice is in the address) opened after a restart shows the same view, and a
    student's tab that stayed open through the restart reconnects and shows it again."""
    port = free_port()
    sentence = "the dogs sat by the river bank"
    with browser() as chromium:
        context = chromium.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        with serve_app(tiny_checkpoint, tmp_path / "first.log", shared=True, port=port) as url:
            page.goto(f"{url}/attention?{urllib.parse.urlencode({'a': sentence})}")
            page.wait_for_selector(CHART, timeout=60_000)
            wait_for_app(page)
            next_layer(page)
            link = page.url
            title = page.locator(f"{CHART} .gtitle").first.text_content()
            ticks = (
                page.locator(CHART)
                .first.locator(".ytick text")
                .evaluate_all("els => els.map(e => e.textContent)")
            )
            assert len(ticks) >= 4 and title.startswith("Layer 2")
        assert urllib.parse.parse_qs(urllib.parse.urlparse(link).query)["layer"] == ["2"]

        with serve_app(tiny_checkpoint, tmp_path / "second.log", shared=True, port=port):
            fresh = context.browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            fresh.goto(link)
            fresh.wait_for_selector(CHART, timeout=60_000)
            wait_for_app(fresh)
            assert fresh.locator(f"{CHART} .gtitle").first.text_content() == title
            assert (
                fresh.locator(CHART)
                .first.locator(".ytick text")
                .evaluate_all("els => els.map(e => e.textContent)")
                == ticks
            )
            assert fresh.locator('[data-testid="stException"]').count() == 0

            # The tab left open reconnects by itself and draws the same view again.
            page.wait_for_function(
                "(t) => (document.querySelector('[data-testid=\"stPlotlyChart\"] .gtitle') || {}).textContent === t",
                arg=title,
                timeout=60_000,
            )
            assert page.url == link
