"""Shared fixtures: tiny random BERT checkpoints saved as real Hugging Face directories.

Nothing here downloads anything; every checkpoint is built from random weights with `transformers`
(a test-only dependency) and written with `save_pretrained`, the same way a hub checkpoint is laid out.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

# Tests never touch the network; make the HF libraries agree.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# A small but real WordPiece vocabulary: specials, punctuation, letters, whole words, ## continuations.
TINY_VOCAB = list(
    dict.fromkeys(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        + list(".,!?'\"-()")
        + list("abcdefghijklmnopqrstuvwxyz")
        + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
        + [
            "the",
            "a",
            "bank",
            "river",
            "money",
            "sat",
            "on",
            "of",
            "we",
            "by",
            "deposit",
            "ed",
            "##ed",
            "##ing",
            "##s",
            "un",
            "##want",
            "want",
            "run",
            "##n",
            "cat",
            "dog",
            "is",
            "was",
            "in",
            "to",
            "and",
            "it",
            "he",
            "she",
            "water",
            "cash",
            "at",
            "my",
            "i",
            "you",
        ]
    )
)  # dict.fromkeys: a repeated line would leave an id no token maps to


def write_vocab(directory: Path, vocab: list[str] = TINY_VOCAB) -> Path:
    path = Path(directory) / "vocab.txt"
    path.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return path


def make_checkpoint(
    directory: Path,
    kind: str = "pretraining",
    *,
    seed: int = 0,
    vocab: list[str] = TINY_VOCAB,
    **config_overrides,
) -> Path:
    """Save a random-weight HF checkpoint of `kind` ("model", "mlm", "pretraining", "nsp") with a vocab."""
    import torch
    import transformers

    classes = {
        "model": transformers.BertModel,
        "mlm": transformers.BertForMaskedLM,
        "pretraining": transformers.BertForPreTraining,
        "nsp": transformers.BertForNextSentencePrediction,
    }
    sizes = dict(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    sizes.update(config_overrides)
    config = transformers.BertConfig(**sizes)
    torch.manual_seed(seed)
    model = classes[kind](config).eval()
    # HF initialises LayerNorm to (1, 0) and biases to 0; randomise them so parity covers every parameter.
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                param.normal_(0.0 if name.endswith("bias") else 1.0, 0.1)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    write_vocab(directory, vocab)
    return directory


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> Path:
    """A BertForPreTraining checkpoint (pooler, MLM and NSP heads), 2 layers x 4 heads, hidden 32."""
    return make_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt", "pretraining")


@pytest.fixture(scope="session")
def tiny_model(tiny_checkpoint):
    import bert_core

    return bert_core.load_pretrained(tiny_checkpoint)


def analyze_concurrently(model, texts: list[str], rounds: int = 3) -> dict:
    """Two threads per text, each calling model.analyze(text) `rounds` times at once with all the others;
    returns the last result per text. Fails the test if any call raised."""
    results: dict = {}
    errors: list[BaseException] = []

    def work(text):
        try:
            for _ in range(rounds):
                results[text] = model.analyze(text)
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in texts * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "an analysis did not finish within 60 s"
    return results
