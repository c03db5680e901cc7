"""Words as a reader counts them, over a tokenizer's pieces: which pieces make up each word of a sentence, the
characters each word spans in the typed text, and where a given word occurs. Pure Python over an `Encoding`'s
(or an `Analysis`'s) word ids and offsets, without torch, so the app's pages and `BertScopeModel.word_vectors`
count the same words.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Collection, Sequence

from .pieces import MASK_SPELLINGS


def _is_punctuation(text: str) -> bool:
    """Only punctuation, as BERT's tokenizer counts it: ASCII non-alphanumerics and Unicode P* categories."""
    return bool(text) and all(
        (33 <= ord(c) <= 47 or 58 <= ord(c) <= 64 or 91 <= ord(c) <= 96 or 123 <= ord(c) <= 126)
        or unicodedata.category(c).startswith("P")
        for c in text
    )


def word_keys(analysis, texts: tuple[str, str | None] | None = None) -> list[tuple[int, int] | None]:
    """Per token, the word it belongs to as the pages count words: (sentence, n), n from 0 in each sentence;
    None for an added special token.

    The tokenizer's word ids, with a piece of punctuation split off as a word of its own, as BERT's tokenizer
    and RoBERTa's already do: SentencePiece (ALBERT) splits at spaces only, so its 'bank.' would otherwise be
    one word, never found as 'bank' and masked with its full stop. Pieces made from the same typed characters
    are one word whatever their word ids: a "…" that a tokenizer reads as "..." is three words to it, and one
    to a reader. `texts`: sentences A and B as typed (default: the analysis's own), for the pieces'
    characters."""
    texts = (analysis.text, analysis.text_pair) if texts is None else texts
    keys: list[tuple[int, int] | None] = []
    count = {0: -1, 1: -1}
    previous = None  # (sentence, word id, punctuation, (start, end)) of the token before
    for seq, word, (start, end) in zip(
        analysis.sequence_ids, analysis.word_ids, analysis.offsets.tolist(), strict=True
    ):
        if seq is None or word is None:
            keys.append(None)
            previous = None
            continue
        punctuation = _is_punctuation((texts[seq] or "")[start:end])
        same_characters = (
            previous is not None and previous[0] == seq and previous[3] == (start, end) and end > start
        )
        if not same_characters and (
            previous is None or previous[:2] != (seq, word) or punctuation or previous[2]
        ):
            count[seq] += 1
        keys.append((seq, count[seq]))
        previous = (seq, word, punctuation, (start, end))
    return keys


def word_text_spans(analysis, sentence: int = 0, text: str | None = None) -> list[tuple[int, int, int]]:
    """(word number, start, end) character spans of each word (`word_keys`) of one sentence, in the typed
    text. `text`: that sentence as typed, for an Encoding (an Analysis knows its own)."""
    texts = None if text is None else ((text, None) if sentence == 0 else ("", text))
    spans: dict[int, list[int]] = {}
    for key, (start, end) in zip(word_keys(analysis, texts), analysis.offsets.tolist(), strict=True):
        if key is None or key[0] != sentence:
            continue
        span = spans.setdefault(key[1], [start, end])
        span[0] = min(span[0], start)
        span[1] = max(span[1], end)
    return [(w, s, e) for w, (s, e) in sorted(spans.items())]


def not_a_word(raw: str, tokenizer) -> bool:
    """Whether a typed target is a special token ("[MASK]", "<s>", any case, either family's mask spelling) or
    a "##" piece: stripped of its punctuation by `clean_target` it became "MASK" or "ing", another target."""
    typed = raw.strip().lower()
    # also without the punctuation clean_target takes off, but for a special's own brackets: "[MASK]." and
    # "([MASK])" were still found as the mask token
    bare = clean_target(typed, keep="[]")
    names = (tokenizer.cls_token, tokenizer.sep_token, tokenizer.mask_token, tokenizer.pad_token,
             tokenizer.unk_token, *MASK_SPELLINGS)  # fmt: skip
    specials = {n.lower() for n in names if n}
    return typed in specials or bare in specials or typed.startswith("##") or bare.startswith("##")


def clean_target(raw: str, *, keep: str = "") -> str:
    """A typed target word without the spaces and punctuation around it: ' bank. ' -> 'bank'; the marks in
    `keep` stay where they are.

    Punctuation inside the word stays ("can't"); the tokenizer decides whether that is still one word.
    """

    def stripped(c: str) -> bool:
        return c.isspace() or (unicodedata.category(c).startswith("P") and c not in keep)

    chars = list(raw.strip())
    while chars and stripped(chars[0]):
        chars.pop(0)
    while chars and stripped(chars[-1]):
        chars.pop()
    return "".join(chars)


def typed_specials(tokenizer) -> frozenset[str]:
    """The strings a model reads as special tokens where they are typed in a text: its own, and either mask
    spelling (a model reads [MASK] and <mask> alike as its own mask): `target_occurrences`' `specials`."""
    return frozenset(tokenizer.special_tokens) | set(MASK_SPELLINGS)


def target_occurrences(
    analysis,
    target: str | Sequence[str],
    normalize: Callable[[str], str],
    text: str | None = None,
    specials: Collection[str] = (),
) -> list[list[int]]:
    """Token indices of every word of sentence A whose normalised text equals `normalize(target)`, in order; for
    a phrase, `target` as the list of its words (as the tokenizer splits it: "银行" is "银", "行" to BERT), of
    every run of that many words one after another that equal them, the run's indices together.

    `analysis` is anything with `sequence_ids`, `word_ids` and `offsets` (an Analysis or an Encoding); `text`
    is sentence A as typed (default `analysis.text`). Whole words only: 'banks' is not 'bank'. Punctuation
    that a piece holds with the word (SentencePiece's "▁bank." where its vocabulary has one) is not the word's.
    `specials`: what the model reads as special tokens (`typed_specials(tokenizer)`); one typed in the text is
    no word, though its brackets taken off it read as one ("[MASK]" was counted as the word "mask").
    """
    text = analysis.text if text is None else text
    keys = word_keys(analysis, (text, None))
    # Blank words are no words of a phrase: a byte-level BPE reads a second space as a piece of its own ("a river
    # bank" typed with two spaces is "Ġriver", "Ġ", "Ġbank"), which broke the run "river bank" in two
    words = [target] if isinstance(target, str) else [w for w in target if w.strip()]

    def read(word: str) -> str:
        # a phrase's own punctuation ("can't" is can, ', t) is one of its words, compared as it stands
        return clean_target(normalize(word)) or (normalize(word).strip() if len(words) > 1 else "")

    want = [read(w) for w in words]
    if not want or not all(want):  # punctuation alone: cleaned, every mark of the text would equal it
        return []
    spans = [
        (word, None if text[start:end].strip() in specials else read(text[start:end]))
        for word, start, end in word_text_spans(analysis, 0, text)
        if text[start:end].strip()
    ]
    found, i = [], 0
    while i + len(want) <= len(spans):
        run = spans[i : i + len(want)]
        if [seen for _, seen in run] == want:
            numbers = {word for word, _ in run}
            found.append(
                [k for k, key in enumerate(keys) if key is not None and key[0] == 0 and key[1] in numbers]
            )
            i += len(want)  # runs that overlap ("a a" in "a a a") are one occurrence, the first
        else:
            i += 1
    return found
