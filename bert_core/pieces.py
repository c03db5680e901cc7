"""How an architecture's tokenizer marks word boundaries in its pieces, and how to show them to a person.

Torch-free, so the app can use it directly. WordPiece (BERT) marks a piece that *continues* a word with
"##"; byte-level BPE (RoBERTa) and SentencePiece (ALBERT) instead mark a piece that *starts* a word after a
space ("Ġ", "▁"). Each architecture names its style once (in its `bert_core.checkpoints` file); nothing
else in the project hard-codes a marker.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

# What a start-of-word marker is shown as: a visible space, not the marker's own glyph.
VISIBLE_SPACE = "␣"
# The families' mask tokens: "[MASK]" (BERT, DistilBERT, ALBERT, ELECTRA) and "<mask>" (RoBERTa).
MASK_SPELLINGS = ("[MASK]", "<mask>")


def with_own_mask(text: str | None, mask: str | None) -> str | None:
    """`text` with each family's mask spelling written as `mask`, the model's own, so a hole typed the way a
    user knows from one family is a hole in every family (a comparison of BERT with RoBERTa needs one text)."""
    if not isinstance(text, str) or not mask:
        return text  # None, or a wrong type that encoding refuses by name
    for spelling in MASK_SPELLINGS:
        if spelling != mask:
            text = text.replace(spelling, mask)
    return text


def _byte_of_char() -> dict[str, int]:
    """Byte-level BPE's alphabet: the character each of the 256 bytes is written as in a piece (GPT-2's
    scheme, which RoBERTa keeps). Printable Latin-1 bytes stand for themselves; the rest (controls, space,
    0x7F-0xA0, 0xAD) take the code points from 256 on, in byte order, so that the space is 'Ġ' (256 + 32).

    Written out because `tokenizers` does not expose it: `pre_tokenizers.ByteLevel.alphabet()` lists the
    characters without their bytes, and the ByteLevel decoder turns a piece holding part of a character into
    U+FFFD, which hides which bytes the piece holds."""
    own = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in own]
    return {chr(b): b for b in own} | {chr(256 + n): b for n, b in enumerate(others)}


_BYTE_OF_CHAR = _byte_of_char()
_CHAR_OF_BYTE = {b: c for c, b in _BYTE_OF_CHAR.items()}


def byte_level_spelling(text: str) -> str:
    """`text` as a byte-level vocabulary writes it: each byte of its UTF-8 as its alphabet's character ("é"
    is "Ã©", " " is "Ġ"). Looked up as typed, "é" found the piece of the lone byte 0xE9, which never stands
    for é. (`text` must be valid Unicode: a lone surrogate has no UTF-8.)"""
    return "".join(_CHAR_OF_BYTE[b] for b in text.encode("utf-8"))


# What a decoded piece's whitespace is drawn as: a chart label or a box option would show a blank (or break its
# line) where the model read a space, a line break or a tab.
_VISIBLE = {" ": VISIBLE_SPACE, "\n": "↵", "\t": "⇥", "\r": "␍"}


def draws_nothing(c: str) -> bool:
    """A character that draws nothing by itself: format characters (zero-width space, joiners, direction
    marks) and variation selectors (RoBERTa gives an emoji's U+FE0F a piece of its own)."""
    return unicodedata.category(c) == "Cf" or 0xFE00 <= ord(c) <= 0xFE0F or 0xE0100 <= ord(c) <= 0xE01EF


def visible(text: str) -> str:
    """`text` with its spaces, line breaks and tabs as visible marks, other control characters as \\x.. ; a
    text of nothing but characters that draw nothing (`draws_nothing`) as \\u....,
    where it would be a blank label (within visible text a joiner is left to do its work, as in 👩‍👧)."""
    shown = "".join(
        _VISIBLE.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 32 or 0x7F <= ord(c) <= 0x9F else c) for c in text
    )
    if shown and all(draws_nothing(c) for c in shown):
        return "".join(f"\\u{ord(c):04x}" for c in shown)
    return shown


@dataclass(frozen=True)
class PieceStyle:
    continuation_prefix: str | None = "##"  # a piece that continues the previous one (WordPiece)
    word_start_marker: str | None = None  # a piece that starts a new word after a space (BPE "Ġ", SP "▁")
    unk_token: str = "[UNK]"
    name: str = "WordPiece"  # the tokenizer family, for captions ("WordPiece pieces")
    # Byte-level BPE (RoBERTa): each character of a piece stands for one byte of the UTF-8 text, so "é" is the
    # piece "Ã©" and "大" may be split across pieces; shown decoded ("é"), a part of a character as its bytes.
    byte_level: bool = False

    @property
    def shown_as_written(self) -> bool:
        """Whether `display` shows every piece as the vocabulary writes it (WordPiece's), so a table needs no
        second column of the same strings."""
        return not self.word_start_marker and not self.byte_level

    def is_continuation(self, piece: str) -> bool:
        """True when `piece` carries on the word before it rather than starting one."""
        if self.continuation_prefix:
            return piece.startswith(self.continuation_prefix) and piece != self.continuation_prefix
        if self.word_start_marker:
            return not piece.startswith(self.word_start_marker)
        return False

    def _unmarked(self, piece: str) -> str:
        # the piece without its boundary marker, still as the vocabulary writes it
        if self.continuation_prefix and self.is_continuation(piece):
            return piece[len(self.continuation_prefix) :]
        if self.word_start_marker and piece.startswith(self.word_start_marker):
            return piece[len(self.word_start_marker) :]
        return piece

    def _bytes(self, written: str) -> bytes:
        # A character outside the alphabet (none in a byte-level vocabulary) is taken as its own UTF-8.
        return b"".join(bytes([_BYTE_OF_CHAR[c]]) if c in _BYTE_OF_CHAR else c.encode() for c in written)

    def _read(self, written: str) -> str:
        """Text as a person reads it: byte-level pieces decoded, bytes that are not a whole UTF-8 character
        written as \\xe5 (a character split across pieces shows its bytes in each)."""
        if not self.byte_level:
            return written
        return self._bytes(written).decode("utf-8", errors="backslashreplace")

    def partial(self, piece: str) -> bool:
        """True when a byte-level piece holds part of a character (its bytes are not whole UTF-8)."""
        if not self.byte_level:
            return False
        try:
            self._bytes(self._unmarked(piece)).decode("utf-8")
        except UnicodeDecodeError:
            return True
        return False

    def strip(self, piece: str) -> str:
        """The piece's own characters, without its boundary marker: '##ing' -> 'ing', 'Ġbank' -> 'bank',
        RoBERTa's 'ĠcafÃ©' -> 'café'."""
        return self._read(self._unmarked(piece))

    def display(self, piece: str) -> str:
        """The piece as a person should read it: the marker kept where it is plain text ('##ing'), a start
        marker shown as a visible space ('Ġbank' -> '␣bank'), byte-level pieces decoded ('ĠcafÃ©' -> '␣café'),
        and the spaces, line breaks and tabs they may hold drawn visibly ('Ċ' -> '↵'), not as blanks."""
        if self.word_start_marker and piece.startswith(self.word_start_marker):
            return VISIBLE_SPACE + visible(self._read(piece[len(self.word_start_marker) :]))
        return visible(self._read(piece)) if self.byte_level else piece

    def word(self, pieces: Sequence[str]) -> str:
        """The word a run of pieces spells: ('play', '##ing') -> 'playing', ('Ġplay', 'ing') -> 'playing';
        byte-level pieces are joined before they are decoded, so a character split across them is whole."""
        return self._read("".join(self._unmarked(p) for p in pieces))

    @property
    def marker_help(self) -> str:
        """One sentence for a caption on what the marker means."""
        if self.continuation_prefix:
            return f"A piece starting with {self.continuation_prefix} continues the word before it."
        if self.word_start_marker:
            # The pages count a word as bert_core.words does: punctuation is a word of its own in every family
            # (SentencePiece's own "bank." is one word), and RoBERTa writes no Ġ on the text's first word, as
            # nothing stands before it. "A piece without it continues the word" was false of both.
            if self.byte_level:
                # RoBERTa's pre-tokenizer also starts a word, without Ġ, at a text's start, after punctuation
                # ("(river" is "Ġ(", "r"…) and at digits after letters ("river2" is "Ġriver", "2")
                told = (
                    f"A piece starting with {self.word_start_marker} (shown as {VISIBLE_SPACE}) begins a word "
                    "after a space. Words with no space before them start without it: the text's first word, "
                    "punctuation, a word right after punctuation, digits after letters; any other piece without "
                    "it continues the word before it."
                )
            else:
                told = (
                    f"A piece starting with {self.word_start_marker} (shown as {VISIBLE_SPACE}) begins a word "
                    "after a space; a piece without it continues the word before it, except punctuation, which "
                    "these pages count as words of their own."
                )
            if self.byte_level:
                told += (
                    " Pieces are made of bytes, so any text can be spelt: a character the vocabulary lacks is "
                    "split into pieces holding its UTF-8 bytes, each shown as \\x.. (ж as \\xd0 and "
                    "\\xb6, say)."
                )
            return told
        return "Pieces carry no word-boundary marker."


WORDPIECE = PieceStyle()
