"""Train a WordPiece vocabulary on a corpus with the `tokenizers` library's trainer.

The text is normalised and split into words exactly as `WordPieceTokenizer` will do it at inference time
(BERT's lower-casing, accent stripping and punctuation splitting), so every piece the trainer learns can
actually be produced when the model is used.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from ..tokenizer import CONTINUING_SUBWORD_PREFIX, WordPieceTokenizer

log = logging.getLogger(__name__)

# The order fixes the ids: [PAD] = 0 is what BertConfig.pad_token_id expects by default.
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# Every printable ASCII character is a piece even when the corpus never writes it, and every letter and digit
# a word-continuing piece too ("##7"): a user's "#", "~" or "1999" then reads as itself (untrained, maybe, but
# itself) rather than turning its whole word into [UNK]. Punctuation needs no "##" form: the pre-tokenizer
# makes each mark a word of its own.
ASCII_PRINTABLE = tuple(chr(c) for c in range(33, 127))


def check_vocab_size(vocab_size: int) -> None:
    """ValueError for a vocabulary too small to hold a piece beside the special tokens."""
    if vocab_size < len(SPECIAL_TOKENS) + 1:
        raise ValueError(
            f"vocab_size must be more than {len(SPECIAL_TOKENS)} (the special tokens), got {vocab_size}"
        )


def train_vocabulary(
    sentences: Iterable[str],
    *,
    vocab_size: int = 4000,
    min_frequency: int = 2,
    lowercase: bool = True,
) -> list[str]:
    """Learn about `vocab_size` pieces: specials first, then every character seen or printable ASCII, then
    merges, then the "##" form of each ASCII letter and digit the merges left out.

    Returns the vocabulary in id order, ready for `WordPieceTokenizer.from_vocab` or a vocab.txt. It may be
    smaller than `vocab_size` when the corpus has fewer distinct words than that.
    """
    check_vocab_size(vocab_size)
    alphabet = sorted({c.lower() if lowercase else c for c in ASCII_PRINTABLE})
    backend = Tokenizer(
        models.WordPiece(unk_token="[UNK]", continuing_subword_prefix=CONTINUING_SUBWORD_PREFIX)
    )
    backend.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=lowercase, lowercase=lowercase
    )
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=alphabet,
        continuing_subword_prefix=CONTINUING_SUBWORD_PREFIX,
        show_progress=False,
    )
    backend.train_from_iterator(sentences, trainer=trainer)
    by_id = {i: piece for piece, i in backend.get_vocab(with_added_tokens=True).items()}
    vocab = [by_id[i] for i in range(len(by_id))]
    if tuple(vocab[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:  # the trainer puts them first; make sure
        rest = [p for p in vocab if p not in SPECIAL_TOKENS]
        vocab = list(SPECIAL_TOKENS) + rest
    # The trainer has no option for these; appended after its merges, they may take the vocabulary up to 62
    # pieces past `vocab_size`.
    known = set(vocab)
    vocab += [p for p in (CONTINUING_SUBWORD_PREFIX + c for c in alphabet if c.isalnum()) if p not in known]
    if len(vocab) > vocab_size:  # a vocab_size of 10 gave 109 pieces, unsaid
        log.info(
            "trained a WordPiece vocabulary of %d pieces, more than the %d asked: every character of the corpus "
            "and of printable ASCII has a piece, and each ASCII letter and digit its '##' form too",
            len(vocab),
            vocab_size,
        )
    else:
        log.info("trained a WordPiece vocabulary of %d pieces", len(vocab))
    return vocab


def train_tokenizer(
    sentences: Iterable[str],
    *,
    vocab_size: int = 4000,
    min_frequency: int = 2,
    lowercase: bool = True,
    max_length: int = 512,
) -> WordPieceTokenizer:
    """`train_vocabulary`, wrapped in the tokenizer the rest of BERTScope uses, which reads the typographic marks
    the vocabulary lacks as their ASCII twins (`tokenizer.ASCII_TWINS`)."""
    vocab = train_vocabulary(
        sentences, vocab_size=vocab_size, min_frequency=min_frequency, lowercase=lowercase
    )
    return WordPieceTokenizer.from_vocab(vocab, lowercase=lowercase, max_length=max_length, ascii_twins=True)
