"""Shared pieces of the benchmarks: a bert-base-size random checkpoint, exact-length texts, timing helpers.

Nothing here downloads anything: the checkpoint is built with `transformers.BertConfig()` defaults (bert-base:
12 layers, hidden 768, 12 heads, intermediate 3072, vocabulary 30522) and random weights, saved with
`save_pretrained` next to a synthetic 30522-entry WordPiece vocabulary whose every filler word is one piece,
so a text of n - 2 words is exactly n tokens.
"""

from __future__ import annotations

import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_DIR = Path(os.environ.get("BERTSCOPE_BENCH_DIR", "/tmp/bertscope-bench"))
VOCAB_SIZE = 30522
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def synthetic_vocab(size: int = VOCAB_SIZE) -> list[str]:
    """Specials, punctuation, letters, ##letters, then distinct lowercase filler words up to `size`."""
    head = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(".,!?;:'\"-()")
    head += list(_LETTERS) + ["##" + c for c in _LETTERS]
    words: list[str] = []
    seen = set(head)
    n = 0
    while len(head) + len(words) < size:
        # base-26 spelled words of 3+ letters: "aaa", "aab", ...; all distinct, all one piece.
        k, w = n, ""
        for _ in range(3):
            w = _LETTERS[k % 26] + w
            k //= 26
        while k:
            w = _LETTERS[k % 26] + w
            k //= 26
        n += 1
        if w not in seen:
            seen.add(w)
            words.append(w)
    return head + words


def filler_words(count: int, seed: int = 0) -> list[str]:
    import random

    vocab = synthetic_vocab()
    pool = [w for w in vocab[100:] if not w.startswith("##")]
    rng = random.Random(seed)
    return [rng.choice(pool) for _ in range(count)]


def text_of_tokens(n: int, seed: int = 0, architecture: str = "bert") -> str:
    """A text that tokenises to exactly n pieces ([CLS] + n - 2 words + [SEP], or <s> ... </s>)."""
    if n < 3:
        raise ValueError("n must be at least 3")
    if architecture in ("roberta", "albert"):
        # Their synthetic vocabularies hold every three-letter word as one piece after a space (below).
        import random

        rng = random.Random(seed)
        return " " + " ".join("".join(rng.choice(_LETTERS) for _ in range(3)) for _ in range(n - 2))
    return " ".join(filler_words(n - 2, seed))


def _three_letter_words() -> list[str]:
    return [a + b + c for a in _LETTERS for b in _LETTERS for c in _LETTERS]


def _roberta_tokenizer(path: Path) -> None:
    """Byte-level BPE whose merges build "Ġ" + every three-letter word, so each such word is one piece."""
    import transformers
    from tokenizers import pre_tokenizers

    vocab: dict[str, int] = {}
    for token in ["<s>", "<pad>", "</s>", "<unk>", *sorted(pre_tokenizers.ByteLevel.alphabet())]:
        vocab.setdefault(token, len(vocab))
    merges = []
    for word in _three_letter_words():
        for k in range(1, 4):
            left, right = "Ġ" + word[: k - 1], word[k - 1]
            if left + right not in vocab:
                merges.append((left, right))
                vocab[left + right] = len(vocab)
    vocab["<mask>"] = len(vocab)
    transformers.RobertaTokenizer(vocab=vocab, merges=merges).save_pretrained(path)


def _albert_tokenizer(path: Path) -> None:
    """SentencePiece (Unigram) whose every "▁" + three-letter word is one piece, scored above its letters."""
    import transformers

    pieces = [("<pad>", 0.0), ("<unk>", 0.0), ("[CLS]", 0.0), ("[SEP]", 0.0), ("[MASK]", 0.0), ("▁", -3.0)]
    pieces += [(c, -10.0) for c in _LETTERS] + [("▁" + w, -5.0) for w in _three_letter_words()]
    transformers.AlbertTokenizer(vocab=pieces).save_pretrained(path)


ARCHITECTURES = ("bert", "roberta", "distilbert", "albert", "electra")


def base_checkpoint(architecture: str = "bert", directory: Path = DEFAULT_DIR) -> Path:
    """Build (once) a base-size random encoder checkpoint of each family (ELECTRA: its small discriminator's
    sizes, the ELECTRA checkpoint most used), with a synthetic vocabulary that makes token counts exact."""
    if architecture == "bert":
        return bert_base_checkpoint(directory, "model")
    path = Path(directory) / architecture
    if (path / "config.json").is_file():
        return path
    import torch
    import transformers

    path.mkdir(parents=True, exist_ok=True)
    if architecture == "roberta":
        _roberta_tokenizer(path)
        vocab_size = len(transformers.RobertaTokenizer.from_pretrained(path))
        config = transformers.RobertaConfig(
            vocab_size=vocab_size, max_position_embeddings=514, type_vocab_size=1
        )
        model = transformers.RobertaModel(config)
    elif architecture == "albert":
        _albert_tokenizer(path)
        vocab_size = len(transformers.AlbertTokenizer.from_pretrained(path))
        config = transformers.AlbertConfig(
            vocab_size=vocab_size,
            embedding_size=128,
            hidden_size=768,
            num_attention_heads=12,
            intermediate_size=3072,
        )
        model = transformers.AlbertModel(config)
    else:
        (path / "vocab.txt").write_text("\n".join(synthetic_vocab()) + "\n", encoding="utf-8")
        if architecture == "distilbert":
            model = transformers.DistilBertModel(transformers.DistilBertConfig())
        else:
            model = transformers.ElectraModel(transformers.ElectraConfig())  # electra-small sizes
    torch.manual_seed(0)
    with torch.no_grad():  # non-trivial LayerNorms and biases, so every parameter matters
        for name, param in model.named_parameters():
            if "norm" in name.lower() or name.endswith("bias"):
                param.normal_(0.0 if name.endswith("bias") else 1.0, 0.1)
    model.eval().save_pretrained(path)
    return path


def reference_tokenizer(architecture: str, path: Path):
    import transformers

    name = {"roberta": "RobertaTokenizer", "albert": "AlbertTokenizer"}.get(architecture, "BertTokenizer")
    return getattr(transformers, name).from_pretrained(path)


def reference_model(path: Path):
    import transformers

    return transformers.AutoModel.from_pretrained(path, attn_implementation="eager").eval()


def bert_base_checkpoint(directory: Path = DEFAULT_DIR, kind: str = "pretraining") -> Path:
    """Build (once) a bert-base-size random checkpoint of `kind` ("model" or "pretraining") in `directory`."""
    path = Path(directory) / kind
    if (path / "config.json").is_file() and (path / "vocab.txt").is_file():
        return path
    import torch
    import transformers

    classes = {"model": transformers.BertModel, "pretraining": transformers.BertForPreTraining}
    torch.manual_seed(0)
    model = classes[kind](transformers.BertConfig()).eval()  # bert-base defaults
    with torch.no_grad():  # non-trivial LayerNorms and biases, so every parameter matters
        for name, param in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                param.normal_(0.0 if name.endswith("bias") else 1.0, 0.1)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    (path / "vocab.txt").write_text("\n".join(synthetic_vocab()) + "\n", encoding="utf-8")
    return path


def set_threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)


def time_once(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def alternate(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 2) -> dict[str, list[float]]:
    """Run every function `warmup` times, then `repeats` rounds of each in turn; seconds per call."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(repeats):
        # Alternate the order as well, so neither side always runs right after the other's cache effects.
        order = names if r % 2 == 0 else names[::-1]
        for k in order:
            times[k].append(time_once(fns[k]))
    return times


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def ratio_of_medians(ours: Sequence[float], ref: Sequence[float]) -> float:
    return median(ours) / median(ref)


def paired_ratio(ours: Sequence[float], ref: Sequence[float]) -> float:
    """Median of per-round ratios: robust to load from other processes drifting between rounds."""
    return statistics.median(a / b for a, b in zip(ours, ref, strict=True))


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-markdown table."""
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells[1:]:
        lines.append("| " + " | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " |")
    return "\n".join(lines)


def _fmt(c: object) -> str:
    if isinstance(c, float):
        return f"{c:.3g}" if abs(c) < 100 else f"{c:.0f}"
    return str(c)


def machine() -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}; {os.cpu_count()} logical CPUs visible; torch {torch.__version__} "
        f"({torch.get_num_threads()} threads); Python {platform.python_version()}"
    )


def reproduce_line() -> str:
    return "reproduce: " + shlex.join([".venv/bin/python", *sys.argv])


def load_average() -> str:
    try:
        return "load average " + " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return ""
