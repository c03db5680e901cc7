"""WordPiece tokenisation for BERT, on the Rust `tokenizers` library, with results as numpy arrays.

Dimensions: S = sequence length, counting [CLS] and [SEP].

The reference for what a BERT tokenizer must produce is the original pure-Python algorithm
(google-research/bert `tokenization.py`, kept in transformers as `BertTokenizerLegacy`). `tokenizers`'
`BertNormalizer` differs from it in two places, and the normaliser built here closes both gaps so the ids
are the ones the model was trained on:

* the reference composes the text to NFC (before lower-casing) when it keeps accents; `BertNormalizer`
  does not, so a decomposed "e" + U+0301 in a cased model became [UNK] instead of "é";
* the reference lower-cases with Python's `str.lower`, which writes a word-final capital sigma as "ς";
  `BertNormalizer` lower-cases character by character and always writes "σ".

One difference remains: `tokenizers` classifies characters (punctuation, control, accent) with Unicode
tables older than Python's, so a character assigned since about Unicode 9 (e.g. the punctuation U+2E4F,
or a code point unassigned in Python's tables) can be split differently. Such characters are rare in
text and absent from BERT vocabularies, which predate them.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from .errors import InputError, ModelLoadError

logger = logging.getLogger(__name__)

TOKENIZER_FILE = "tokenizer.json"
VOCAB_FILE = "vocab.txt"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"

# BERT's limit: a longer "word" (usually a URL or a run of symbols) becomes a single [UNK].
MAX_INPUT_CHARS_PER_WORD = 100
DEFAULT_MAX_LENGTH = 512
# transformers writes int(1e30) as model_max_length when a tokenizer has no limit of its own; anything
# this large means "unset", not a real length.
_UNSET_MODEL_MAX_LENGTH = 1_000_000
CONTINUING_SUBWORD_PREFIX = "##"

_DEFAULT_SPECIAL_TOKENS = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}
# Without these three the model input cannot be built at all; [PAD] and [MASK] only serve padding and
# masked-word prediction, which a vocabulary may legitimately lack.
_REQUIRED_SPECIAL_TOKENS = ("cls_token", "sep_token", "unk_token")
# What a BERT-family tokenizer's normaliser drops, which may leave nothing to read (a lone U+0301 on an
# uncased model): said in the error, so a user can tell why a text that shows characters is "empty".
_REMOVED = "control and zero-width characters (and, where the model is uncased, accents)"

# Python's str.lower() (which the reference tokenizer uses) turns a capital sigma into the final form "ς"
# when a cased letter precedes it and none follows, skipping case-ignorable characters such as
# apostrophes and combining accents. The skip class also holds what the reference deletes *before*
# lower-casing (control and format characters, U+FFFD), so "ΑΣ\u200b" still ends in "ς". The look-behind
# must have a fixed width in Oniguruma, hence the alternatives for up to three skipped characters.
_SKIP = r"[[\p{Case_Ignorable}\p{C}\x{FFFD}]&&[^\t\n\r]]"
_SIGMA_BEHIND = "|".join(r"\p{Cased}" + _SKIP * n for n in range(4))
_FINAL_SIGMA_PATTERN = "(?<=" + _SIGMA_BEHIND + ")Σ(?!" + _SKIP + r"*\p{Cased})"


# Typographic marks and the ASCII each stands for. Phones and word processors write them ("can’t", “bank”,
# "9–5"), and a vocabulary trained on ASCII text, like the demo model's, lacks them, so a pasted "can’t" read as
# "can [UNK] t". A tokenizer built for BERTScope's own training (`from_vocab(ascii_twins=True)`) writes each
# mark its vocabulary lacks as its twin, in a normaliser that tokenizer.json carries, so transformers reads
# the same ids. A mark the vocabulary has is kept as it is.
ASCII_TWINS = {
    "\u2018": "'",  # ‘
    "\u2019": "'",  # ’
    "\u201a": "'",  # ‚
    "\u201b": "'",  # ‛
    "\u2032": "'",  # ′
    "\u201c": '"',  # “
    "\u201d": '"',  # ”
    "\u201e": '"',  # „
    "\u201f": '"',  # ‟
    "\u2033": '"',  # ″
    "\u2010": "-",  # ‐
    "\u2011": "-",  # non-breaking hyphen
    "\u2012": "-",  # ‒
    "\u2013": "-",  # –
    "\u2014": "-",  # —
    "\u2015": "-",  # ―
    "\u2212": "-",  # −
    "\u2026": "...",  # …
}


def _bert_normalizer(
    lowercase: bool,
    strip_accents: bool | None,
    handle_chinese_chars: bool,
    ascii_twins: Mapping[str, str] | None = None,
) -> Any:
    """BertNormalizer plus the steps that make it agree with the reference (see the module docstring), after
    writing each mark in `ascii_twins` (a subset of ASCII_TWINS) as its ASCII twin."""
    strip = lowercase if strip_accents is None else strip_accents
    # Plain string replacements; the normaliser keeps each output character's offset into the typed text,
    # so "…" read as "..." still points back at the one character.
    steps: list[Any] = [normalizers.Replace(mark, twin) for mark, twin in (ascii_twins or {}).items()]
    if lowercase:
        # Before BertNormalizer, which would lower-case the sigma first. A one-character replacement, so
        # offsets into the original text stay exact.
        steps.append(normalizers.Replace(Regex(_FINAL_SIGMA_PATTERN), "ς"))
    if strip:
        # Stripping decomposes (NFD) and drops the marks, so the reference's NFC cannot matter here.
        steps.append(
            normalizers.BertNormalizer(
                clean_text=True,
                handle_chinese_chars=handle_chinese_chars,
                strip_accents=True,
                lowercase=lowercase,
            )
        )
    else:
        # The reference cleans, spaces CJK, composes (NFC), then lower-cases; in that order, since
        # lower-casing first changes what composes ("Ϋ\u0301" stays two characters, "ϋ\u0301" becomes
        # "ΰ") and how marks are ordered ("İ" lower-cases to "i\u0307").
        steps.append(
            normalizers.BertNormalizer(
                clean_text=True,
                handle_chinese_chars=handle_chinese_chars,
                strip_accents=False,
                lowercase=False,
            )
        )
        steps.append(normalizers.NFC())
        if lowercase:
            steps.append(normalizers.Lowercase())
    return steps[0] if len(steps) == 1 else normalizers.Sequence(steps)


def _standard_bert_normalizer_settings(state: Any) -> dict[str, Any] | None:
    """lowercase / strip_accents / handle_chinese_chars of a standard BERT normaliser, or None.

    Accepts a plain BertNormalizer (what transformers writes) and the Sequence `_bert_normalizer` builds;
    anything else is a hand-made normaliser, respected as it stands.
    """
    if not isinstance(state, dict):
        return None
    parts = state.get("normalizers") if state.get("type") == "Sequence" else [state]
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        return None
    bert = [p for p in parts if p.get("type") == "BertNormalizer"]
    if len(bert) != 1:
        return None
    lowercase = bool(bert[0].get("lowercase", True))
    twins: dict[str, str] = {}
    for part in parts:
        kind = part.get("type")
        mark = part.get("pattern", {}).get("String") if kind == "Replace" else None
        if kind == "Lowercase":
            lowercase = True
        elif mark is not None and ASCII_TWINS.get(mark) == part.get("content") and part is parts[len(twins)]:
            twins[mark] = part["content"]  # only leading, as `_bert_normalizer` writes them
        elif not (
            part is bert[0]
            or kind == "NFC"
            or (kind == "Replace" and part.get("pattern", {}).get("Regex") == _FINAL_SIGMA_PATTERN)
        ):
            return None
    return {
        "lowercase": lowercase,
        "strip_accents": bert[0].get("strip_accents"),
        "handle_chinese_chars": bool(bert[0].get("handle_chinese_chars", True)),
        "ascii_twins": twins,
    }


@dataclass(frozen=True)
class Encoding:
    """One text (or text pair) as the model sees it. Arrays are read-only.

    `offsets` are character [start, end) spans into the token's own sentence (A or B) exactly as typed,
    (0, 0) for [CLS]/[SEP]. `special_tokens_mask` is True only for the [CLS]/[SEP] the tokenizer added; a
    "[MASK]" typed in the text belongs to its sentence (sequence id 0 or 1, mask False).
    """

    tokens: list[str]  # S pieces, with [CLS]/[SEP]
    input_ids: np.ndarray  # (S,) int64
    token_type_ids: np.ndarray  # (S,) int64, 0 = sentence A, 1 = sentence B
    position_ids: np.ndarray  # (S,) int64, from position_offset up (0; RoBERTa 2): see position_ids()
    offsets: np.ndarray  # (S, 2) int64, see above
    sequence_ids: list[int | None]  # 0 = A, 1 = B, None = added [CLS]/[SEP]
    word_ids: list[int | None]  # index of the word within its own sentence, None for added specials
    special_tokens_mask: np.ndarray  # (S,) bool
    truncated: bool  # True when tokens were dropped to fit max_length
    num_tokens_before_truncation: int  # S the full text would have had
    # Pieces of sentence A and of sentence B (0 without one) before truncation, specials not counted: which
    # sentence lost its end, as `tokens` alone cannot say once it was cut.
    pieces_before_truncation: tuple[int, int]

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class WordPieceStep:
    """One round of greedy longest-match-first WordPiece on a single word.

    `tried` lists the candidates looked up at `start`, longest first, continuations with the "##" prefix,
    ending with `matched` when one was in the vocabulary. `matched` is None when none was: the word then
    cannot be spelt from the vocabulary, and a last step `WordPieceStep(0, [], "[UNK]")` records that the
    whole word became the unknown token. A word longer than 100 characters is that single step alone.
    """

    start: int  # character index into the normalised word
    tried: list[str]
    matched: str | None


def _frozen(array: np.ndarray) -> np.ndarray:
    # Encodings are cached and shared between Streamlit sessions; make accidental in-place edits fail.
    array.flags.writeable = False
    return array


def position_ids(input_ids: np.ndarray, offset: int) -> np.ndarray:
    """Position ids (S,) int64 for input_ids (S,). From 0 without an offset (BERT's arange). With one
    (RoBERTa: pad_token_id + 1), fairseq and transformers count only the pieces that are not padding and give
    padding the pad id itself, so a <pad> typed in the text takes position offset - 1 and the pieces after it
    stay one place lower than an arange would put them."""
    if not offset:
        return np.arange(len(input_ids), dtype=np.int64)
    pad_id = offset - 1
    real = input_ids != pad_id
    return (np.cumsum(real) * real + pad_id).astype(np.int64)


class PieceTokenizer:
    """Any `tokenizers` model (WordPiece, byte-level BPE, Unigram) -> `Encoding`, never padded.

    Safe to share between threads: the backend is configured once here and `encode` only reads it. The
    backend must carry the post-processor that adds the architecture's specials ([CLS] A [SEP] B [SEP],
    <s> A </s></s> B </s>, ...): its `tokenizer.json` has one, and `WordPieceTokenizer` builds BERT's.
    """

    def __init__(
        self,
        backend: Tokenizer,
        *,
        max_length: int = DEFAULT_MAX_LENGTH,
        position_offset: int = 0,
        unk_token: str = "[UNK]",
        sep_token: str = "[SEP]",
        pad_token: str = "[PAD]",
        cls_token: str = "[CLS]",
        mask_token: str = "[MASK]",
    ) -> None:
        # Padding would add [PAD] positions the views would show as text; truncation is done per call in
        # `encode` so the flag and the full length can be reported. Neither is ever switched on again.
        backend.no_padding()
        backend.no_truncation()
        self._backend = backend

        specials = {
            "unk_token": unk_token,
            "sep_token": sep_token,
            "pad_token": pad_token,
            "cls_token": cls_token,
            "mask_token": mask_token,
        }
        ids: dict[str, int | None] = {}
        for name, token in specials.items():
            if not isinstance(token, str) or not token:
                raise ModelLoadError(f"{name} must be a non-empty string, got {token!r}")
            ids[name] = backend.token_to_id(token)
        missing = [specials[name] for name in _REQUIRED_SPECIAL_TOKENS if ids[name] is None]
        if missing:
            raise ModelLoadError(
                f"the vocabulary lacks {', '.join(missing)}, which every input of this model needs; check that "
                "the vocabulary belongs to the model (or set the token names in tokenizer_config.json)"
            )
        for name in ("pad_token", "mask_token"):
            if ids[name] is None:
                logger.info("vocabulary has no %s %r; %s_id is None", name, specials[name], name)
        if backend.post_processor is None:
            raise ModelLoadError(
                "the tokenizer has no post-processor, so it cannot add the model's special tokens around the text"
            )

        # Registered as special added tokens (matched on the raw text, before lower-casing) so "[MASK]"
        # typed by the user is the mask token, as in the reference; "[mask]" is ordinary text there too.
        registered = {t.content for t in backend.get_added_tokens_decoder().values()}
        to_add = [
            AddedToken(token, special=True, normalized=False, lstrip=False, rstrip=False, single_word=False)
            for name, token in specials.items()
            if ids[name] is not None and token not in registered
        ]
        if to_add:
            backend.add_special_tokens(to_add)

        self.unk_token: str = unk_token
        self.sep_token: str = sep_token
        self.pad_token: str = pad_token
        self.cls_token: str = cls_token
        self.mask_token: str = mask_token
        self.unk_token_id: int | None = ids["unk_token"]
        self.sep_token_id: int | None = ids["sep_token"]
        self.pad_token_id: int | None = ids["pad_token"]
        self.cls_token_id: int | None = ids["cls_token"]
        self.mask_token_id: int | None = ids["mask_token"]
        self.max_length: int = _check_max_length(max_length)
        self.position_offset = position_offset

        self._special_token_strings = frozenset(
            token for name, token in specials.items() if ids[name] is not None
        )
        # An added token matched with the space before it (RoBERTa's <mask> is lstrip) comes back as " <mask>":
        # its own name is what every view shows, as transformers does
        self._added_names = {i: t.content for i, t in backend.get_added_tokens_decoder().items()}
        self._num_added = (backend.num_special_tokens_to_add(False), backend.num_special_tokens_to_add(True))
        self._model_vocab = backend.get_vocab(with_added_tokens=False)
        # Largest id + 1 rather than the number of pieces: a repeated line in vocab.txt leaves an unused
        # id, and the embedding table still needs a row for every id up to the largest.
        self._vocab_size = max(backend.get_vocab(with_added_tokens=True).values()) + 1

    # -- encoding -------------------------------------------------------------------------------------

    def encode(self, text: str, text_pair: str | None = None, *, max_length: int | None = None) -> Encoding:
        """Tokenise `text` (and `text_pair` as sentence B) into `[CLS] A [SEP] (B [SEP])`.

        If the result is longer than `max_length` (default `self.max_length`), tokens are dropped from the
        end, from the longer sentence first (transformers' "longest_first"), and `truncated` is set.
        """
        _check_text(text, "text")
        is_pair = text_pair is not None
        if is_pair:
            _check_text(text_pair, "text_pair")
        limit = self.max_length if max_length is None else _check_max_length(max_length)
        num_added = self._num_added[is_pair]
        if limit < num_added + 1 + is_pair:
            added = f"{self.cls_token} and {self.sep_token} take {num_added} positions and each sentence needs one"
            if max_length is None:  # the model's own limit, which a page's user cannot raise
                raise InputError(
                    f"this model reads at most {limit} pieces, which leaves no room for the text: {added}"
                    + ("; type one sentence, or use a model with more positions" if is_pair else "")
                )
            raise InputError(
                f"max_length={limit} leaves no room for the text: {added}; use max_length >= "
                f"{num_added + 1 + is_pair}"
            )

        # Always encoded in full (the backend never truncates), so the full length is known and no
        # per-call state is touched: concurrent calls share one backend safely.
        enc = self._backend.encode(text, text_pair) if is_pair else self._backend.encode(text)
        sequence_ids = enc.sequence_ids
        len_a = sequence_ids.count(0)
        len_b = sequence_ids.count(1) if is_pair else 0
        if len_a == 0:
            raise InputError(f"text is empty once the tokenizer has removed {_REMOVED}")
        if is_pair and len_b == 0:
            raise InputError(f"text_pair is empty once the tokenizer has removed {_REMOVED}")

        tokens = enc.tokens
        if any(t != self._added_names.get(i, t) for t, i in zip(tokens, enc.ids, strict=True)):
            tokens = [self._added_names.get(i, t) for t, i in zip(tokens, enc.ids, strict=True)]
        word_ids = enc.word_ids
        input_ids = np.array(enc.ids, dtype=np.int64)
        if self.unk_token_id is not None and self.unk_token_id in enc.ids:
            # A Unigram tokenizer (ALBERT's) keeps what was typed as the string of a piece its vocabulary
            # lacks; the model reads the unknown token's id, so that is the piece every view names (the typed
            # text stays in `offsets`), as WordPiece's [UNK] is.
            tokens = [
                self.unk_token if i == self.unk_token_id else t for t, i in zip(tokens, enc.ids, strict=True)
            ]
        token_type_ids = np.array(enc.type_ids, dtype=np.int64)
        total = len(tokens)
        # fromiter over the flattened pairs is twice as fast as np.array on a list of tuples.
        offsets = np.fromiter(chain.from_iterable(enc.offsets), dtype=np.int64, count=2 * total).reshape(
            total, 2
        )
        # 1 only for what the post-processor added; a "[MASK]" typed in the text is 0, as in transformers.
        special = np.array(enc.special_tokens_mask, dtype=bool)
        truncated = total > limit
        if truncated:
            keep_a, keep_b = _longest_first(len_a, len_b, limit - num_added)
            keep = _kept_positions(sequence_ids, (keep_a, keep_b))
            tokens = [tokens[i] for i in keep]
            word_ids = [word_ids[i] for i in keep]
            sequence_ids = [sequence_ids[i] for i in keep]
            index = np.array(keep, dtype=np.intp)
            input_ids = input_ids[index]
            token_type_ids = token_type_ids[index]
            offsets = offsets[index]
            special = special[index]

        if not (text.isascii() and (text_pair is None or text_pair.isascii())):
            _cover_trailing_marks(offsets, sequence_ids, (text, text_pair))

        return Encoding(
            tokens=tokens,
            input_ids=_frozen(input_ids),
            token_type_ids=_frozen(token_type_ids),
            position_ids=_frozen(position_ids(input_ids, self.position_offset)),
            offsets=_frozen(offsets),
            sequence_ids=sequence_ids,
            word_ids=word_ids,
            special_tokens_mask=_frozen(special),
            truncated=truncated,
            num_tokens_before_truncation=total,
            pieces_before_truncation=(len_a, len_b),
        )

    # -- vocabulary -----------------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """Number of ids (largest id + 1): the rows the model's word-embedding table must have."""
        return self._vocab_size

    def token_to_id(self, token: str) -> int | None:
        return self._backend.token_to_id(token)

    def id_to_token(self, i: int) -> str:
        index = int(i)
        token = self._backend.id_to_token(index) if index >= 0 else None
        if token is None:
            raise InputError(
                f"token id {i} is not in the vocabulary (ids run from 0 to {self.vocab_size - 1})"
            )
        return token

    def convert_ids_to_tokens(self, ids: Iterable[int]) -> list[str]:
        return [self.id_to_token(i) for i in ids]

    def get_vocab(self) -> dict[str, int]:
        """Piece -> id, added tokens included."""
        return self._backend.get_vocab(with_added_tokens=True)

    @property
    def backend(self) -> Tokenizer:
        """A copy of the underlying `tokenizers.Tokenizer`; changing it does not affect this tokenizer."""
        return Tokenizer.from_str(self._backend.to_str())

    @property
    def special_tokens(self) -> frozenset[str]:
        """The special tokens' strings this vocabulary has ([CLS], [SEP], [MASK], ...; RoBERTa's <s>, ...)."""
        return self._special_token_strings

    # -- explaining -----------------------------------------------------------------------------------

    def normalize(self, text: str) -> str:
        """The text as the WordPiece model sees it: cleaned, CJK spaced, lower-cased/accent-stripped if set,
        and with `ascii_twins` written as ASCII."""
        _check_type(text, "text")
        normalizer = self._backend.normalizer
        return text if normalizer is None else normalizer.normalize_str(text)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size}, max_length={self.max_length})"

    @classmethod
    def from_directory(
        cls,
        directory: str | Path,
        *,
        model: str,
        special_tokens: Mapping[str, str],
        max_length: int | None = None,
        position_offset: int = 0,
    ) -> PieceTokenizer:
        """A byte-level BPE (model="BPE", RoBERTa) or SentencePiece/Unigram (model="Unigram", ALBERT) tokenizer
        from a checkpoint directory: `tokenizer.json`, or for BPE `vocab.json` + `merges.txt`.

        `special_tokens` are the architecture's defaults (cls_token, sep_token, ...); tokenizer_config.json and
        special_tokens_map.json override them, as in transformers. `max_length` is the model's limit in
        tokens; the smaller of it and the config's model_max_length is used.
        """
        directory = Path(directory)
        if not directory.is_dir():
            raise ModelLoadError(f"tokenizer directory {directory} does not exist or is not a directory")
        config_path = directory / TOKENIZER_CONFIG_FILE
        config = _read_json_object(config_path)
        limit = _combine_max_length(max_length, _options_from_config(config, config_path)["model_max_length"])
        names = dict(special_tokens)
        names.update(_special_tokens(config, config_path))
        map_path = directory / SPECIAL_TOKENS_MAP_FILE
        names.update(_special_tokens(_read_json_object(map_path), map_path))

        json_path = directory / TOKENIZER_FILE
        if json_path.is_file():
            backend = _read_tokenizer_json(json_path, expect=model)
        elif model == "BPE" and (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file():
            backend = _byte_level_bpe(directory, names)
        elif model == "Unigram" and (directory / "spiece.model").is_file():
            # Converting it needs the sentencepiece and protobuf packages, which BERTScope does not depend on.
            raise ModelLoadError(
                f"{directory} has only spiece.model; BERTScope reads SentencePiece vocabularies from "
                "tokenizer.json. Write one with transformers: AutoTokenizer.from_pretrained(DIR)"
                ".save_pretrained(DIR) (it converts spiece.model), then load again"
            )
        else:
            wanted = "tokenizer.json (or vocab.json and merges.txt)" if model == "BPE" else "tokenizer.json"
            raise ModelLoadError(f"no tokenizer in {directory}: looked for {wanted}")
        if model == "BPE":
            backend = _byte_level_options(backend, config, config_path)
        else:
            _warn_unigram_options(backend, config, json_path)
        return cls(backend, max_length=limit, position_offset=position_offset, **names)


class WordPieceTokenizer(PieceTokenizer):
    """BERT's WordPiece tokenizer, with the normaliser fixed to agree with the reference (module docstring)
    and the greedy longest-match steps behind any word (`wordpiece_steps`)."""

    def __init__(
        self,
        backend: Tokenizer,
        *,
        max_length: int = DEFAULT_MAX_LENGTH,
        unk_token: str = "[UNK]",
        sep_token: str = "[SEP]",
        pad_token: str = "[PAD]",
        cls_token: str = "[CLS]",
        mask_token: str = "[MASK]",
        vocab_lines: list[str] | None = None,
    ) -> None:
        """Wrap a configured `tokenizers.Tokenizer` with a WordPiece model (it is taken over, not copied).

        Use `from_directory` or `from_vocab` rather than calling this directly. `vocab_lines` is the
        vocabulary exactly as read (duplicates included) so `save` can write it back unchanged.
        """
        if not isinstance(backend.model, models.WordPiece):
            raise ModelLoadError(
                f"the tokenizer uses a {type(backend.model).__name__} model; BERT needs WordPiece"
            )
        if backend.post_processor is None:
            cls_id, sep_id = backend.token_to_id(cls_token), backend.token_to_id(sep_token)
            if cls_id is not None and sep_id is not None:  # else the base class names what is missing
                backend.post_processor = processors.TemplateProcessing(
                    single=f"{cls_token}:0 $A:0 {sep_token}:0",
                    pair=f"{cls_token}:0 $A:0 {sep_token}:0 $B:1 {sep_token}:1",
                    special_tokens=[(cls_token, cls_id), (sep_token, sep_id)],
                )
        super().__init__(
            backend,
            max_length=max_length,
            unk_token=unk_token,
            sep_token=sep_token,
            pad_token=pad_token,
            cls_token=cls_token,
            mask_token=mask_token,
        )
        model = backend.model
        self._prefix: str = model.continuing_subword_prefix
        self._max_chars: int = model.max_input_chars_per_word
        self._model_unk: str = model.unk_token
        self._vocab_lines = vocab_lines

        # What the normaliser does, for `save` and for display; `from_vocab` refines strip_accents=None.
        settings = _standard_bert_normalizer_settings(_state(backend.normalizer))
        if settings is None:  # a custom normaliser: describe it as well as its parts allow
            kinds = _normalizer_kinds(_state(backend.normalizer))
            settings = {
                "lowercase": "Lowercase" in kinds,
                "strip_accents": "StripAccents" in kinds,
                "handle_chinese_chars": False,
                "ascii_twins": {},
            }
        self.lowercase: bool = settings["lowercase"]
        self.strip_accents: bool | None = settings["strip_accents"]
        self.handle_chinese_chars: bool = settings["handle_chinese_chars"]
        # Typographic mark -> the ASCII it is read as (see ASCII_TWINS); empty for checkpoints from elsewhere.
        self.ascii_twins: dict[str, str] = settings["ascii_twins"]

    # -- construction ---------------------------------------------------------------------------------

    @classmethod
    def from_vocab(
        cls,
        vocab: list[str] | str | Path,
        *,
        lowercase: bool = True,
        strip_accents: bool | None = None,
        handle_chinese_chars: bool = True,
        max_length: int = DEFAULT_MAX_LENGTH,
        special_tokens: Mapping[str, str] | None = None,
        ascii_twins: bool = False,
    ) -> WordPieceTokenizer:
        """Build from a vocabulary: a list of pieces in id order, or the path of a `vocab.txt`.

        `strip_accents=None` follows `lowercase`, as in BERT. `special_tokens` may rename any of
        unk_token / sep_token / pad_token / cls_token / mask_token. `ascii_twins` reads each typographic
        mark of ASCII_TWINS that the vocabulary lacks as its ASCII twin, where the vocabulary has that; it is
        for vocabularies BERTScope trains, since a plain BERT tokenizer (and a vocab.txt) cannot say it.
        """
        if isinstance(vocab, (str, Path)):
            lines = _read_vocab_file(Path(vocab))
        else:
            lines = list(vocab)
            bad = next((t for t in lines if not isinstance(t, str)), None)
            if bad is not None:
                raise ModelLoadError(f"vocabulary entries must be strings, found {bad!r}")
            if not lines:
                raise ModelLoadError("the vocabulary is empty")
        for name, value in (
            ("lowercase", lowercase),
            ("handle_chinese_chars", handle_chinese_chars),
        ):
            if not isinstance(value, bool):
                raise ModelLoadError(f"{name} must be true or false, got {value!r}")
        if strip_accents is not None and not isinstance(strip_accents, bool):
            raise ModelLoadError(f"strip_accents must be true, false or null, got {strip_accents!r}")
        names = dict(_DEFAULT_SPECIAL_TOKENS)
        for key, value in (special_tokens or {}).items():
            if key not in names:
                raise ModelLoadError(f"unknown special token name {key!r} (known: {', '.join(names)})")
            names[key] = value

        # The same mapping as the reference's OrderedDict: a repeated piece keeps its last line number.
        token_to_id: dict[str, int] = {}
        for index, token in enumerate(lines):
            token_to_id[token] = index
        if len(token_to_id) != len(lines):
            logger.warning(
                "the vocabulary repeats %d piece(s); each keeps the id of its last line, as in BERT",
                len(lines) - len(token_to_id),
            )
        unk = names["unk_token"]
        if unk not in token_to_id:
            raise ModelLoadError(
                f"the vocabulary lacks {unk}, which every BERT input needs; check that it belongs to a BERT model"
            )

        backend = Tokenizer(
            models.WordPiece(
                token_to_id,
                unk_token=unk,
                continuing_subword_prefix=CONTINUING_SUBWORD_PREFIX,
                max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD,
            )
        )
        twins = {}
        if ascii_twins:
            twins = {
                mark: twin
                for mark, twin in ASCII_TWINS.items()
                if mark not in token_to_id and all(c in token_to_id for c in twin)
            }
        backend.normalizer = _bert_normalizer(lowercase, strip_accents, handle_chinese_chars, twins)
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        backend.decoder = decoders.WordPiece(prefix=CONTINUING_SUBWORD_PREFIX)
        tokenizer = cls(backend, max_length=max_length, vocab_lines=lines, **names)
        tokenizer.lowercase = lowercase
        tokenizer.strip_accents = strip_accents
        tokenizer.handle_chinese_chars = handle_chinese_chars
        return tokenizer

    @classmethod
    def from_directory(cls, directory: str | Path, *, max_length: int | None = None) -> WordPieceTokenizer:
        """Load from a checkpoint directory: `tokenizer.json` if present, else `vocab.txt`.

        `tokenizer_config.json`, when present, supplies do_lower_case / strip_accents /
        tokenize_chinese_chars, the special-token strings (also read from `special_tokens_map.json`,
        which wins, as in transformers) and model_max_length. A plain BertNormalizer in tokenizer.json is
        rebuilt with the reference fixes (module docstring), taking those three settings from the config
        where it gives them, as transformers does; one that also reads typographic marks as ASCII (see
        ASCII_TWINS) keeps its own settings, as transformers' generic class, which `save` names for it, does;
        any other normaliser is kept as shipped. `max_length`
        is the model's limit (max_position_embeddings); the smaller of it and model_max_length is used.
        """
        directory = Path(directory)
        if not directory.is_dir():
            raise ModelLoadError(f"tokenizer directory {directory} does not exist or is not a directory")
        config_path = directory / TOKENIZER_CONFIG_FILE
        config = _read_json_object(config_path)
        options = _options_from_config(config, config_path)
        limit = _combine_max_length(max_length, options.pop("model_max_length"))
        special_tokens = _special_tokens(config, config_path)
        map_path = directory / SPECIAL_TOKENS_MAP_FILE
        special_tokens.update(_special_tokens(_read_json_object(map_path), map_path))

        json_path = directory / TOKENIZER_FILE
        vocab_path = directory / VOCAB_FILE
        if json_path.is_file():
            backend = _read_tokenizer_json(json_path)
            settings = _standard_bert_normalizer_settings(_state(backend.normalizer))
            if settings is not None and settings["ascii_twins"]:
                # `save` names transformers' generic class for such a file, which reads it as it stands: so
                # is it read here (rebuilt with the current fixes), whatever the config's own keys say.
                # strip_accents null means "as lowercase", which the file's normaliser spells out
                effective = {**settings, **options}
                if effective.get("strip_accents") is None:
                    effective["strip_accents"] = effective["lowercase"]
                differing = sorted(k for k in options if settings[k] != effective[k])
                if differing:
                    logger.warning(
                        "%s reads typographic marks as ASCII, so it is read as it stands; ignoring %s from %s",
                        json_path,
                        ", ".join(differing),
                        TOKENIZER_CONFIG_FILE,
                    )
                options = {}
            if settings is not None:
                settings.update(options)
                backend.normalizer = _bert_normalizer(
                    settings["lowercase"],
                    settings["strip_accents"],
                    settings["handle_chinese_chars"],
                    settings["ascii_twins"],
                )
            elif options:
                logger.warning(
                    "%s has a custom normaliser; ignoring %s from %s",
                    json_path,
                    ", ".join(sorted(options)),
                    TOKENIZER_CONFIG_FILE,
                )
            return cls(backend, max_length=limit, **special_tokens)
        if vocab_path.is_file():
            return cls.from_vocab(vocab_path, max_length=limit, special_tokens=special_tokens, **options)
        raise ModelLoadError(
            f"no tokenizer vocabulary in {directory}: looked for {TOKENIZER_FILE} and {VOCAB_FILE}; "
            "copy the vocab.txt of the model's original checkpoint into that directory"
        )

    @property
    def max_input_chars_per_word(self) -> int:
        """A longer word (once normalised) is read as one unknown piece, whatever its characters."""
        return self._max_chars

    def wordpiece_steps(self, word: str) -> list[WordPieceStep]:
        """How greedy longest-match-first WordPiece splits one word (see `WordPieceStep`).

        The word is normalised first, as in `encode`; it must stay one word (no spaces or punctuation
        inside), since BERT splits those off before WordPiece runs.
        """
        _check_type(word, "word")
        stripped = word.strip()
        if stripped in self._special_token_strings:
            # Matched whole before normalisation, never split; one step says so.
            return [WordPieceStep(start=0, tried=[stripped], matched=stripped)]
        normalized = self.normalize(word)
        pre_tokenizer = self._backend.pre_tokenizer
        if pre_tokenizer is None:
            words = normalized.split()
        else:
            words = [piece for piece, _ in pre_tokenizer.pre_tokenize_str(normalized)]
        if not words:
            raise InputError(f"word {word!r} is empty once normalised; pass a word with letters or digits")
        if len(words) > 1:
            raise InputError(
                f"{word!r} is read as {len(words)} words ({' '.join(words)}): the tokenizer splits them apart "
                "before WordPiece, so each is split on its own"
            )
        chars = words[0]
        unk_step = WordPieceStep(start=0, tried=[], matched=self._model_unk)
        if len(chars) > self._max_chars:
            return [unk_step]

        vocab = self._model_vocab
        steps: list[WordPieceStep] = []
        start = 0
        while start < len(chars):
            tried: list[str] = []
            matched = None
            end = len(chars)
            while start < end:
                candidate = chars[start:end] if start == 0 else self._prefix + chars[start:end]
                tried.append(candidate)
                if candidate in vocab:
                    matched = candidate
                    break
                end -= 1
            steps.append(WordPieceStep(start=start, tried=tried, matched=matched))
            if matched is None:
                steps.append(unk_step)
                return steps
            start = end
        return steps

    # -- saving ---------------------------------------------------------------------------------------

    def save(self, directory: str | Path, *, tokenizer_json: bool = True) -> None:
        """Write vocab.txt and tokenizer_config.json, and tokenizer.json unless told not to and it has no
        `ascii_twins` (which only tokenizer.json can carry).

        `from_directory` reads either form back to a tokenizer that encodes identically; the three files
        are also the layout transformers expects.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        lines = self._vocab_lines if self._vocab_lines is not None else self._vocab_lines_from_backend()
        (directory / VOCAB_FILE).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        config = {
            # transformers' BertTokenizer rebuilds a plain BertNormalizer from the settings below, which would
            # drop the twins; its generic class reads tokenizer.json as it stands (and must be told the
            # segment ids are an input).
            "tokenizer_class": "PreTrainedTokenizerFast" if self.ascii_twins else "BertTokenizer",
            "do_lower_case": self.lowercase,
            "strip_accents": self.strip_accents,
            "tokenize_chinese_chars": self.handle_chinese_chars,
            "unk_token": self.unk_token,
            "sep_token": self.sep_token,
            "pad_token": self.pad_token,
            "cls_token": self.cls_token,
            "mask_token": self.mask_token,
            "model_max_length": self.max_length,
        }
        if self.ascii_twins:
            config["model_input_names"] = ["input_ids", "token_type_ids", "attention_mask"]
        (directory / TOKENIZER_CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        if tokenizer_json or self.ascii_twins:
            (directory / TOKENIZER_FILE).write_text(self._backend.to_str(pretty=True), encoding="utf-8")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(vocab_size={self.vocab_size}, lowercase={self.lowercase}, "
            f"max_length={self.max_length})"
        )

    def _vocab_lines_from_backend(self) -> list[str]:
        by_id = {i: t for t, i in self._model_vocab.items()}
        size = max(by_id) + 1 if by_id else 0
        if len(by_id) != size:
            # vocab.txt gives ids by line number, so a hole needs a filler that matches nothing.
            logger.warning(
                "vocabulary ids are not contiguous; filling %d gap(s) in vocab.txt", size - len(by_id)
            )
        return [by_id.get(i, f"[unused-gap-{i}]") for i in range(size)]


# -- helpers --------------------------------------------------------------------------------------------


def _check_type(value: Any, name: str) -> None:
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string, got {type(value).__name__}")


SURROGATE = re.compile("[\ud800-\udfff]")


def _check_text(value: Any, name: str) -> None:
    _check_type(value, name)
    if not value or value.isspace():
        raise InputError(f"{name} is empty; type or paste a sentence to analyse")
    # Half of a UTF-16 pair is no character: json.loads('"\\ud800"') makes one, and the tokenizers library
    # refused it with a bare TypeError ("TextInputSequence must be str"), a traceback from `bertscope finetune`.
    if found := SURROGATE.search(value):
        raise InputError(
            f"{name} holds half of a UTF-16 surrogate pair, {ascii(found.group())}, at character "
            f"{found.start()}, which is no character: the text must be valid Unicode"
        )


def _check_max_length(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"max_length must be a positive integer, got {value!r}")
    return int(value)


def _longest_first(len_a: int, len_b: int, budget: int) -> tuple[int, int]:
    """Tokens of A and B to keep: "longest_first" as google-research/bert's `_truncate_seq_pair` and
    transformers' Python tokenizers (`BertTokenizerLegacy` in transformers 5) count it.

    Tokens come off the longer sentence until both are equal, then off both in turn, B giving the odd one.
    `tokenizers`' Rust truncation, which transformers 5's default (fast) tokenizers use, gives the odd token to
    the longer sentence instead: for an over-long pair whose lengths differ by one (A 200 pieces, B 201, 64
    positions) BERTScope keeps 31 + 30 pieces where `AutoTokenizer` keeps 30 + 31, so their hidden states
    differ there. Every pair that fits, and every single text, is cut the same by both.
    """
    remove = len_a + len_b - budget
    if remove <= 0:
        return len_a, len_b
    if len_b == 0:
        return len_a - remove, 0
    first = min(abs(len_b - len_a), remove)
    second = remove - first
    if len_a > len_b:
        remove_a, remove_b = first + second // 2, second - second // 2
    else:
        remove_a, remove_b = second // 2, first + second - second // 2
    return len_a - remove_a, len_b - remove_b


def _kept_positions(sequence_ids: list[int | None], keep: tuple[int, int]) -> list[int]:
    """Positions that survive truncation: every added special, and the first keep[s] tokens of sentence s."""
    seen = [0, 0]
    kept = []
    for position, sequence in enumerate(sequence_ids):
        if sequence is None:
            kept.append(position)
        elif seen[sequence] < keep[sequence]:
            seen[sequence] += 1
            kept.append(position)
    return kept


@functools.cache
def _combining_mark_runs() -> re.Pattern[str]:
    """A regex for runs of combining marks (category M*) of the Basic Multilingual Plane.

    Built on first use (about 10 ms) from this Python's Unicode tables. BMP only, because `re` tests a
    class of BMP characters with a bitmap but scans a list of ranges once it holds any astral one, which
    made encode several times slower; the BMP has the marks of every widely written script.
    """
    ranges: list[list[int]] = []
    for c in range(0x10000):
        if unicodedata.category(chr(c)).startswith("M"):
            if ranges and ranges[-1][1] == c - 1:
                ranges[-1][1] = c
            else:
                ranges.append([c, c])
    return re.compile("[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges) + "]+")


def _cover_trailing_marks(offsets: np.ndarray, sequence_ids: list[int | None], texts: tuple) -> None:
    """Extend each piece's end over the combining marks typed right after it, in place.

    A mark that normalisation composes into its letter (NFC) or strips (accents) is aligned to no piece,
    so "Cafe\u0301" would otherwise give the piece "café" the span "Cafe", and the word shown (or passed
    back to `wordpiece_steps`) would lose its accent. Marks that are pieces themselves are left alone.
    """
    pattern = _combining_mark_runs()
    for sequence, text in enumerate(texts):
        if text is None:
            continue
        runs = [m.span() for m in pattern.finditer(text)]
        if not runs:
            continue
        positions = [i for i, s in enumerate(sequence_ids) if s == sequence]
        by_end = {int(offsets[i, 1]): k for k, i in enumerate(positions)}
        for run_start, run_end in runs:
            k = by_end.get(run_start)
            if k is None:
                continue  # the marks belong to a piece already, or follow no piece
            limit = int(offsets[positions[k + 1], 0]) if k + 1 < len(positions) else len(text)
            offsets[positions[k], 1] = max(run_start, min(run_end, limit))


def _combine_max_length(model_limit: int | None, config_limit: int | None) -> int:
    limits = [v for v in (model_limit, config_limit) if v is not None]
    return _check_max_length(min(limits)) if limits else DEFAULT_MAX_LENGTH


def _state(component: Any) -> Any:
    if component is None:
        return None
    return json.loads(component.__getstate__())


def _normalizer_kinds(state: Any) -> set[str]:
    if not isinstance(state, dict):
        return set()
    kinds = {state.get("type")}
    for part in state.get("normalizers") or []:
        kinds |= _normalizer_kinds(part)
    return kinds


def _read_vocab_file(path: Path) -> list[str]:
    try:
        # Universal newlines and rstrip("\n") exactly as the reference reads vocab.txt.
        with path.open(encoding="utf-8") as handle:
            lines = [line.rstrip("\n") for line in handle]
    except FileNotFoundError as exc:
        raise ModelLoadError(f"no vocabulary file at {path}") from exc
    except UnicodeDecodeError as exc:
        raise ModelLoadError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); is it a vocab.txt?"
        ) from exc
    except OSError as exc:
        raise ModelLoadError(f"cannot read {path}: {exc}") from exc
    if not lines:
        raise ModelLoadError(f"{path} is empty; a BERT vocab.txt has one piece per line")
    if lines[0].lstrip().startswith("{"):  # a tokenizer.json or vocab.json: read as pieces, it "lacked [UNK]"
        try:  # ("{" alone is a piece many vocabularies have: only a file that is JSON is refused)
            json.loads("".join(lines))
        except ValueError:
            pass
        else:
            raise ModelLoadError(f"{path} is JSON, not a vocab.txt (one piece per line)")
    return lines


def _byte_level_bpe(directory: Path, names: Mapping[str, str]) -> Tokenizer:
    """RoBERTa's tokenizer from vocab.json + merges.txt, set up as transformers' converter sets it up."""
    try:
        backend = Tokenizer(
            models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt"))
        )
    except Exception as exc:  # tokenizers raises a bare Exception for unreadable files
        raise ModelLoadError(f"vocab.json / merges.txt in {directory} cannot be read: {exc}") from exc
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    cls_token, sep_token = names.get("cls_token", "<s>"), names.get("sep_token", "</s>")
    cls_id, sep_id = backend.token_to_id(cls_token), backend.token_to_id(sep_token)
    if cls_id is None or sep_id is None:
        raise ModelLoadError(f"vocab.json in {directory} lacks {cls_token} or {sep_token}")
    backend.post_processor = processors.RobertaProcessing(
        (sep_token, sep_id), (cls_token, cls_id), trim_offsets=True, add_prefix_space=False
    )
    return backend


# tokenizer_config.json's tokenizer_class values (None: left to the model's type) whose transformers class builds
# its own pipeline from the config, over tokenizer.json's; PreTrainedTokenizerFast reads the file as it stands
_REBUILT_BPE = (None, "RobertaTokenizer", "RobertaTokenizerFast", "GPT2Tokenizer", "GPT2TokenizerFast")
_REBUILT_UNIGRAM = (None, "AlbertTokenizer", "AlbertTokenizerFast")


def _byte_level_options(backend: Tokenizer, config: Mapping[str, Any], path: Path) -> Tokenizer:
    """RoBERTa's tokenizer with add_prefix_space and trim_offsets as tokenizer_config.json gives them (false and
    true where it is silent), over what tokenizer.json says: transformers builds its byte-level pipeline from
    those values alone (its 4.x releases rewrote the file's to match), so "the bank" read with a leading space
    there was "t", "he" here. Every ByteLevel step is set, one inside a Sequence too."""
    if config.get("tokenizer_class") not in _REBUILT_BPE:
        # transformers' generic fast class reads tokenizer.json as it stands, these keys or none
        return backend
    given = {"add_prefix_space": False, "trim_offsets": True}
    for key in given:
        if key in config:
            if not isinstance(config[key], bool):
                raise ModelLoadError(f"{path}: {key!r} must be true or false, got {config[key]!r}")
            given[key] = config[key]
    data = json.loads(backend.to_str())

    def set_options(step: Any, keys: tuple[str, ...]) -> None:
        if not isinstance(step, dict):
            return
        if step.get("type") in ("ByteLevel", "RobertaProcessing"):
            step.update({k: given[k] for k in keys if k in step or step.get("type") == "RobertaProcessing"})
        for inner in step.get("pretokenizers", []) + step.get("processors", []):
            set_options(inner, keys)

    set_options(data.get("pre_tokenizer"), ("add_prefix_space",))
    set_options(data.get("post_processor"), ("add_prefix_space", "trim_offsets"))
    return Tokenizer.from_str(json.dumps(data))


# transformers' AlbertTokenizer defaults, which it applies where tokenizer_config.json is silent
_UNIGRAM_DEFAULTS = {"do_lower_case": True, "keep_accents": False}


def _warn_unigram_options(backend: Tokenizer, config: Mapping[str, Any], path: Path) -> None:
    """ALBERT's do_lower_case and keep_accents: tokenizer.json's normaliser is read as it stands (transformers
    4.x did; 5.x rebuilds it from the config and its defaults), so where the two disagree it is said."""
    if config.get("tokenizer_class") not in _REBUILT_UNIGRAM:
        return  # read as the file stands there too
    steps = json.loads(backend.to_str()).get("normalizer") or {}
    types = {n.get("type") for n in steps.get("normalizers", [steps]) if isinstance(n, dict)}
    does = {"do_lower_case": "Lowercase" in types, "keep_accents": "StripAccents" not in types}
    told = {k: config[k] if isinstance(config.get(k), bool) else v for k, v in _UNIGRAM_DEFAULTS.items()}
    what = {
        ("do_lower_case", True): "does not lower-case",
        ("do_lower_case", False): "lower-cases",
        ("keep_accents", True): "strips accents",
        ("keep_accents", False): "keeps accents",
    }
    differing = [
        f"{k} is {str(v).lower()} ({'in ' + TOKENIZER_CONFIG_FILE if k in config else 'its default'}) but "
        f"tokenizer.json {what[k, v]}"
        for k, v in told.items()
        if does[k] != v
    ]
    if differing:
        logger.warning(
            "%s is read as it stands, while transformers 5 builds ALBERT's normaliser from the tokenizer's "
            "settings, so their ids can differ: %s",
            path,
            "; ".join(differing),
        )


def _read_tokenizer_json(path: Path, expect: str = "WordPiece") -> Tokenizer:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"cannot read {path}: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelLoadError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from exc
    model_type = data.get("model", {}).get("type") if isinstance(data, dict) else None
    if model_type not in (expect, None):
        raise ModelLoadError(f"{path} describes a {model_type} tokenizer; this model needs {expect}")
    try:
        return Tokenizer.from_str(text)
    except Exception as exc:  # tokenizers raises a bare Exception for every malformed file
        raise ModelLoadError(f"{path} is not a valid tokenizers file: {exc}") from exc


def _read_json_object(path: Path) -> dict[str, Any]:
    """A JSON object from an optional file: {} when the file is absent."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"cannot read {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ModelLoadError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from exc
    if not isinstance(data, dict):
        raise ModelLoadError(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data


def _options_from_config(config: dict[str, Any], path: Path) -> dict[str, Any]:
    """tokenizer_config.json keys -> `from_vocab` keywords; only the keys present are returned."""
    options: dict[str, Any] = {}
    for key, option in (("do_lower_case", "lowercase"), ("tokenize_chinese_chars", "handle_chinese_chars")):
        if key in config:
            if not isinstance(config[key], bool):
                raise ModelLoadError(f"{path}: {key!r} must be true or false, got {config[key]!r}")
            options[option] = config[key]
    if "strip_accents" in config:
        if config["strip_accents"] is not None and not isinstance(config["strip_accents"], bool):
            raise ModelLoadError(
                f"{path}: 'strip_accents' must be true, false or null, got {config['strip_accents']!r}"
            )
        options["strip_accents"] = config["strip_accents"]

    model_max_length = config.get("model_max_length")
    if model_max_length is not None:
        if isinstance(model_max_length, bool) or not isinstance(model_max_length, (int, float)):
            raise ModelLoadError(f"{path}: 'model_max_length' must be a number, got {model_max_length!r}")
        if model_max_length != model_max_length or model_max_length == float("-inf"):  # NaN or -inf
            raise ModelLoadError(f"{path}: 'model_max_length' must be positive, got {model_max_length!r}")
        model_max_length = int(model_max_length) if model_max_length < _UNSET_MODEL_MAX_LENGTH else None
        if model_max_length is not None and model_max_length < 1:
            raise ModelLoadError(f"{path}: 'model_max_length' must be positive, got {model_max_length}")
    options["model_max_length"] = model_max_length
    return options


def _special_tokens(config: dict[str, Any], path: Path) -> dict[str, str]:
    """The special-token strings a tokenizer_config.json or special_tokens_map.json sets."""
    special_tokens: dict[str, str] = {}
    for key in _DEFAULT_SPECIAL_TOKENS:
        value = config.get(key)
        if isinstance(value, dict):  # transformers also writes {"content": "[UNK]", "lstrip": false, ...}
            value = value.get("content")
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            raise ModelLoadError(f"{path}: {key!r} must be a non-empty string, got {value!r}")
        special_tokens[key] = value
    return special_tokens
