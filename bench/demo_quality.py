"""How good is the bundled demo model? Measured on sentences generated *after* training, never seen in it.

    python bench/demo_quality.py [--model assets/demo-model] [--corpus assets/corpus/demo_corpus.txt]

1. Masked content words: every content word of every held-out sentence is masked on its own (one [MASK]
   per forward pass) and we count how often the original word is among the model's top 5. Function words
   (the, of, she...) are left out because they are easy; person names are reported separately because any
   name fits ("___ went to the bank").
2. Word senses: for each ambiguous word (bank, bat, bark...), its top-layer vectors in held-out sentences
   of either sense; separation = mean cosine between same-sense vectors minus mean cosine across senses.
3. Next sentence prediction accuracy on held-out IsNext / NotNext pairs.

Held-out text comes from the corpus generator with another seed. The grammar is small, so most generated
sentences occur in the training corpus verbatim, and most of the rest differ only in a name or a pronoun.
Sentences are therefore compared on a normalised form (lower case, no punctuation, person names, pronouns and
the shared time / feeling / relative phrases of corpus.py replaced by placeholders) against the training
corpus normalised the same way:

- novel: the normalised form occurs nowhere in the training corpus (at least one content word differs);
- near-duplicate: not in the training corpus verbatim, but its normalised form is (reported for transparency);
- verbatim training sentences are dropped.

NSP IsNext pairs are two adjacent sentences of one generated document (both in the group measured); NotNext
pairs join a sentence of the group to a random one of another document.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import bert_core  # noqa: E402
from bench._common import reproduce_line, table  # noqa: E402
from bert_core.pretraining.corpus import (  # noqa: E402
    FIRST_PERSON,
    PERSON_NAMES,
    SHARED_SLOTS,
    generate_corpus,
    read_documents,
)

FUNCTION_WORDS = frozenset(
    """a an the and or but so of to in on at by for with from into onto up out over under as than then that
    this these those it its he she his her him they them their we our us you your i me my is was were be been
    are am has had have do did does not no every each all some any there when while after before because
    could would can will until about across along around toward towards behind between through next back
    away off down near also who which what where how too very one more most much many other another such
    own same just only even still again once here if whole""".split()
    # what contractions and clock times leave as words of their own ("can ' t", "o ' clock", "5 pm")
    + "t s m re ll ve d o pm".split()
)
NAMES = frozenset(n.lower() for n in PERSON_NAMES)
TOP_K = 5


PRONOUNS = frozenset(
    {"he", "she", "his", "her", "him", "hers", *(w.lower() for p in FIRST_PERSON for w in p)}
)
NAME_SLOTS = {n.lower(): "<name>" for n in PERSON_NAMES} | {p: "<pronoun>" for p in PRONOUNS}


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]+", " ", text.lower()).split())


# keyed the way `normalise` leaves a phrase ("at 9 o'clock" -> "at 9 o clock"; without its digits, "at 7:30"
# would be "at", and every "at" a time)
PHRASE_SLOTS = {_words(filler): f"<{slot}>" for slot, fillers in SHARED_SLOTS.items() for filler in fillers}
_PHRASE = re.compile(r"\b(" + "|".join(map(re.escape, sorted(PHRASE_SLOTS, key=len, reverse=True))) + r")\b")


def normalise(text: str) -> str:
    """The dedup key: lower case, no punctuation, names / pronouns / time, feeling, relative as placeholders
    (a number stays: "3 other people" and "20 other people" are different sentences)."""
    joined = " ".join(NAME_SLOTS.get(w, w) for w in _words(text).split())
    return _PHRASE.sub(lambda m: PHRASE_SLOTS[m.group(1)], joined)


def held_out_documents(seed: int, documents: int, training: list[str]) -> tuple[list[list], list[list[str]]]:
    """(generated documents, each sentence's group: "novel", "near-duplicate" or "training")."""
    verbatim = set(training)
    normalised = {normalise(s) for s in set(training)}
    docs = list(generate_corpus(documents, seed))
    groups = [
        [
            "training"
            if s.text in verbatim
            else "near-duplicate"
            if normalise(s.text) in normalised
            else "novel"
            for s in doc
        ]
        for doc in docs
    ]
    return docs, groups


def select(docs: list[list], groups: list[list[str]], group: str) -> list[list]:
    """The documents' sentences of `group` (documents left with none are dropped)."""
    kept = [
        [s for s, g in zip(doc, gs, strict=True) if g == group] for doc, gs in zip(docs, groups, strict=True)
    ]
    return [d for d in kept if d]


def _forward(model, rows: list[np.ndarray], types: list[np.ndarray] | None = None):
    """Run padded rows through the network; return (last hidden state (B, S, H), pooled (B, H))."""
    longest = max(len(r) for r in rows)
    ids = np.zeros((len(rows), longest), dtype=np.int64)
    tt = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
        mask[i, : len(r)] = 1
        if types is not None:
            tt[i, : len(r)] = types[i]
    with torch.inference_mode():
        out = model.network(
            torch.from_numpy(ids), torch.from_numpy(tt), attention_mask=torch.from_numpy(mask)
        )
    return out


def masked_word_accuracy(model, sentences: list[str], batch_size: int = 128) -> dict[str, tuple[int, int]]:
    """{"content": (hits, total), "names": (hits, total)}: top-5 hits when each word is masked alone."""
    tok = model.tokenizer
    items = []  # (ids with one [MASK], position, target id, kind)
    for text in sentences:
        enc = tok.encode(text)
        ids = np.array(enc.input_ids)
        for pos, (piece, word) in enumerate(zip(enc.tokens, enc.word_ids, strict=True)):
            if word is None or not re.fullmatch(r"[a-z]+", piece):
                continue
            # Only words that are a single piece: a masked multi-piece word would give its rest away.
            if enc.word_ids.count(word) != 1:
                continue
            if piece in FUNCTION_WORDS:
                continue
            kind = "names" if piece in NAMES else "content"
            corrupted = ids.copy()
            corrupted[pos] = tok.mask_token_id
            items.append((corrupted, pos, int(ids[pos]), kind))
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        out = _forward(model, [c[0] for c in chunk])
        rows = torch.arange(len(chunk))
        cols = torch.tensor([c[1] for c in chunk])
        with torch.inference_mode():
            logits = model.network.logits("mlm", out.last_hidden_state[rows, cols])  # (B, V)
            top = logits.topk(TOP_K, dim=-1).indices.numpy()
        for (_, _, target, kind), best in zip(chunk, top, strict=True):
            counts[kind][0] += int(target in best)
            counts[kind][1] += 1
    return {k: (v[0], v[1]) for k, v in counts.items()}


def sense_separation(model, documents: list[list], layer: int = -1) -> dict[str, dict[str, float]]:
    """Per ambiguous word: mean same-sense cosine, mean cross-sense cosine, their difference, counts."""
    tok = model.tokenizer
    examples: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for doc in documents:
        for s in doc:
            for word, sense in s.senses.items():
                examples[word].append((s.text, sense))
    results = {}
    for word, items in sorted(examples.items()):
        vectors, senses = [], []
        encs = [tok.encode(text) for text, _ in items]
        positions = [next((i for i, t in enumerate(e.tokens) if t == word), None) for e in encs]
        keep = [i for i, p in enumerate(positions) if p is not None]
        for start in range(0, len(keep), 128):
            chunk = keep[start : start + 128]
            out = _forward(model, [np.array(encs[i].input_ids) for i in chunk])
            hidden = out.hidden_states[layer]
            for row, i in enumerate(chunk):
                vectors.append(hidden[row, positions[i]].numpy())
                senses.append(items[i][1])
        if len(set(senses)) < 2:
            continue
        v = np.stack(vectors)
        v = v / np.linalg.norm(v, axis=1, keepdims=True)
        cos = v @ v.T
        labels = np.array(senses)
        same = labels[:, None] == labels[None, :]
        off_diagonal = ~np.eye(len(v), dtype=bool)
        within = float(cos[same & off_diagonal].mean())
        across = float(cos[~same].mean())
        counts = {s: int((labels == s).sum()) for s in sorted(set(senses))}
        results[word] = {"within": within, "across": across, "separation": within - across, "counts": counts}
    return results


def nsp_accuracy(
    model, docs: list[list], groups: list[list[str]], group: str, pairs: int, seed: int
) -> tuple[float, int] | None:
    """(accuracy, pairs) on balanced pairs: IsNext = sentences i, i+1 of one generated document, both in
    `group`; NotNext = a `group` sentence and a random `group` sentence of another document."""
    if not model.has_nsp_head:
        return None
    rng = np.random.default_rng(seed)
    adjacent = [
        (d, i)
        for d, gs in enumerate(groups)
        for i in range(len(gs) - 1)
        if gs[i] == group and gs[i + 1] == group
    ]
    members = [(d, i) for d, gs in enumerate(groups) for i, g in enumerate(gs) if g == group]
    half = min(pairs // 2, len(adjacent))
    if half == 0:
        return None
    encs, labels = [], []
    for k in rng.choice(len(adjacent), size=half, replace=False):
        d, i = adjacent[int(k)]
        encs.append(model.tokenizer.encode(docs[d][i].text, docs[d][i + 1].text))
        labels.append(0)  # IsNext
    while len(labels) < 2 * half:
        d, i = members[int(rng.integers(len(members)))]
        e, j = members[int(rng.integers(len(members)))]
        if e == d:
            continue
        encs.append(model.tokenizer.encode(docs[d][i].text, docs[e][j].text))
        labels.append(1)  # NotNext
    hits = 0
    for start in range(0, len(encs), 128):
        chunk = encs[start : start + 128]
        out = _forward(
            model, [np.array(e.input_ids) for e in chunk], [np.array(e.token_type_ids) for e in chunk]
        )
        with torch.inference_mode():
            predicted = model.network.logits("nsp", out.pooled).argmax(-1).numpy()
        hits += int((predicted == np.array(labels[start : start + 128])).sum())
    return hits / len(encs), len(encs)


def measure(model, docs: list[list], groups: list[list[str]], group: str, limit: int, seed: int) -> dict:
    documents = select(docs, groups, group)
    if limit:
        rng = np.random.default_rng([seed, 3])
        order = rng.permutation(len(documents))
        kept, count = [], 0
        for k in order:
            if count >= limit:
                break
            kept.append(documents[int(k)])
            count += len(documents[int(k)])
        documents = kept
    sentences = [s.text for d in documents for s in d]
    senses = sense_separation(model, documents)
    return {
        "sentences": len(sentences),
        "words": masked_word_accuracy(model, sentences),
        "senses": senses,
        "nsp": nsp_accuracy(model, docs, groups, group, 2000, seed),
    }


def _rate(pair: tuple[int, int] | None) -> str:
    return "–" if not pair else f"{pair[0] / pair[1]:.1%} ({pair[0]}/{pair[1]})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(ROOT / "assets" / "demo-model"))
    parser.add_argument("--corpus", default=str(ROOT / "assets" / "corpus" / "demo_corpus.txt"))
    parser.add_argument("--seed", type=int, default=2024, help="generator seed of the held-out text")
    parser.add_argument(
        "--documents", type=int, default=40000, help="held-out documents to generate (~15k novel sentences)"
    )
    parser.add_argument(
        "--near-duplicates",
        type=int,
        default=3000,
        help="at most this many near-duplicate sentences measured",
    )
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    started = time.monotonic()

    training = [s for d in read_documents(args.corpus) for s in d]
    docs, groups = held_out_documents(args.seed, args.documents, training)
    model = bert_core.load_pretrained(args.model)
    flat = [g for gs in groups for g in gs]
    print(f"model: {args.model} ({model.info.num_parameters:,} parameters)")
    print(
        f"held-out text: seed {args.seed}, {args.documents} documents, {len(flat)} sentences: "
        f"{flat.count('training')} verbatim in the training corpus (dropped), "
        f"{flat.count('near-duplicate')} near-duplicates, {flat.count('novel')} novel"
    )
    results = {
        "novel": measure(model, docs, groups, "novel", 0, args.seed),
        "near-duplicate": measure(model, docs, groups, "near-duplicate", args.near_duplicates, args.seed),
    }
    rows = []
    for group, r in results.items():
        bank = r["senses"].get("bank")
        mean_sep = float(np.mean([x["separation"] for x in r["senses"].values()])) if r["senses"] else None
        nsp = r["nsp"]
        rows.append(
            [
                group,
                r["sentences"],
                _rate(r["words"].get("content")),
                _rate(r["words"].get("names")),
                "–" if bank is None else f"{bank['separation']:+.3f} ({sum(bank['counts'].values())} uses)",
                "–" if mean_sep is None else f"{mean_sep:+.3f} ({len(r['senses'])} words)",
                "–" if nsp is None else f"{nsp[0]:.1%} ({nsp[1]} pairs)",
            ]
        )
    print()
    print(
        table(
            [
                "held-out group",
                "sentences",
                f"top-{TOP_K} content words",
                f"top-{TOP_K} names",
                "bank separation",
                "mean separation",
                "NSP accuracy",
            ],
            rows,
        )  # fmt: skip
    )
    print()
    novel = results["novel"]
    print("top-layer sense separation on novel sentences (mean cos same sense - mean cos across senses):")
    for word, r in novel["senses"].items():
        counts = ", ".join(f"{k} {v}" for k, v in r["counts"].items())
        print(
            f"  {word:8s} {r['separation']:+.3f}  (within {r['within']:.3f}, across {r['across']:.3f}; {counts})"
        )
    content = novel["words"].get("content", (0, 1))
    bank = novel["senses"].get("bank", {}).get("separation")
    bank_text = (
        "not measurable (no novel sentence uses bank in both senses)"
        if bank is None
        else f"{bank:+.3f} ({'met' if bank >= 0.15 else 'missed'})"
    )
    rate = content[0] / content[1]
    print(
        f"targets on novel sentences: content top-5 >= 60 %: {rate:.1%} ({'met' if rate >= 0.60 else 'missed'}); "
        f"bank separation >= 0.15: {bank_text}"
    )
    print(f"({time.monotonic() - started:.0f} s)")
    print(reproduce_line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
