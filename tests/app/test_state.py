"""app.state: chunked many-sentence runs, remembered load failures, and the shared-server settings."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import streamlit as st

import bert_core
from app import state
from tests.conftest import make_checkpoint


@pytest.fixture
def clean_caches():
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def load_calls(monkeypatch):
    """The sources bert_core.load_pretrained is called with, in order (the real loader still runs)."""
    calls = []
    real = bert_core.load_pretrained

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(bert_core, "load_pretrained", counting)
    return calls


def test_token_chunks_keep_each_padded_batch_within_budget():
    lengths = [5, 300, 7, 512, 6, 40, 40, 8]
    chunks = state.token_chunks(lengths, budget=600)
    assert sorted(i for c in chunks for i in c) == list(range(len(lengths)))
    for chunk in chunks:
        assert len(chunk) == 1 or len(chunk) * max(lengths[i] for i in chunk) <= 600
    assert state.token_chunks([700], budget=600) == [[0]]  # one long text is a batch of its own
    assert state.token_chunks([], budget=600) == []


def test_lines_use_a_lighter_core_call_when_there_is_one(clean_caches):
    class Fake:
        calls: list[list[str]] = []

        def encode(self, text):
            if not text.strip("\x00"):
                raise bert_core.InputError("text is empty once control and zero-width characters are removed")
            return ["[CLS]", *text.split(), "[SEP]"]

        def vectors_batch(self, texts):
            self.calls.append(list(texts))
            return [
                SimpleNamespace(
                    tokens=["[CLS]", t, "[SEP]"],
                    offsets=np.zeros((3, 2), dtype=np.int64),
                    sequence_ids=[None, 0, None],
                    word_ids=[None, 0, None],
                    special_tokens_mask=np.array([True, False, True]),
                    truncated=False,
                    num_tokens_before_truncation=3,
                    hidden_states=np.ones((2, 3, 4), dtype=np.float32),
                )
                for t in texts
            ]

        def analyze_batch(self, texts):
            raise AssertionError("the attention-free call should have been used")

    lines = state._lines("fake", ("a", "\x00", "b"), Fake())
    assert lines.used == [0, 2] and [n for n, _ in lines.rejected] == [1]
    assert [r.text for r in lines.results] == ["a", "b"] and lines.results[0].pooled is None
    assert Fake.calls == [["a", "b"]]


def test_broken_directory_is_not_reread_until_it_changes(tmp_path, load_calls):
    calls = load_calls
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    store = state.ModelStore()
    for _ in range(3):  # three reruns (slider moves) of the page
        with pytest.raises(bert_core.ModelLoadError):
            store.load(str(broken))
    assert len(calls) == 1
    make_checkpoint(broken, "model")  # the user fixes the directory
    assert store.load(str(broken)).info.num_layers == 2
    assert len(calls) == 2


def test_hub_downloads_can_be_switched_off(make_app, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(bert_core, "load_pretrained", lambda *a, **k: calls.append(a) or None)
    monkeypatch.setenv("BERTSCOPE_ALLOW_HUB", "0")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    at = make_app(model="someone/bert-tiny")
    errors = " ".join(e.value for e in at.sidebar.error).replace("\\", "")
    assert "BERTSCOPE_ALLOW_HUB=0" in errors and "not in the local cache" in errors
    assert calls == []  # refused before any download was tried
    assert state.refusal("someone/bert-tiny")
    monkeypatch.setenv("BERTSCOPE_ALLOW_HUB", "1")
    assert state.refusal("someone/bert-tiny") is None


def test_model_roots_restrict_local_directories(make_app, monkeypatch, tmp_path):
    allowed = make_checkpoint(tmp_path / "allowed" / "m", "model")
    outside = make_checkpoint(tmp_path / "elsewhere" / "m", "model")
    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", f"{tmp_path / 'allowed'}:{tmp_path / 'other'}")
    at = make_app(model=str(outside))
    errors = " ".join(e.value for e in at.sidebar.error).replace("\\", "")
    assert "only under" in errors and "BERTSCOPE_MODEL_ROOTS" in errors
    assert state.refusal(str(tmp_path / "allowed" / ".." / "elsewhere" / "m"))  # no escape through ..
    assert state.refusal("/etc")
    at = make_app(model=str(allowed))
    assert not at.sidebar.error
    assert state.refusal(state.DEMO_SOURCE) is None


@pytest.mark.parametrize("exact", [False, True])
def test_sidebar_says_which_arithmetic_and_exact_mode_loads_unpacked(make_app, app_env, monkeypatch, exact):
    if exact:
        monkeypatch.setenv("BERTSCOPE_EXACT", "1")
    else:
        monkeypatch.delenv("BERTSCOPE_EXACT", raising=False)
    at = make_app()
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert ("arithmetic: exact" in captions) == exact
    assert ("arithmetic: fast" in captions) == (not exact)
    info = state.ModelStore().load(str(app_env)).info
    assert info.packed_weights == (not exact)
    assert "fused" not in captions and "kernel" not in captions
    # the card names the architecture and the checkpoint's prediction heads as ModelInfo lists them
    assert info.architecture == "bert" and info.heads == ("mlm", "nsp")
    assert "bert · 2 layers" in captions and "prediction heads: MLM ✓ · NSP ✓ · pooler ✓" in captions


def test_a_model_still_in_use_is_adopted_back_not_loaded_twice(tmp_path, load_calls):
    import gc

    calls = load_calls
    a, b = make_checkpoint(tmp_path / "a", "model"), make_checkpoint(tmp_path / "b", "model")
    store = state.ModelStore(capacity=1)
    held = store.load(str(a))  # a session keeps using model a ...
    store.load(str(b))  # ... while another session's model b pushes it out of the cache
    assert store.load(str(a)) is held and len(calls) == 2  # adopted back, not a second copy
    gc.collect()  # b was pushed out by that and nobody holds it: it is gone, not kept alive by the store
    store.load(str(b))
    assert len(calls) == 3


def test_exact_mode_is_part_of_the_cache_key(tiny_checkpoint, monkeypatch):
    store = state.ModelStore()
    monkeypatch.setenv("BERTSCOPE_EXACT", "1")
    exact = store.load(str(tiny_checkpoint))
    monkeypatch.setenv("BERTSCOPE_EXACT", "0")
    fast = store.load(str(tiny_checkpoint))
    assert not exact.info.packed_weights and fast.info.packed_weights
    assert state.loaded_key(str(tiny_checkpoint)) != state.model_key(str(tiny_checkpoint)) + " [exact]"
    monkeypatch.setenv("BERTSCOPE_EXACT", "1")
    assert store.load(str(tiny_checkpoint)) is exact
