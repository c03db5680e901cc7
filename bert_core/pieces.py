"""How an architecture's tokenizer marks word boundaries in its pieces, and how to show them to a person.

Torch-free, so the app can use it directly. WordPiece (BERT) marks a piece that *continues* a word with
"##"; byte-level BPE (RoBERTa) and SentencePiece (ALBERT) instead mark a piece that *starts* a word after a
space ("Ġ", "▁"). Each architecture names its style once (in its `bert_core.checkpoints` file); nothing
else in the project hard-codes a marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# What a start-of-word marker is shown as: a visible space, not the marker's own glyph.
VISIBLE_SPACE = "␣"


@dataclass(frozen=True)
class PieceStyle:
    continuation_prefix: str | None = "##"  # a piece that continues the previous one (WordPiece)
    word_start_marker: str | None = None  # a piece that starts a new word after a space (BPE "Ġ", SP "▁")
    unk_token: str = "[UNK]"
    name: str = "WordPiece"  # the tokenizer family, for captions ("WordPiece pieces")

    def is_continuation(self, piece: str) -> bool:
        """True when `piece` carries on the word before it rather than starting one."""
        if self.continuation_prefix:
            return piece.startswith(self.continuation_prefix) and piece != self.continuation_prefix
        if self.word_start_marker:
            return not piece.startswith(self.word_start_marker)
        return False

    def strip(self, piece: str) -> str:
        """The piece's own characters, without its boundary marker: '##ing' -> 'ing', 'Ġbank' -> 'bank'."""
        if self.continuation_prefix and self.is_continuation(piece):
            return piece[len(self.continuation_prefix) :]
        if self.word_start_marker and piece.startswith(self.word_start_marker):
            return piece[len(self.word_start_marker) :]
        return piece

    def display(self, piece: str) -> str:
        """The piece as a person should read it: the marker kept where it is plain text ('##ing'), a start
        marker shown as a visible space ('Ġbank' -> '␣bank')."""
        if self.word_start_marker and piece.startswith(self.word_start_marker):
            return VISIBLE_SPACE + piece[len(self.word_start_marker) :]
        return piece

    def word(self, pieces: Sequence[str]) -> str:
        """The word a run of pieces spells: ('play', '##ing') -> 'playing', ('Ġplay', 'ing') -> 'playing'."""
        return "".join(self.strip(p) for p in pieces)

    @property
    def marker_help(self) -> str:
        """One sentence for a caption on what the marker means."""
        if self.continuation_prefix:
            return f"A piece starting with {self.continuation_prefix} continues the word before it."
        if self.word_start_marker:
            return (
                f"A piece starting with {self.word_start_marker} (shown as {VISIBLE_SPACE}) begins a new word "
                "after a space; a piece without it continues the word before it."
            )
        return "Pieces carry no word-boundary marker."


WORDPIECE = PieceStyle()
