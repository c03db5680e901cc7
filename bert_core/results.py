"""Torch-free result types: plain numpy dataclasses, picklable so Streamlit can cache them.

Dimensions: S = sequence length (with [CLS]/[SEP]), H = hidden size, L = layers, N = heads per layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EmbeddingComponents:
    """The input embedding, taken apart. Each array is (S, H) float32."""

    word: np.ndarray
    segment: np.ndarray
    position: np.ndarray
    summed: np.ndarray  # word + segment + position, before LayerNorm
    normalized: np.ndarray  # LayerNorm(summed): what layer 0 receives


@dataclass(frozen=True)
class Analysis:
    """Everything one forward pass computed for one text (or text pair)."""

    text: str
    text_pair: str | None
    tokens: list[str]  # S pieces, with [CLS]/[SEP]
    input_ids: np.ndarray  # (S,) int64
    token_type_ids: np.ndarray  # (S,) int64, 0 = sentence A, 1 = sentence B
    position_ids: np.ndarray  # (S,) int64
    offsets: (
        np.ndarray
    )  # (S, 2) int64 character [start, end) into the token's own sentence; (0, 0) for specials
    sequence_ids: list[int | None]  # per token: 0 = A, 1 = B, None = special token
    word_ids: list[int | None]  # per token: index of the word within its sentence, None for specials
    special_tokens_mask: np.ndarray  # (S,) bool
    truncated: bool  # True when the text was cut to the model's max positions
    num_tokens_before_truncation: int
    embeddings: EmbeddingComponents
    attentions: np.ndarray  # (L, N, S, S) float32; each row sums to 1
    hidden_states: np.ndarray  # (L + 1, S, H) float32; [0] is the embedding output
    pooled: np.ndarray | None  # (H,) float32, or None when the checkpoint has no pooler
    head_mask: np.ndarray | None = None  # (L, N) float32 as applied, or None when no head was switched off

    @property
    def num_layers(self) -> int:
        return int(self.attentions.shape[0])

    @property
    def num_heads(self) -> int:
        return int(self.attentions.shape[1])

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class Vectors:
    """One text's token vectors without attention maps: what pages comparing many sentences need."""

    text: str
    text_pair: str | None
    tokens: list[str]
    input_ids: np.ndarray  # (S,) int64
    offsets: np.ndarray  # (S, 2) as in Analysis
    sequence_ids: list[int | None]
    word_ids: list[int | None]
    special_tokens_mask: np.ndarray  # (S,) bool
    truncated: bool
    num_tokens_before_truncation: int
    hidden_states: np.ndarray  # (L + 1, S, H) float32
    pooled: np.ndarray | None  # (H,) float32, or None without a pooler


@dataclass(frozen=True)
class MaskPrediction:
    """Top-k predictions for one [MASK] position."""

    position: int  # index into the token sequence
    tokens: list[str]  # best first
    token_ids: list[int]
    probabilities: list[float]

    def as_pairs(self) -> list[tuple[str, float]]:
        return list(zip(self.tokens, self.probabilities, strict=True))


@dataclass(frozen=True)
class MlmScores:
    """MLM predictions at chosen positions of an (already corrupted) input, with the loss where labels are known."""

    predictions: list[MaskPrediction]  # one per position, in the order given
    losses: np.ndarray | None  # (P,) cross-entropy in nats of the true token at each position, or None
    label_probabilities: np.ndarray | None  # (P,) probability the model gave the true token

    @property
    def mean_loss(self) -> float | None:
        return None if self.losses is None or len(self.losses) == 0 else float(self.losses.mean())


@dataclass(frozen=True)
class ModelInfo:
    """What the sidebar shows about a loaded model."""

    source: str
    directory: str
    num_layers: int
    hidden_size: int
    num_heads: int
    intermediate_size: int
    vocab_size: int
    max_positions: int
    num_parameters: int
    has_pooler: bool
    has_mlm_head: bool
    has_nsp_head: bool
    device: str
    ignored_weights: tuple[str, ...] = ()  # fine-tuning heads present in the checkpoint but not used
    # True: Linear weights pre-packed for oneDNN (faster; within 1e-5 of transformers, not bit-identical)
    packed_weights: bool = False
    # The fused attention kernel's instruction set ("AVX-512", "AVX2") where it serves this model; "" where the
    # library path does (exact mode, GPU, an unsupported head size, no compiler: `fused.status()` says why).
    # Analyses with a head mask always take the library path.
    attention_kernel: str = ""
    # Why the kernel does or does not serve this model, in words (for a tooltip: "no C compiler found", ...).
    attention_kernel_status: str = ""
    # The longest input (pieces, with [CLS]/[SEP]) the model saw in pre-training, when its checkpoint records it
    # (BERTScope's own pretraining.json); positions past it were never trained. None: not recorded.
    trained_length: int | None = None
