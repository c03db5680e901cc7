"""app.cache: the many-sentence runs."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import streamlit as st

import bert_core
from app import cache


@pytest.fixture
def clean_caches():
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    st.cache_resource.clear()
    st.cache_data.clear()


def test_token_chunks_keep_each_padded_batch_within_budget():
    lengths = [5, 300, 7, 512, 6, 40, 40, 8]
    chunks = cache.token_chunks(lengths, budget=600)
    assert sorted(i for c in chunks for i in c) == list(range(len(lengths)))
    for chunk in chunks:
        assert len(chunk) == 1 or len(chunk) * max(lengths[i] for i in chunk) <= 600
    assert cache.token_chunks([700], budget=600) == [[0]]  # one long text is a batch of its own
    assert cache.token_chunks([], budget=600) == []


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

    lines = cache._lines("fake", ("a", "\x00", "b"), Fake())
    assert lines.used == [0, 2] and [n for n, _ in lines.rejected] == [1]
    assert [r.text for r in lines.results] == ["a", "b"] and lines.results[0].pooled is None
    assert Fake.calls == [["a", "b"]]
