"""Word senses (the lecture demo): one word in several sentences; how alike its vectors are, layer by layer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import bert_core
from app import charts, state, transforms, ui

PRESET_FILE = state.REPO_ROOT / "assets" / "examples" / "word_senses_bank.txt"
FALLBACK_PRESET = """We sat on the bank of the river and watched the water. | river
The boat drifted slowly toward the muddy bank. | river
Fishermen lined the bank, waiting for the tide. | river
She went to the bank to deposit her salary. | money
The bank raised its interest rates again. | money
He borrowed money from the bank to buy a house. | money"""
MAX_SENTENCES = 40


def preset() -> str:
    try:
        return PRESET_FILE.read_text(encoding="utf-8").strip()
    except OSError:
        return FALLBACK_PRESET


def parse(text: str) -> list[tuple[str, str]]:
    """Lines 'sentence | sense' -> [(sentence, sense)]; the sense is optional ('' when missing)."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        sentence, _, sense = line.rpartition("|") if "|" in line else (line, "", "")
        out.append((sentence.strip(), sense.strip()))
    return [(s, k) for s, k in out if s]


st.header("Word senses")
st.caption(
    "The same word gets a different vector in each sentence. In the first layers 'bank' is mostly 'bank'; "
    "higher up, the river bank and the money bank drift apart."
)
active, _ = ui.page_model(need_text=False)
large = bool(st.session_state.get(ui.KEY_LARGE))
if not large:
    st.caption("Presenting? Turn on *Large text* under Display in the sidebar.")
fs = ui.font_size()

c1, c2 = st.columns([3, 1])
raw = c1.text_area(
    "Sentences, one per line, optionally ending with | sense",
    value=preset(),
    key="senses_text",
    height=200,
)
target = c2.text_input("Target word", value="bank", key="senses_word")
items = parse(raw)
if not target.strip():
    st.info("Type the target word.")
    st.stop()
if len(target.split()) > 1:
    st.info("Type a single word as the target (its pieces are averaged into one vector per sentence).")
    st.stop()
if len(items) < 2:
    st.info("Type at least two sentences (one per line).")
    st.stop()
if len(items) > MAX_SENTENCES:
    st.warning(f"{len(items)} sentences: only the first {MAX_SENTENCES} are used.")
    items = items[:MAX_SENTENCES]
sentences = [s[: state.MAX_CHARS] for s, _ in items]

try:
    results = state.analyze_batch(active, sentences)
except bert_core.BertScopeError as exc:
    st.error(ui.md_escape(str(exc)))
    st.stop()

normalize = active.model.tokenizer.normalize
found, missing = [], []
for n, r in enumerate(results):
    idx = transforms.token_word_indices(r, target, normalize)
    (found if idx else missing).append((n, idx))
if missing:
    st.warning(
        "The target word is not in these sentences, which are left out: "
        + "; ".join(ui.md_escape(f"{n + 1}. {sentences[n][:60]}") for n, _ in missing)
    )
if len(found) < 2:
    st.info("The target word must appear in at least two sentences.")
    st.stop()

# vectors[k, l] = mean over the word's pieces of hidden state l, for the k-th sentence that has the word
vectors = np.stack([results[n].hidden_states[:, idx].mean(axis=1) for n, idx in found])  # (K, L + 1, H)
n_layers = vectors.shape[1] - 1
names = [f"{n + 1}. {items[n][1] or 'sentence'}" for n, _ in found]
senses = [items[n][1] for n, _ in found]
hovers = [sentences[n] for n, _ in found]

layer = st.slider("Layer (0 = embeddings)", 0, n_layers, value=n_layers, key="senses_layer")
sims = np.stack([charts.cosine_matrix(vectors[:, layer_]) for layer_ in range(n_layers + 1)])  # (L + 1, K, K)

m1, m2 = st.columns(2)
with m1:
    fig = charts.heatmap(
        sims[layer],
        names,
        names,
        title=f"Cosine similarity of the target word, layer {layer}",
        zmin=-1.0,
        zmax=1.0,
        colorscale="RdBu",
        value_name="cosine",
        font_size=fs,
    )
    fig.update_traces(texttemplate="%{z:.2f}", textfont={"size": fs})

    def matrix_table() -> pd.DataFrame:
        ll, ii, jj = np.meshgrid(*(np.arange(n) for n in sims.shape), indexing="ij")
        return pd.DataFrame(
            {
                "layer": ll.ravel(),
                "sentence_i": np.array(names, dtype=object)[ii.ravel()],
                "sentence_j": np.array(names, dtype=object)[jj.ravel()],
                "cosine": sims.ravel(),
            }
        )

    ui.show_figure(fig, key="senses_matrix", data=matrix_table, filename="word_sense_similarity")

with m2:
    points = charts.pca_2d(vectors[:, layer])
    groups = list(range(len(found)))
    scatter = charts.scatter_2d(
        points,
        groups,
        names,
        hovers,
        title=f"PCA of the target word's vectors, layer {layer}",
        font_size=fs,
        marker_size=24 if large else 14,
    )
    ui.show_figure(
        scatter,
        key="senses_pca",
        data=pd.DataFrame({"sentence": names, "sense": senses, "pc1": points[:, 0], "pc2": points[:, 1]}),
        filename=f"word_sense_pca_layer{layer}",
    )

labelled = [s for s in senses if s]
if len(set(labelled)) >= 2:
    same, cross = [], []
    k = len(senses)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k) if senses[i] and senses[j]]
    for layer_ in range(n_layers + 1):
        s = [sims[layer_, i, j] for i, j in pairs if senses[i] == senses[j]]
        c = [sims[layer_, i, j] for i, j in pairs if senses[i] != senses[j]]
        same.append(float(np.mean(s)) if s else float("nan"))
        cross.append(float(np.mean(c)) if c else float("nan"))
    layers = list(range(n_layers + 1))
    line_fig = charts.lines(
        layers,
        {"same sense": same, "different sense": cross},
        title="Mean cosine similarity by layer",
        value_name="mean cosine",
        font_size=fs,
    )
    ui.show_figure(
        line_fig,
        key="senses_lines",
        data=pd.DataFrame({"layer": layers, "same_sense": same, "cross_sense": cross}),
        filename="word_sense_by_layer",
        caption="The gap between the lines is how much the model separates the senses at that layer.",
    )
else:
    st.caption(
        "Label at least two senses (… | river, … | money) to compare same-sense and cross-sense similarity."
    )
