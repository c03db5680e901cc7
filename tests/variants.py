"""Tiny random checkpoints of every family the core reads (RoBERTa, DistilBERT, ALBERT, ELECTRA), saved with
transformers' `save_pretrained`, with tokenizers trained here and saved by transformers' own tokenizer classes.
For the core's parity tests and the app's pages alike; nothing is downloaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from tests.conftest import write_vocab

CORPUS = [
    "The boat drifted toward the bank of the river.",
    "I deposited my pay at the bank before noon.",
    "We sat on the grassy bank, watching the water run by.",
    "She ran; he walked. They met at the old mill!",
    "Café, naïve, résumé: accents travel too.",
    "東京 and 大阪 are cities; emoji 😀 appear too.",
] * 8
TEXTS = [
    ("the cat sat on the bank of the river.", None),
    ("  We deposited cash at the bank. ", "the river ran by"),
    ("Café naïve 東京 😀 run!", None),
]
TINY = dict(hidden=32, layers=2, heads=4, inner=37, embedding=16)
MID = dict(hidden=64, layers=3, heads=4, inner=96, embedding=32)


def _bpe_tokenizer(directory: Path) -> None:
    import transformers
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        CORPUS, vocab_size=420, min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    )
    model = json.loads(bpe._tokenizer.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    transformers.RobertaTokenizer(vocab=model["vocab"], merges=merges).save_pretrained(directory)


def _unigram_tokenizer(directory: Path) -> None:
    import transformers
    from tokenizers import SentencePieceUnigramTokenizer

    sp = SentencePieceUnigramTokenizer()
    specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    sp.train_from_iterator(
        [t.lower() for t in CORPUS], vocab_size=160, special_tokens=specials, unk_token="<unk>"
    )
    vocab = [tuple(v) for v in json.loads(sp._tokenizer.to_str())["model"]["vocab"]]
    transformers.AlbertTokenizer(vocab=vocab).save_pretrained(directory)


def _write_tokenizer(directory: Path, arch: str) -> None:
    """The family's tokenizer files: byte-level BPE (RoBERTa), SentencePiece (ALBERT) or WordPiece."""
    if arch == "roberta":
        _bpe_tokenizer(directory)
    elif arch == "albert":
        _unigram_tokenizer(directory)
    else:
        write_vocab(directory)


def _config(arch: str, vocab_size: int, size: dict):
    import transformers

    h, n, heads, i, e = size["hidden"], size["layers"], size["heads"], size["inner"], size["embedding"]
    common = dict(vocab_size=vocab_size, max_position_embeddings=64)
    if arch == "roberta":
        return transformers.RobertaConfig(
            hidden_size=h, num_hidden_layers=n, num_attention_heads=heads, intermediate_size=i,
            type_vocab_size=1, pad_token_id=1, **common,
        )  # fmt: skip
    if arch == "distilbert":
        return transformers.DistilBertConfig(dim=h, n_layers=n, n_heads=heads, hidden_dim=i, **common)
    cls = transformers.AlbertConfig if arch == "albert" else transformers.ElectraConfig
    return cls(
        embedding_size=e, hidden_size=h, num_hidden_layers=n, num_attention_heads=heads, intermediate_size=i,
        **common,
    )  # fmt: skip


CLASSES = {
    "roberta": {"model": "RobertaModel", "mlm": "RobertaForMaskedLM"},
    "distilbert": {"model": "DistilBertModel", "mlm": "DistilBertForMaskedLM"},
    "albert": {"model": "AlbertModel", "mlm": "AlbertForMaskedLM", "pretraining": "AlbertForPreTraining"},
    "electra": {"model": "ElectraModel", "mlm": "ElectraForMaskedLM", "pretraining": "ElectraForPreTraining"},
}


def make_variant(directory: Path, arch: str, kind: str, size: dict = TINY, seed: int = 0) -> Path:
    """Save a random-weight checkpoint of `arch` and `kind` ("model", "mlm", "pretraining": see CLASSES)."""
    import transformers

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _write_tokenizer(directory, arch)
    vocab_size = len(hf_tokenizer(directory, arch))
    torch.manual_seed(seed)
    model = getattr(transformers, CLASSES[arch][kind])(_config(arch, vocab_size, size)).eval()
    with torch.no_grad():  # randomise LayerNorms and biases too, so parity covers every parameter
        for name, param in model.named_parameters():
            if "norm" in name.lower() or name.endswith("bias"):
                param.normal_(0.0 if name.endswith("bias") else 1.0, 0.1)
    model.save_pretrained(directory)
    return directory


def hf_tokenizer(directory: Path, arch: str):
    """transformers' own tokenizer class of the family, for the same files."""
    import transformers

    cls = {"roberta": "RobertaTokenizer", "albert": "AlbertTokenizer"}.get(arch, "BertTokenizer")
    return getattr(transformers, cls).from_pretrained(directory)


TASK_CLASSES = {
    "classify": "ForSequenceClassification",
    "tag": "ForTokenClassification",
    "qa": "ForQuestionAnswering",
    "choice": "ForMultipleChoice",
}
FAMILY_PREFIX = {
    "bert": "Bert",
    "roberta": "Roberta",
    "distilbert": "DistilBert",
    "albert": "Albert",
    "electra": "Electra",
}


def make_task_checkpoint(
    directory: Path, arch: str, task: str, labels: list[str] | None = None, seed: int = 0, **config_changes
) -> Path:
    """A random-weight fine-tuned checkpoint of `arch` with the `task` head, labels named as given."""
    import transformers

    from tests.conftest import TINY_VOCAB

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _write_tokenizer(directory, arch)
    vocab_size = (
        len(TINY_VOCAB) if arch in ("bert", "distilbert", "electra") else len(hf_tokenizer(directory, arch))
    )
    if arch == "bert":
        config = transformers.BertConfig(
            vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=37, max_position_embeddings=64,
        )  # fmt: skip
    else:
        config = _config(arch, vocab_size, TINY)
    if labels is not None:
        config.id2label = dict(enumerate(labels))
        config.label2id = {name: i for i, name in enumerate(labels)}
    for key, value in config_changes.items():
        setattr(config, key, value)
    torch.manual_seed(seed)
    model = getattr(transformers, FAMILY_PREFIX[arch] + TASK_CLASSES[task])(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name.lower() or name.endswith("bias"):
                param.normal_(0.0 if name.endswith("bias") else 1.0, 0.1)
            elif "classifier" in name or "qa_outputs" in name or "summary" in name:
                param.normal_(0.0, 0.5)  # large enough that the heads' answers differ clearly
    model.save_pretrained(directory)
    return directory
