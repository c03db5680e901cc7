"""App-test fixtures: AppTest pointed at the tiny checkpoint (via BERTSCOPE_MODEL), caches cleared per test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py"
TIMEOUT = 60


# The family checkpoints the pages are tried with: MLM for RoBERTa and DistilBERT, ALBERT with MLM + SOP,
# an ELECTRA discriminator (RTD).
FAMILIES = {"roberta": "mlm", "distilbert": "mlm", "albert": "pretraining", "electra": "pretraining"}


@pytest.fixture(scope="session")
def family_dirs(tmp_path_factory) -> dict[str, Path]:
    """One checkpoint directory per family, built once for the whole session (each takes a tokenizer
    training and a save_pretrained)."""
    from tests.variants import make_variant

    root = tmp_path_factory.mktemp("families")
    return {arch: make_variant(root / arch, arch, kind) for arch, kind in FAMILIES.items()}


@pytest.fixture
def app_env(tiny_checkpoint, monkeypatch):
    monkeypatch.setenv("BERTSCOPE_MODEL", str(tiny_checkpoint))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    st.cache_resource.clear()
    st.cache_data.clear()
    yield tiny_checkpoint
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def empty_hub_cache(monkeypatch, tmp_path):
    """An empty Hugging Face cache, whatever this machine has cached: huggingface_hub reads HF_HUB_CACHE once,
    when imported, so its constant is set as well as the variable."""
    import huggingface_hub.constants

    cache = tmp_path / "empty-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    return cache


@pytest.fixture
def make_app(app_env):
    """make_app(page=None, **query) -> an AppTest that has run once (on `page`, e.g. "views/attention.py")."""

    def make(page: str | None = None, **query) -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
        for k, v in query.items():
            at.query_params[k] = v
        at.run()
        if page is not None:
            at.switch_page(page).run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return make


@pytest.fixture
def figure_data(monkeypatch) -> dict:
    """{chart key: the data its CSV download is made from}, for every chart the app shows from now on."""
    from app import ui

    frames: dict = {}
    real = ui.show_figure

    def recording(fig, *, key, data=None, **kwargs):
        frames[key] = data
        return real(fig, key=key, data=data, **kwargs)

    monkeypatch.setattr(ui, "show_figure", recording)
    return frames


def figure(at: AppTest, key: str) -> dict:
    """The plotly figure (as JSON) of the chart with widget/element key `key`."""
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        if chart.proto.id.endswith(key) or key in chart.proto.id:
            return spec
    raise AssertionError(
        f"no plotly chart with key {key!r}; ids: {[c.proto.id for c in at.get('plotly_chart')]}"
    )


def hover(trace, row: int, col: int) -> str:
    """What hovering cell (row, col) of a heatmap shows: its hovertemplate with the row's and column's
    categories put in (the value left as written). `trace`: plotly JSON (a dict) or a plotly trace."""
    trace = trace if isinstance(trace, dict) else trace.to_plotly_json()
    text = trace["hovertemplate"].replace("%{y}", str(trace["y"][row])).replace("%{x}", str(trace["x"][col]))
    return text.split("<extra>")[0]


def decode(value):
    """A plotly JSON array (a list, or {"dtype", "bdata", "shape"} base64) as a numpy array."""
    import base64

    import numpy as np

    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if shape:
            dims = [int(x) for x in str(shape).split(",")] if isinstance(shape, str) else list(shape)
            array = array.reshape(dims)
        return array
    return np.asarray(value)


def table_with(at: AppTest, column: str):
    """The first st.dataframe (as pandas) that has `column`."""
    for frame in at.dataframe:
        if column in frame.value.columns:
            return frame.value
    raise AssertionError(f"no dataframe with column {column!r}")


def make_checkpoint_without_mlm(directory):
    """A BertModel checkpoint (pooler, no MLM/NSP head)."""
    from tests.conftest import make_checkpoint

    return make_checkpoint(directory, "model")


@pytest.fixture(autouse=True)
def _unfreeze_heap():
    """The app freezes the heap on its first collection (app/server.py, Collector); in this long-lived test
    process that would keep every later test's leftovers from the collector, so each test ends unfrozen."""
    import gc

    yield
    gc.unfreeze()
