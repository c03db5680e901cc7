"""app.cache: the many-sentence runs."""

from __future__ import annotations

import pytest
import streamlit as st

import bert_core
from app import cache
from app.models import ActiveModel


@pytest.fixture
def clean_caches():
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    st.cache_resource.clear()
    st.cache_data.clear()


def test_lines_leave_bad_lines_out_and_run_the_rest_in_one_attention_free_call(
    clean_caches, tiny_model, monkeypatch
):
    calls = []
    real = tiny_model.vectors_batch

    def spy(texts, **kwargs):
        calls.append((list(texts), kwargs))
        return real(texts, **kwargs)

    def analyze_batch(texts):
        raise AssertionError("the attention-free call should have been used")

    monkeypatch.setattr(tiny_model, "vectors_batch", spy)
    monkeypatch.setattr(tiny_model, "analyze_batch", analyze_batch)
    me = ActiveModel(tiny_model, "tiny", "tiny")
    lines = cache.analyze_lines(me, ["the cat", "\x00", "the bank"])
    assert lines.used == [0, 2] and [n for n, _ in lines.rejected] == [1]
    assert calls == [(["the cat", "the bank"], {"max_batch_tokens": cache.BATCH_TOKEN_BUDGET})]
    assert [r.text for r in lines.results] == ["the cat", "the bank"]
    assert all(isinstance(r, bert_core.Vectors) for r in lines.results)
    with pytest.raises(ValueError, match="read-only"):  # shared by every session
        lines.results[0].hidden_states[0, 0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        lines.results[0].pooled[0] = 1.0
    assert cache.analyze_lines(me, ["\x00"]) == cache.Lines([], [], [(0, lines.rejected[0][1])])
    assert len(calls) == 1  # nothing usable: no model call
