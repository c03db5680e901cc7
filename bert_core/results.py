"""Torch-free result types: plain numpy dataclasses, picklable so Streamlit can cache them.

Dimensions: S = sequence length (with the added specials), H = hidden size, E = embedding size (H for BERT),
L = layers, N = heads per layer, D = head size (H / N), K = top-k predictions.

`Analysis` and `Vectors` carry the `Encoding` they were computed from instead of copies of its fields; its
fields read through the result as well (`r.tokens` is `r.encoding.tokens`), so a field added to `Encoding`
is added once.
"""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .pieces import WORDPIECE, PieceStyle
from .tokenizer import Encoding


class _ReadsEncoding:
    """Every field of `self.encoding` as a read-only attribute of the result."""

    encoding: Encoding

    def __len__(self) -> int:
        return len(self.encoding)


for _field in dataclasses.fields(Encoding):
    setattr(_ReadsEncoding, _field.name, property(operator.attrgetter(f"encoding.{_field.name}")))


@dataclass(frozen=True)
class EmbeddingComponents:
    """The input embedding, taken apart. Each array is (S, E) float32."""

    word: np.ndarray
    segment: np.ndarray | None  # None where the architecture has no segment (token type) embeddings
    position: np.ndarray
    summed: np.ndarray  # word + segment + position, before LayerNorm
    normalized: np.ndarray  # LayerNorm(summed): what layer 0 receives (before any projection to H)


@dataclass(frozen=True)
class Analysis(_ReadsEncoding):
    """Everything one forward pass computed for one text (or text pair)."""

    text: str
    text_pair: str | None
    encoding: Encoding  # tokens, ids, segments, positions, offsets, word ids, specials, truncation
    embeddings: EmbeddingComponents
    attentions: np.ndarray  # (L, N, S, S) float32; each row sums to 1
    hidden_states: np.ndarray  # (L + 1, S, H) float32; [0] is what the first layer receives
    pooled: np.ndarray | None  # (H,) float32, or None when the checkpoint has no pooler
    head_mask: np.ndarray | None = None  # (L, N) float32 as applied, or None when no head was switched off
    # how the model's tokenizer marks pieces, so that analyses of the result (head_roles' punctuation) read
    # 'Ġ(' as RoBERTa does without being told
    piece_style: PieceStyle = WORDPIECE

    @property
    def num_layers(self) -> int:
        return int(self.attentions.shape[0])

    @property
    def num_heads(self) -> int:
        return int(self.attentions.shape[1])


@dataclass(frozen=True)
class Vectors(_ReadsEncoding):
    """One text's token vectors without attention maps: what pages comparing many sentences need."""

    text: str
    text_pair: str | None
    encoding: Encoding
    hidden_states: np.ndarray  # (L + 1, S, H) float32
    pooled: np.ndarray | None  # (H,) float32, or None without a pooler


WORD_OCCURRENCES = ("first", "last", "each")  # which occurrences of a word in a text `word_vectors` keeps


@dataclass(frozen=True)
class WordVectors:
    """One word's vector in each text that has it, after every layer: the mean of the hidden states of the
    pieces the word was read as, there (Ethayarajh, 2019, compares such vectors of one word across contexts;
    the app's Word senses page draws them). K = the occurrences kept, one row each.

    Whole words only, as the app counts them (`bert_core.words`): "banks" is not "bank"; case and accents count
    as the tokenizer's normaliser says (an uncased model's "Bank" is "bank"). A phrase ("river bank") is found
    where its words stand one after another, its vector the mean of all their pieces."""

    word: str
    texts: tuple[str, ...]
    # per row of `vectors`: (the text's index in `texts`, the word's token indices there)
    found: tuple[tuple[int, tuple[int, ...]], ...]
    vectors: np.ndarray  # (K, L + 1, H) float32; [:, 0] is what the first layer receives
    cosines: np.ndarray  # (L + 1, K, K) float32: the rows' cosine similarities at each layer
    # the indices of the texts without the word in the pieces the model read (a cut text's tail too)
    missing: tuple[int, ...]


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
class LabRecipe:
    """How BERTScope's pre-training lab trained a checkpoint, as its pretraining.json records it: the share of
    pieces chosen, of those the shares replaced by the mask and by a random piece, the masking ("dynamic":
    drawn afresh each time, "static": fixed copies) and the sentence-pair task ("nsp", "sop" or "none")."""

    mlm_probability: float
    mask_fraction: float
    random_fraction: float
    masking: str
    pair_task: str


@dataclass(frozen=True)
class ModelInfo:
    """What the sidebar shows about a loaded model."""

    source: str
    directory: str
    architecture: str  # the checkpoint's model_type: "bert", "roberta", "distilbert", "albert", "electra"
    num_layers: int
    hidden_size: int
    num_heads: int
    intermediate_size: int
    vocab_size: int
    max_positions: int
    num_parameters: int
    has_pooler: bool
    heads: tuple[str, ...]  # the prediction heads the checkpoint has, by name ("mlm", "nsp"), in table order
    device: str
    ignored_weights: tuple[str, ...] = ()  # fine-tuning heads present in the checkpoint but not used
    # True: Linear weights pre-packed for oneDNN (faster; within 1e-5 of transformers, not bit-identical)
    packed_weights: bool = False
    # The longest input (pieces, with specials) the model saw in pre-training, when its checkpoint records it
    # (BERTScope's own pretraining.json); positions past it were never trained. None: not recorded.
    trained_length: int | None = None
    # How the pre-training lab trained it, for a checkpoint the lab wrote (its pretraining.json); else None.
    lab_recipe: LabRecipe | None = None
    # The files the weights were read from: "model.safetensors", its shards, or "pytorch_model.bin" where a
    # checkpoint has no safetensors; () for a model built in memory
    weights_files: tuple[str, ...] = ()
    # The floating-point type(s) the weights were stored in where not float32 ("float16"): computed in float32
    weights_dtype: str | None = None
    # Where a lab run saved it on the way, stopped or still going ("fine-tuning epoch 1 of 3", "pre-training
    # step 107 of 400"); None for a finished run, or a checkpoint no lab wrote
    unfinished: str | None = None
    piece_style: PieceStyle = field(default=WORDPIECE)
    architecture_name: str = "BERT"  # for people: "RoBERTa", ...
    embedding_size: int | None = (
        None  # E where the embeddings are narrower than H (ALBERT, ELECTRA), else None
    )
    lacks: tuple[str, ...] = ()  # what the architecture does without, compared with BERT ("pooler", ...)
    # ALBERT: how many distinct layers' weights its num_layers layers run (num_hidden_groups x inner_group_num,
    # 1 in every released ALBERT); None where each layer has weights of its own.
    layer_weight_sets: int | None = None
    # The fine-tuned task head, if any: "classify", "tag", "qa" or "choice"; its label names by class index
    # (classify, tag), and what a classifier's outputs mean ("single_label_classification", ...).
    task: str | None = None
    labels: tuple[str, ...] = ()
    task_kind: str | None = None

    @property
    def has_mlm_head(self) -> bool:
        return "mlm" in self.heads

    @property
    def has_nsp_head(self) -> bool:
        return "nsp" in self.heads


@dataclass(frozen=True)
class AttentionDetails(_ReadsEncoding):
    """One layer's attention taken apart, for the query/key ("neuron") view. Arrays are float32.

    probabilities = softmax(scores) row by row (a single text has no padding to mask), and equals
    `Analysis.attentions[layer]`.
    """

    text: str
    text_pair: str | None
    encoding: Encoding
    layer: int  # 0-based
    queries: np.ndarray  # (N, S, D)
    keys: np.ndarray  # (N, S, D)
    values: np.ndarray  # (N, S, D)
    scores: np.ndarray  # (N, S, S) q . k / sqrt(D), before the softmax: [h, i, j] query i against key j
    probabilities: np.ndarray  # (N, S, S)


@dataclass(frozen=True)
class ValueWeightedAttention(_ReadsEncoding):
    """Attention weighted by the size of what each token contributes (Kobayashi et al., 2020). float64.

    f_h(x_j) is token j's vector through head h's value projection and its slice of the output projection.
    """

    text: str
    text_pair: str | None
    encoding: Encoding
    attentions: np.ndarray  # (L, N, S, S) the raw weights alpha, as in Analysis
    per_head: np.ndarray  # (L, N, S, S) ||alpha^h_ij f_h(x_j)||
    summed: np.ndarray  # (L, S, S) ||sum_h alpha^h_ij f_h(x_j)||: the whole layer's attention, by size
    value_norms: np.ndarray  # (L, N, S) ||f_h(x_j)||


@dataclass(frozen=True)
class HeadImportance(_ReadsEncoding):
    """How much one masked-word prediction depends on each head: the drop in the log-probability of `token`
    at `position` when that head alone is switched off (on top of any `base_head_mask`)."""

    text: str
    text_pair: str | None
    encoding: Encoding
    position: int
    token: str
    token_id: int
    log_probability: float  # natural log, with every head of the base mask on
    drop: np.ndarray  # (L, N) float64: log_probability minus the log-probability with that head off
    base_head_mask: np.ndarray | None = None  # (L, N) float32 the ablations start from; None = all heads on


# How pseudo-log-likelihood hides a piece: "piece" masks it alone (Salazar et al., 2020); "word_l2r" also masks
# the pieces after it in its word (Kauf & Ivanova, 2023), since with them visible a word split into pieces
# ("snooz ##ing") is all but given away and scores far higher than a one-piece word of the same rarity.
PLL_SCORINGS = ("piece", "word_l2r")


class PseudoLogLikelihood(NamedTuple):
    """Salazar et al. (2020): each non-special piece masked in turn and scored by the MLM head, natural log
    (a mask token typed into the text is no piece of the sentence, and is not scored); with the "word_l2r"
    scoring, the later pieces of the scored piece's word are masked with it.

    Unpacks as `(total, pieces)`.
    """

    total: float  # sum of the pieces' log-probabilities; NaN where no piece was scored (none is the text's)
    pieces: list[tuple[str, float]]  # (piece, log-probability of the piece where it was masked), in order


@dataclass(frozen=True)
class LogitLens(_ReadsEncoding):
    """The MLM head applied to one position's vector after every layer (0 = the embedding output .. L)."""

    text: str
    text_pair: str | None
    encoding: Encoding
    position: int
    top_tokens: list[list[str]]  # L + 1 lists of K pieces, best first
    top_token_ids: np.ndarray  # (L + 1, K) int64
    top_probabilities: np.ndarray  # (L + 1, K) float32
    final_token: str  # the last layer's top prediction
    final_token_id: int
    # (L + 1,) int64: the final token's rank at each layer, 1 = that layer's top prediction (1 at layer L);
    # ties count in its favour, so the rank is 1 + the number of pieces with a strictly higher probability.
    final_token_rank: np.ndarray
    final_token_probability: np.ndarray  # (L + 1,) float32
    # The pieces asked for with follow= (F of them, each once), ranked and scored at every layer as the final
    # token is: (F,) int64 ids, (F, L + 1) int64 ranks and float32 probabilities.
    followed_tokens: list[str] = field(default_factory=list)
    followed_token_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    followed_ranks: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    followed_probabilities: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))


@dataclass(frozen=True)
class Entity:
    """A span a tagger labelled, merged from its words' B-/I- (or BIOES) labels."""

    label: str  # the entity type: "PER", "LOC", ...
    text: str  # the span as typed
    start: int  # character offsets into the sentence it was typed in
    end: int
    score: float  # mean probability of its words' labels
    sentence: int = 0  # 0 = text, 1 = text_pair


@dataclass(frozen=True)
class Attribution(_ReadsEncoding):
    """How much each token moved one logit (`target`): `scores` (S,) float32, one per token of the encoding.

    For integrated gradients the scores add up to score - baseline_score, up to `completeness_gap` (the
    integral's discretisation error: small at 50 steps). Gradient x input has no baseline, so no gap either:
    both are None for it (a gap against the pad baseline of 1.65 read as a fault of that method)."""

    text: str
    text_pair: str | None
    encoding: Encoding
    scores: np.ndarray
    target: str  # the logit explained, in words ("class POS", "answer start (token 7)", ...)
    method: str  # "integrated_gradients" or "gradient_x_input"
    score: float  # the logit for the input as typed
    # integrated gradients: the logit with every non-special token replaced by the pad token; else None
    baseline_score: float | None
    completeness_gap: (
        float | None
    )  # integrated gradients: |sum(scores) - (score - baseline_score)|; else None
