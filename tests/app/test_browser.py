"""Real-browser tests: the app served on 127.0.0.1, driven by Playwright on the system Chromium.

Set BERTSCOPE_SKIP_BROWSER=1 to skip them where no Chromium can be installed; otherwise a missing
/usr/bin/chromium (or BERTSCOPE_CHROMIUM) fails them with a message saying how to install it.
"""

from __future__ import annotations

import os
import urllib.parse

import pytest

from tests.app.serve import browser, next_layer, serve_app, wait_for_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

if os.environ.get("BERTSCOPE_SKIP_BROWSER") == "1":
    pytest.skip("BERTSCOPE_SKIP_BROWSER=1", allow_module_level=True)

CHART = '[data-testid="stPlotlyChart"] .main-svg'
INJECTION = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


@pytest.fixture(scope="module")
def app_url(tiny_checkpoint, tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    with serve_app(tiny_checkpoint, log) as url:
        yield url


@pytest.fixture(scope="module")
def chromium():
    with browser() as b:
        yield b


@pytest.fixture
def page(chromium, app_url):
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    outside = []

    def only_local(route):
        # The app must work with no network at all: any request off this machine is refused and recorded.
        if urllib.parse.urlparse(route.request.url).hostname in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", only_local)
    pg = context.new_page()
    dialogs = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.dialogs = dialogs
    yield pg
    context.close()
    assert outside == [], f"the page asked for assets off this machine: {outside[:5]}"


def type_sentence(page, text: str) -> None:
    box = page.locator('[data-testid="stSidebar"] textarea').first
    box.fill(text)
    box.press("Control+Enter")
    page.wait_for_timeout(500)
    wait_for_app(page)


def tick_texts(page, axis: str = "ytick") -> list[str]:
    return page.locator(f"{CHART} .{axis} text").evaluate_all("els => els.map(e => e.textContent)")


def test_type_switch_layer_and_see_tokens_and_attention(app_url, page):
    page.goto(f"{app_url}/")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    type_sentence(page, "the dogs sat by the river")
    chips = page.locator(f"{CHART} .bartext").evaluate_all("els => els.map(e => e.textContent)")
    assert "dog" in chips and "##s" in chips and "[CLS]" in chips

    page.get_by_text("Attention", exact=True).first.click()
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    assert tick_texts(page)[:3] == ["[CLS]", "the", "dog"]
    assert "Layer 1" in page.locator(f"{CHART} .gtitle").text_content()

    next_layer(page)
    query = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    assert query.get("layer") == ["2"] and query.get("a") == ["the dogs sat by the river"]
    assert page.locator('[data-testid="stException"]').count() == 0


def test_html_typed_as_text_creates_no_element_and_runs_nothing(app_url, page):
    page.goto(f"{app_url}/")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    type_sentence(page, INJECTION)
    for name in ("Tokens", "Attention", "Masked words", "Sentence vector & NSP"):
        page.get_by_text(name, exact=True).first.click()
        page.wait_for_timeout(500)
        wait_for_app(page)
        assert page.locator('img[src="x"]').count() == 0
        assert page.locator("script:text('__pwned')").count() == 0
        assert page.evaluate("window.__pwned") is None
        if name == "Masked words":  # the masked sentence is shown, as literal text
            assert "<img src=x" in page.locator('[data-testid="stText"]').first.text_content()
    assert page.dialogs == []
    # What was typed is kept, as text.
    assert page.locator('[data-testid="stSidebar"] textarea').first.input_value() == INJECTION


def test_model_view_click_opens_that_head(app_url, page):
    page.goto(f"{app_url}/attention?a=the+bank+by+the+river&att_view=Model+view")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    # Markers are in layer-major order: index 6 = layer 2, head 3 of the 2 x 4 tiny model.
    box = page.locator(f"{CHART} .scatterlayer .point").nth(6).bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.wait_for_function(
        "() => (document.querySelector('[data-testid=\"stPlotlyChart\"] .gtitle') || {}).textContent"
        " === 'Layer 2, head 3'",
        timeout=30_000,
    )
    query = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    assert query.get("layer") == ["2"] and query.get("head") == ["3"]


def test_a_heatmaps_hover_names_both_tokens_by_their_own_numbers(app_url, page):
    """The hover reads a cell's row and column off the axes, whose categories are the numbered tokens, in place
    of a label per cell (a 512-token map's 262,144 strings, left out past 128 × 128 cells, where the hover said
    "map row 0 · map column 1"): plotly's hover in the app's own renderer names them, [CLS] hidden or not,
    and each tick label stands on its own category."""
    text = " ".join(["the bank by the river"] * 20)  # cut at the tiny model's 64 positions: 62 words shown
    query = urllib.parse.urlencode({"a": text, "att_view": "Heatmap", "att_hide_special": "true"})
    page.goto(f"{app_url}/attention?{query}")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    plot = page.locator(f"{CHART} .nsewdrag").first.bounding_box()
    # The first row's second cell: the first word attending to the second.
    page.mouse.move(plot["x"] + plot["width"] * 1.5 / 62, plot["y"] + plot["height"] * 0.5 / 62)
    page.wait_for_selector(f"{CHART} .hoverlayer .hovertext", timeout=10_000)
    shown = page.locator(f"{CHART} .hoverlayer .hovertext").first.text_content()
    assert shown.startswith("1: the → 2: bankweight "), shown
    # Categories named by bare numbers: plotly reads a tick value as the category so named before it reads it
    # as a place, so sentence numbers 1..4 as tick places read "1, 3, 4, _" over the four columns.
    sentences = "\n".join(["the cat sat", "the dog ran", "money in the bank", "a boat by the bank"])
    page.goto(f"{app_url}/sentence?" + urllib.parse.urlencode({"sv_sentences": sentences}))
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    columns = page.locator('[data-testid="stPlotlyChart"]').evaluate_all(
        "charts => charts.map(c => [...c.querySelectorAll('.xtick text')].map(t => t.textContent))"
    )
    assert ["1", "2", "3", "4"] in columns, columns


def test_head_view_click_on_a_token_isolates_it(app_url, page):
    page.goto(f"{app_url}/attention?a=the+bank+by+the+river&att_view=Head+view&head=1")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    focus = page.locator('input[aria-label="Isolate one token"]')
    assert focus.input_value() == "(all tokens)"

    def click_token(side: str, k: int) -> None:
        # On the word (a marker at the line's end was the only target). The token names are text points
        # of the scatter traces, the isolated one in a trace of its own: the k-th drawn word of a side, by
        # height. The chart redraws after each click, so the word is looked up afresh once the app is idle.
        wait_for_app(page)
        points = page.locator(f"{CHART} .scatterlayer .trace .textpoint")
        points.first.wait_for(state="attached", timeout=30_000)
        boxes = [b for b in (points.nth(i).bounding_box() for i in range(points.count())) if b and b["width"]]
        middle = (min(b["x"] for b in boxes) + max(b["x"] + b["width"] for b in boxes)) / 2
        side_boxes = sorted(
            (b for b in boxes if (b["x"] + b["width"] / 2 < middle) == (side == "from")), key=lambda b: b["y"]
        )
        box = side_boxes[k] if k < len(side_boxes) else None
        assert box is not None, f"token {k} on the {side} side is not drawn"
        # the word's far end, away from the line: a click there fell through
        x = box["x"] + 2 if side == "from" else box["x"] + box["width"] - 2
        page.mouse.move(x, box["y"] + box["height"] / 2)
        page.mouse.down()
        page.mouse.up()

    def wait_focus(value: str) -> None:
        page.wait_for_function(
            "v => document.querySelector('input[aria-label=\"Isolate one token\"]').value === v",
            arg=value,
            timeout=30_000,
        )

    click_token("from", 2)
    wait_focus("2: bank → …")
    click_token("to", 4)
    wait_focus("… → 4: the")
    click_token("to", 4)  # the same token again: every token comes back
    wait_focus("(all tokens)")
    assert page.locator('[data-testid="stException"]').count() == 0


def test_a_page_keeps_its_choices_across_a_visit_to_another_page(app_url, page):
    page.goto(f"{app_url}/attention?a=the+bank+by+the+river")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    hide = 'input[aria-label="Hide [CLS]/[SEP]"]'
    page.get_by_text("Hide [CLS]/[SEP]").click()
    page.wait_for_function(f"() => document.querySelector('{hide}').checked", timeout=30_000)
    wait_for_app(page)
    query = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    assert query.get("att_hide_special") == ["true"]  # a shared link opens the same view
    for name in ("Tokens", "Attention"):
        page.get_by_text(name, exact=True).first.click()
        page.wait_for_timeout(500)
        wait_for_app(page)
    page.wait_for_selector(hide, timeout=30_000)
    assert page.locator(hide).is_checked()
    assert "[CLS]" not in tick_texts(page)


def test_a_page_link_clicked_with_sentence_a_uncommitted_loses_no_choice_and_no_typed_sentences(
    app_url, page
):
    """Sentence A edited and not committed, then a page link clicked: Streamlit (1.67) may rerun the page that
    is open instead (the edit's commit wins) after the browser has dropped the page's controls. They were then
    drawn at their defaults, and the next click sent those: a lecturer's Word senses sentences went back to the
    preset (ui.bound). Whether the click is lost varies, so it is tried up to three times (tests/app/
    test_page_state.py checks ui.bound itself without a browser); either way nothing chosen or typed may be lost."""
    page.goto(f"{app_url}/senses?a=the+cat+sat")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    mine = "the bank of the river | river\nthe bank lent money | money\nwe sat by the bank | river"
    box = page.locator('[data-testid="stMain"] textarea').first
    box.fill(mine)
    box.press("Control+Enter")
    page.wait_for_timeout(500)
    wait_for_app(page)
    page.get_by_text("the last", exact=True).click()
    page.wait_for_timeout(500)
    wait_for_app(page)
    checked = '[data-testid="stMain"] [role="radiogroup"] label:has(input:checked)'
    nav = page.locator('[data-testid="stSidebarNav"] a')
    for attempt in range(3):
        typed = f"the dog ran {attempt}"
        page.locator('[data-testid="stSidebar"] textarea').first.fill(typed)  # not committed
        nav.filter(has_text="Tokens").first.click()
        page.wait_for_timeout(1500)
        wait_for_app(page)
        lost = page.locator('[data-testid="stMain"] textarea').count() > 0  # still on Word senses
        if not lost:  # it navigated: back to Word senses, where nothing may have changed, and again
            nav.filter(has_text="Word senses").first.click()
            page.wait_for_selector('[data-testid="stMain"] textarea', timeout=30_000)
            wait_for_app(page)
            assert box.input_value() == mine and page.locator(checked).inner_text() == "the last"
            continue
        assert box.input_value() == mine
        assert page.locator(checked).inner_text() == "the last"
        page.get_by_text("each one (a point each)", exact=True).click()  # the next click sends what is shown
        page.wait_for_timeout(500)
        wait_for_app(page)
        nav.filter(has_text="Tokens").first.click()
        page.wait_for_timeout(500)
        wait_for_app(page)
        nav.filter(has_text="Word senses").first.click()
        page.wait_for_selector('[data-testid="stMain"] textarea', timeout=30_000)
        wait_for_app(page)
        assert box.input_value() == mine
        assert page.locator('[data-testid="stSidebar"] textarea').first.input_value() == typed
        return
    pytest.skip("the first click navigated all three times: the case this test is about did not arise")


def test_compare_sides_begin_their_controls_level_when_one_model_card_wraps(app_url, chromium):
    """Where one side's model card wraps to more lines than the other's (the demo model's against the test
    checkpoint's, at some screen width), each side's layer slider, and the map under it, once began at another
    height."""
    tried = {}
    for width in (1024, 1152, 1280, 1366, 1440, 1600):
        context = chromium.new_context(viewport={"width": width, "height": 900})
        try:
            pg = context.new_page()
            pg.goto(f"{app_url}/compare?model2=%40demo")
            pg.wait_for_selector(CHART, timeout=60_000)
            wait_for_app(pg)
            cards = pg.locator(
                '[data-testid="stMain"] [data-testid="stCaptionContainer"]', has_text=" layers · "
            )
            heights = cards.evaluate_all("els => els.map(e => e.getBoundingClientRect().height)")
            sliders = pg.locator('input[type="range"][aria-label^="Layer of "]')
            tops = sliders.evaluate_all("els => els.map(e => e.getBoundingClientRect().top)")
            lefts = sliders.evaluate_all("els => els.map(e => e.getBoundingClientRect().left)")
        finally:
            context.close()
        tried[width] = (heights, tops)
        assert len(heights) == 2 and len(tops) == 2, tried
        if abs(lefts[0] - lefts[1]) < 2:  # too narrow for two maps: the sides stand one above the other
            continue
        if heights[0] != heights[1]:  # the case this test is about
            assert abs(tops[0] - tops[1]) < 2, tried
            return
    pytest.skip(f"with this machine's fonts no width made one card wrap more than the other: {tried}")


def chart_boxes(page, url: str, width: int) -> list[dict]:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url)
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    return page.locator('[data-testid="stPlotlyChart"]').evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect(); return {left: r.left, top: r.top, "
        "bottom: r.bottom, width: r.width}; })"
    )


def test_charts_side_by_side_stand_one_above_the_other_where_a_column_is_too_narrow(app_url, page):
    """At 1024 px with the sidebar open, Word senses' matrix had ~130 px for six columns of numbers, which ran
    together ("1.000.770.68"), and its title was cut ("…target word, la"). Too narrow for two, the charts
    now stand one above the other at the page's width; wide enough, they stay side by side."""
    url = f"{app_url}/senses"
    matrix, pca, *_ = chart_boxes(page, url, 1024)
    assert pca["top"] >= matrix["bottom"] - 1 and matrix["width"] > 450, (matrix, pca)
    matrix, pca, *_ = chart_boxes(page, url, 1600)
    assert abs(pca["top"] - matrix["top"]) < 2 and pca["left"] > matrix["left"] + matrix["width"] - 1
    # Compare's model cards stand one above the other with the maps: side by side over the stacked maps, the
    # second model's card stood over the first model's map
    first_map = chart_boxes(page, f"{app_url}/compare?model2=%40demo", 1024)[0]
    cards = page.locator('[data-testid="stMain"] [data-testid="stCaptionContainer"]', has_text=" layers · ")
    boxes = cards.evaluate_all("els => els.map(e => e.getBoundingClientRect()).map(r => [r.top, r.bottom])")
    assert len(boxes) == 2 and boxes[1][0] >= boxes[0][1] - 1 and first_map["top"] >= boxes[1][1], boxes


def test_text_boxes_in_large_text_show_whole_lines(app_url, page):
    """At 1.4 times their normal height, Large text's boxes cut a line through: Sentence A's third at 84 %, Word
    senses' eighth at 47 %, which read as a fault of the page rather than as more text below."""
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(f"{app_url}/senses?large=true")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    shown = page.locator("textarea").evaluate_all(
        """els => els.map(e => { const s = getComputedStyle(e);
              return (e.clientHeight - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom))
                     / parseFloat(s.lineHeight); })"""
    )
    assert len(shown) == 3, shown  # Sentence A, Sentence B, the page's sentences
    assert all(abs(lines - round(lines)) < 0.05 and lines >= 3 for lines in shown), shown
    # a box left at Streamlit's own height (Inside's minimal pairs) showed 2.25 lines
    page.goto(f"{app_url}/inside?inside_view=pll&large=true")
    page.wait_for_selector('textarea[aria-label="Sentences, one per line"]', timeout=60_000)
    wait_for_app(page)
    pairs = page.locator('textarea[aria-label="Sentences, one per line"]').evaluate(
        """e => { const s = getComputedStyle(e);
              return (e.clientHeight - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom))
                     / parseFloat(s.lineHeight); }"""
    )
    assert abs(pairs - round(pairs)) < 0.05 and pairs >= 3, pairs


def open_list(page, label: str):
    page.locator(f'input[aria-label="{label}"]').click()
    page.keyboard.press("ArrowDown")  # a click alone leaves a box low on the page focused but closed
    return page.get_by_role("option")


def pick(page, label: str, option: str) -> None:
    open_list(page, label).filter(has_text=option).first.click()
    page.wait_for_timeout(500)
    wait_for_app(page)


def options(page, label: str) -> list[str]:
    listed = open_list(page, label)
    listed.first.wait_for(timeout=10_000)
    found = listed.all_inner_texts()
    page.keyboard.press("Escape")
    return found


def test_a_choice_the_new_text_lacks_starts_over_in_the_box_as_on_the_page(app_url, page):
    """A kept choice the new text no longer has (a word, a token position) starts over, and the box shows the
    choice the page explains: it once went on showing the old word above the new text's first word."""
    page.goto(f"{app_url}/?a=the+dogs+sat+by+the+river")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    pick(page, "Word", "dogs")
    assert page.get_by_text("Pieces:").text_content() == "Pieces: dog ##s"
    type_sentence(page, "the cat sat")
    shown = page.locator('input[aria-label="Word"]').input_value()
    assert shown in ("the", "cat", "sat")
    explained = page.get_by_text("Pieces:").text_content().removeprefix("Pieces: ").replace(" ##", "")
    assert explained == shown

    page.get_by_text("Inside the model", exact=True).first.click()
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    type_sentence(page, "the dogs sat by the river")
    last = options(page, "Query token")[-1]
    pick(page, "Query token", last)
    assert page.locator('input[aria-label="Query token"]').input_value() == last
    type_sentence(page, "the cat")
    assert page.locator('input[aria-label="Query token"]').input_value() in options(page, "Query token")
    # A position the new text still has, with another token there: the box must not keep the old token's label
    # (the page once explained the new token under it).
    type_sentence(page, "the dogs sat by the river")
    kept = next(o for o in options(page, "Query token") if o.endswith(": sat"))
    pick(page, "Query token", kept)
    type_sentence(page, "the cat sat by the river")
    shown = page.locator('input[aria-label="Query token"]').input_value()
    assert shown != kept and shown in options(page, "Query token")
    assert page.locator('[data-testid="stException"]').count() == 0


def clipped_labels(page, url: str, width: int, height: int) -> list[str]:
    """Open `url` at width x height; the main area's widget labels cut off at their column's edge."""
    page.set_viewport_size({"width": width, "height": height})
    page.goto(url)
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    return page.evaluate(
        """() => [...document.querySelectorAll(
                '[data-testid="stMain"] [data-testid="stWidgetLabel"] [data-testid="stMarkdownContainer"]')]
              .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)"""
    )


def test_on_a_projectors_1024_px_no_widget_label_ends_in_an_ellipsis(app_url, page):
    """In normal text at 1024 px the Attention page's options showed "Merge sub-words int…"."""
    assert (
        clipped_labels(page, f"{app_url}/attention?a=the+bank+of+the+river&b=we+sat+there", 1024, 768) == []
    )
    assert page.get_by_text("Merge sub-words into words").is_visible()


def test_large_text_on_a_laptop_screen_wraps_labels_enlarges_choices_and_keeps_metrics_large(app_url, page):
    """At 1280 px with Large text on, "Merge sub-words into words" ended in "…", the Head box's "mean" kept its
    small size, the Layer slider's value covered its knob, metric values shrank to their labels' size, and tables and
    the sidebar's sentence kept theirs."""
    assert clipped_labels(page, f"{app_url}/attention?a=the+bank+of+the+river&large=true", 1280, 800) == []
    assert page.get_by_text("Merge sub-words into words").is_visible()
    head = page.locator('input[aria-label="Head"]').evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
    assert head >= 20
    # The Layer slider's value sits above its knob, enlarged, not down over it (its offset is set for small text).
    value_bottom, knob_top, value_size = page.locator('[data-testid="stSliderThumbValue"]').first.evaluate(
        """e => [e.getBoundingClientRect().bottom, e.parentElement.getBoundingClientRect().top,
                 parseFloat(getComputedStyle(e.querySelector('p')).fontSize)]"""
    )
    assert value_bottom <= knob_top + 1 and value_size >= 20
    # Tables (st.dataframe draws on a canvas no stylesheet reaches) and the sentence typed in the sidebar; table
    # cells padded less, so the demo model's Tokens table is whole at this width (its last column,
    # "continuation", ran ~20 px under the page's edge with Streamlit's padding).
    page.goto(f"{app_url}/?a=the+bank+of+the+river&large=true")
    page.wait_for_selector('[data-testid="stTable"] td', timeout=60_000)
    wait_for_app(page)
    padding, overflow = page.evaluate(
        """() => { const t = document.querySelector('[data-testid="stTable"] table');
                   return [parseFloat(getComputedStyle(t.querySelector('td')).paddingLeft),
                           t.scrollWidth - t.parentElement.clientWidth]; }"""
    )
    assert padding <= 5 and overflow <= 1, (padding, overflow)
    cell, typed = page.evaluate(
        """() => ['[data-testid="stTable"] td', '[data-testid="stSidebar"] textarea'].map(s =>
              parseFloat(getComputedStyle(document.querySelector(s)).fontSize))"""
    )
    assert cell >= 20 and typed >= 20
    # A metric's value (P(IsNext) here) stays larger than its label: the text rule once shrank it to their size.
    page.goto(f"{app_url}/sentence?a=the+bank+of+the+river&b=we+sat+there&large=true")
    page.wait_for_selector('[data-testid="stMetricValue"]', timeout=60_000)
    wait_for_app(page)
    sizes = page.evaluate(
        """() => ['stMetricValue', 'stMetricLabel'].map(id => parseFloat(getComputedStyle(
              document.querySelector(`[data-testid="${id}"] p`)).fontSize))"""
    )
    assert sizes[0] >= 1.8 * sizes[1] and sizes[1] >= 20
    # At 1024 px a metric's label too long for its column wraps: "Length (L2 norm)" ended in "…".
    page.set_viewport_size({"width": 1024, "height": 800})
    page.wait_for_timeout(300)
    cut = page.evaluate(
        """() => [...document.querySelectorAll('[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"]')]
              .filter(e => e.scrollWidth > e.clientWidth + 1 || getComputedStyle(e).whiteSpace === 'nowrap')
              .map(e => e.innerText)"""
    )
    assert cut == []
    # ... and so does a value (the Task page's answer, "Kate met Felix at the market. Felix …" in its metric)
    values = page.evaluate(
        """() => [...document.querySelectorAll('[data-testid="stMetricValue"] *')]
              .map(e => getComputedStyle(e).whiteSpace)"""
    )
    assert values and "nowrap" not in values, values
    # A picked word's chip in Masked words ("word 6: bank") kept its small size.
    page.goto(f"{app_url}/masked?a=the+bank+of+the+river&large=true")
    chip = page.locator(
        '[data-testid="stMain"] [data-testid="stMultiSelectTagsContainer"] [data-tag] span'
    ).first
    chip.wait_for(timeout=60_000)
    assert chip.evaluate("e => parseFloat(getComputedStyle(e).fontSize)") >= 20


@pytest.mark.parametrize("path", ["", "tokens", "embeddings", "attention", "masked", "senses", "sentence"])
def test_every_page_renders_with_no_network(app_url, page, path):
    page.goto(f"{app_url}/{path}?a=the+cat+sat+on+the+bank&b=the+river")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator("text=Page not found").count() == 0


def test_an_emptied_sentence_a_is_in_the_link_and_the_starting_sentence_is_not(app_url, page, chromium):
    """An emptied box left no trace in the link, which then opened on the starting sentence and its charts;
    the starting sentence itself, the box's default, need not be written out."""
    page.goto(f"{app_url}/attention")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    assert "a=" not in page.url
    type_sentence(page, "")
    page.wait_for_function("() => location.search.includes('a=')", timeout=10_000)
    assert urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query, keep_blank_values=True)["a"] == [""]
    fresh = chromium.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    fresh.goto(page.url)
    fresh.wait_for_selector("text=Type a sentence in the sidebar", timeout=60_000)
    assert fresh.locator('[data-testid="stSidebar"] textarea').first.input_value() == ""
    assert fresh.locator(CHART).count() == 0
    fresh.context.close()


def test_link_values_a_page_cannot_use_are_named_after_the_rerun_that_reads_a_view_named_by_hand(
    app_url, page
):
    """A view named by hand ("att_view=model") reruns the page with the view's label, and that rerun's widgets
    hold their values already: what the first run said of the link (layer 9 on a 2-layer model) was lost, and
    the page opened on layer 1 as if linked. A number box's "inf", taken out of the address before the page
    reads it, was not named either."""
    notes = '[data-testid="stMain"] [data-testid="stCaptionContainer"]:has-text("link")'
    page.goto(f"{app_url}/attention?a=the+cat+sat&layer=9&att_view=model&att_merge=perhaps")
    page.wait_for_selector(notes, timeout=60_000)
    wait_for_app(page)
    said = page.locator(notes).inner_text()
    assert "The link asks for layer 9, which this model doesn't have (layers 1 to 2): showing layer 1" in said
    assert "att_merge=perhaps (showing off)" in said
    assert "att_view=Model+view" in page.url or "att_view=Model%20view" in page.url
    page.goto(f"{app_url}/masked?a=the+%5BMASK%5D+sat&mask_topk=inf")
    page.wait_for_selector(notes, timeout=60_000)
    assert "mask_topk=inf (showing 5)" in page.locator(notes).inner_text()


def test_the_first_pages_own_path_hands_over_to_the_root_with_its_parameters(app_url, page):
    """/tokens once answered "Page not found" (Streamlit serves the default page at the root only)."""
    page.goto(f"{app_url}/tokens?a=the+cat+sat&b=the+river")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    page.wait_for_function("() => location.pathname === '/'", timeout=10_000)
    assert "a=the+cat+sat" in page.url and "b=the+river" in page.url
    assert page.locator("text=Page not found").count() == 0
    current = page.locator('[data-testid="stSidebarNav"] a[aria-current="page"]')
    assert current.count() == 1 and current.inner_text() == "Tokens"


def test_heads_the_new_model_lacks_leave_the_link_too(app_url, page, tiny_checkpoint):
    """After a switch to a smaller model, the page dropped head 4.4 but the URL kept it."""
    page.goto(
        f"{app_url}/inside?model=%40demo&inside_view=Head+ablation&a=the+cat+sat+on+the+%5BMASK%5D+."
        "&ablation_heads=1.1&ablation_heads=4.4"
    )
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    box = page.locator('[data-testid="stSidebar"] input[aria-label="Model"]')
    box.click()
    box.fill(str(tiny_checkpoint))  # 2 layers
    box.press("Enter")
    page.wait_for_timeout(800)
    wait_for_app(page)
    page.wait_for_function("() => !location.search.includes('4.4')", timeout=20_000)
    assert "ablation_heads=1.1" in page.url


def test_loading_placeholders_do_not_pulse_and_take_no_room(app_url, page):
    # An endless pulse makes Chromium compose a frame 60 times a second while a placeholder is on screen, which
    # in a crowded room is most of the wait (docs/benchmarks.md). Streamlit's own placeholder style is an
    # animation on a generated class; an inline one stands in for it here, with a control element beside it.
    page.goto(f"{app_url}/attention")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    placeholder, other = page.evaluate(
        """() => {
        const keys = document.createElement('style');
        keys.textContent = '@keyframes testpulse { 0% { opacity: .5 } 100% { opacity: 1 } }';
        document.head.appendChild(keys);
        const probe = id => {
            const d = document.createElement('div');
            d.dataset.testid = id;
            d.style.animation = 'testpulse 750ms infinite';
            document.body.appendChild(d);
            const seen = [getComputedStyle(d).animationName, d.getAnimations().length];
            d.remove();
            return seen;
        };
        return [probe('stSkeleton'), probe('stSomethingElse')];
    }"""
    )
    assert placeholder == ["none", 0]
    assert other == ["testpulse", 1]
    # The stylesheet sits in Streamlit's event container, not in the page's flow (where it would push the
    # title down by an element's gap).
    where = page.evaluate(
        """() => [...document.querySelectorAll('style')]
            .filter(s => s.textContent.includes("'stSkeleton'"))
            .map(s => !!s.closest('[data-testid="stEvent"]') && !s.closest('[data-testid="stMain"]'))"""
    )
    assert where == [True]


def test_the_task_pages_link_opens_attention_in_this_session_with_its_model(app_url, page):
    """A markdown link opened a new tab: a new session on the server's default model, not the task model the
    page was showing. The page link stays in this tab, so the model and the sentences come along."""
    page.goto(f"{app_url}/task?model=%40demo-senses&a=the+bank+of+the+river")
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    link = page.get_by_text("Open this input on the Attention page")
    link.click()
    page.get_by_role("heading", name="Attention").first.wait_for(timeout=60_000)
    page.wait_for_selector(CHART, timeout=60_000)
    wait_for_app(page)
    assert len(page.context.pages) == 1  # no new tab
    query = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    assert urllib.parse.urlparse(page.url).path.endswith("/attention")
    assert query.get("model") == ["@demo-senses"] and query.get("a") == ["the bank of the river"]
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "fine-tuned here" in sidebar, sidebar  # the model card of a demo task model


def test_the_head_role_grid_names_each_role_in_its_cell(app_url, page):
    """Written from customdata, every cell read "-" in the browser (plotly's heatmaps write cells from `text`),
    while the figure's JSON looked right to AppTest."""
    page.goto(f"{app_url}/inside?inside_view=Head+roles&a=the+cat+sat+on+the+mat+.")
    cells_text = f"{CHART} .scatterlayer .textpoint text"  # written over the cells (charts.write_cells)
    page.wait_for_selector(cells_text, timeout=60_000)
    wait_for_app(page)
    cells = page.locator(cells_text).all_text_contents()
    assert (
        cells
        and "-" not in cells
        and set(cells) <= {"", "cls", "sep", "punct", "prev", "next", "self", "broad"}
    )
    assert set(cells) - {""}, cells
