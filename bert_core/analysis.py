"""The torch-free face of the core: a loaded model that answers with numpy dataclasses.

Dimensions: B = batch, S = sequence length, H = hidden size, L = layers, N = heads, V = vocabulary, P = positions
asked about.

Nothing here keeps per-call state on the model: every call builds its own tensors, so one `BertScopeModel`
can serve many threads (Streamlit sessions) at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from .analysis_passes import AnalysisPasses
from .checkpoints.architecture import Architecture
from .checkpoints.bert import BERT
from .checks import check_batch_tokens, head_mask_array, listed
from .config import BertConfig
from .errors import InputError, MissingHeadError
from .interpret.hidden import cosine_matrix
from .modeling.encoder import EncoderOutput
from .modeling.heads import Network
from .pieces import with_own_mask
from .results import (
    WORD_OCCURRENCES,
    Analysis,
    EmbeddingComponents,
    LabRecipe,
    MaskPrediction,
    MlmScores,
    ModelInfo,
    Vectors,
    WordVectors,
)
from .tasks import TaskPasses
from .tokenizer import Encoding, WordPieceTokenizer
from .words import clean_target, not_a_word, target_occurrences, typed_specials, word_text_spans

TextInput = str | tuple[str, str | None]


def _batch_items(texts: Sequence[TextInput]) -> list[tuple[str, str | None]]:
    """The (text, pair) of each item of a batch call; InputError for one string (iterating it would analyse
    each of its characters as a text) and for an item that is neither a text nor a (text, pair)."""
    items = []
    for index, item in enumerate(listed(texts, "texts", "use analyze for a single text")):
        if isinstance(item, (tuple, list)) and len(item) == 2:
            items.append((item[0], item[1]))
        elif isinstance(item, str):
            items.append((item, None))
        else:
            raise InputError(
                f"texts[{index}] must be a string or a (text, pair) tuple, got {type(item).__name__}"
            )
    return items


def _whole_numbers(values, name: str, what: str) -> list[int]:
    """`values` (a list, array or generator of whole numbers) as ints; InputError for one number, a string, or
    a value that is not a whole number (2.7 is not read as 2)."""
    try:
        asked = np.asarray(listed(values, name, f"give a list of {what}"))
    except ValueError as exc:  # ragged
        raise InputError(f"{name} must be a list of {what}: {exc}") from exc
    if asked.ndim != 1 or (asked.size and asked.dtype.kind not in "iu"):  # [[2]], ["5"], [2.7]
        raise InputError(f"{name} must be a list of {what}, got {values!r}")
    return [int(v) for v in asked]


def _sentence_b(text_b, asked: str) -> str:
    """Sentence B of a pair head's question: None read the text alone and still answered a probability."""
    if text_b is None:
        raise InputError(f"{asked} reads a pair: give sentence B as well as sentence A")
    if not isinstance(text_b, str):
        raise InputError(f"text_b (sentence B) must be a string, got {type(text_b).__name__}")
    return text_b


TASKS = ("classify", "tag", "qa", "choice")


def pad_encodings(
    encodings: Sequence[Encoding], pad_id: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """One (B, S) batch of int64 ids, segment ids and positions, S the longest encoding, and the (B, S)
    attention mask (1 = real token), None when no row is padded."""
    lengths = [len(e.tokens) for e in encodings]
    longest = max(lengths)
    ids = np.full((len(encodings), longest), pad_id, dtype=np.int64)
    types = np.zeros((len(encodings), longest), dtype=np.int64)
    # Padding positions take position 0: masked out, so any valid row does.
    positions = np.zeros((len(encodings), longest), dtype=np.int64)
    for row, enc in enumerate(encodings):
        ids[row, : lengths[row]] = enc.input_ids
        types[row, : lengths[row]] = enc.token_type_ids
        positions[row, : lengths[row]] = enc.position_ids
    if min(lengths) == longest:
        return ids, types, positions, None
    return ids, types, positions, (np.arange(longest)[None, :] < np.array(lengths)[:, None]).astype(np.int64)


class BertScopeModel(AnalysisPasses, TaskPasses):
    """A checkpoint ready for analysis. Build it with `bert_core.load_pretrained`.

    The analyses that need passes of their own (a layer's q/k/v, value-weighted attention, head importance,
    pseudo-log-likelihood, the logit lens) are inherited from `AnalysisPasses`."""

    def __init__(
        self,
        network: Network,
        tokenizer: WordPieceTokenizer,
        config: BertConfig,
        *,
        architecture: Architecture = BERT,
        source: str = "",
        directory: Path | None = None,
        weights_files: tuple[str, ...] = (),
        weights_dtype: str | None = None,
        device: torch.device | None = None,
        ignored_weights: tuple[str, ...] = (),
        trained_length: int | None = None,
        nsp_trained_as_sop: bool = False,
        lab_recipe: LabRecipe | None = None,
        unfinished: str | None = None,
    ) -> None:
        self.network = network.eval()
        self.tokenizer = tokenizer
        self.config = config
        self.architecture = architecture
        self.source = source
        self.directory = directory
        self.weights_files = weights_files
        self.weights_dtype = weights_dtype
        self.device = device or torch.device("cpu")
        # Fine-tuning heads (classifier, qa_outputs) the checkpoint had and BERTScope set aside.
        self.ignored_weights = ignored_weights
        # Longest pre-training input, when the checkpoint records it (see ModelInfo).
        self.trained_length = trained_length
        # A BERT the pre-training lab trained for sentence order (--pair-task sop): the checkpoint format keeps
        # its pair head where BERT's NSP head goes (cls.seq_relationship), and only its pretraining.json says
        # which task it learned. Its label 0 is "in order", as ALBERT's; it is the "sop" head here.
        self.nsp_trained_as_sop = nsp_trained_as_sop and "nsp" in network.head_names
        self.lab_recipe = lab_recipe  # how the pre-training lab trained it, where it did (see ModelInfo)
        self.unfinished = unfinished  # where a lab run saved it on the way (see ModelInfo)

    # -- facts ----------------------------------------------------------------------------------------

    @property
    def heads(self) -> tuple[str, ...]:
        """The prediction heads this checkpoint has, by name (see `bert_core.modeling.heads.HEADS`)."""
        names = self.network.head_names
        return tuple("sop" if n == "nsp" else n for n in names) if self.nsp_trained_as_sop else names

    @property
    def task(self) -> str | None:
        """The fine-tuned task head this checkpoint has ("classify", "tag", "qa", "choice"), or None."""
        return next((h for h in self.heads if h in TASKS), None)

    @property
    def has_mlm_head(self) -> bool:
        return "mlm" in self.heads

    @property
    def has_nsp_head(self) -> bool:
        return "nsp" in self.heads

    @property
    def has_pooler(self) -> bool:
        return self.network.has_pooler

    @property
    def info(self) -> ModelInfo:
        c = self.config
        return ModelInfo(
            source=self.source,
            directory=str(self.directory or ""),
            weights_files=self.weights_files,
            weights_dtype=self.weights_dtype,
            architecture=self.architecture.model_type,
            num_layers=c.num_hidden_layers,
            hidden_size=c.hidden_size,
            num_heads=c.num_attention_heads,
            intermediate_size=c.intermediate_size,
            vocab_size=c.vocab_size,
            max_positions=c.max_position_embeddings,
            num_parameters=self._parameter_count(),
            has_pooler=self.has_pooler,
            heads=self.heads,
            device=str(self.device),
            ignored_weights=self.ignored_weights,
            packed_weights=self.network.is_packed,
            trained_length=self.trained_length,
            lab_recipe=self.lab_recipe,
            unfinished=self.unfinished,
            piece_style=self.architecture.piece_style,
            architecture_name=self.architecture.name,
            embedding_size=c.embedding_size,
            lacks=self.architecture.lacks,
            layer_weight_sets=c.num_hidden_groups * c.inner_group_num
            if self.architecture.model_type == "albert"
            else None,
            task=self.task,
            labels=self.config.id2label if self.task in ("classify", "tag") else (),
            task_kind=self.config.task_kind if self.task == "classify" else None,
        )

    def _parameter_count(self) -> int:
        # Counting walks every module and parameter (milliseconds on bert-base), and `info` is read on every
        # page run; the count belongs to the network object, so it is kept with that object.
        network = self.network
        cached = self.__dict__.get("_counted")
        if cached is None or cached[0] is not network:
            cached = self.__dict__["_counted"] = (network, network.num_parameters())
        return cached[1]

    def __repr__(self) -> str:
        c = self.config
        return (
            f"BertScopeModel({self.source!r}, {self.architecture.model_type}, layers={c.num_hidden_layers}, "
            f"hidden={c.hidden_size}, heads={c.num_attention_heads}, prediction heads={list(self.heads)})"
        )

    def position_embedding_table(self) -> np.ndarray:
        """The learned position embeddings, (max_positions, E) float32 (a copy): E is H, or the factorised
        embedding width of ALBERT and ELECTRA."""
        return self._numpy(self.network.base.embeddings.position_embeddings.weight).copy()

    def segment_embedding_table(self) -> np.ndarray | None:
        """The learned segment (token type) embeddings, (type_vocab_size, E) float32 (a copy); None for an
        architecture without them (DistilBERT)."""
        table = self.network.base.embeddings.token_type_embeddings
        return None if table is None else self._numpy(table.weight).copy()

    # -- the forward pass -----------------------------------------------------------------------------

    def _head_mask_tensor(self, head_mask) -> torch.Tensor | None:
        if head_mask is None:
            return None
        expected = (self.config.num_hidden_layers, self.config.num_attention_heads)
        return torch.from_numpy(head_mask_array(head_mask, expected)).to(self.device)

    def _run(
        self,
        encodings: Sequence[Encoding],
        head_mask: torch.Tensor | None,
        *,
        keep_attentions: bool = True,
        details_layer: int | None = None,
    ) -> EncoderOutput:
        """Pad the encodings into one (B, S) batch and run the encoder without building a graph.
        head_mask: (L, N) for every row, or (B, L, N) for one mask per row."""
        ids, types, positions, mask = pad_encodings(encodings, self.tokenizer.pad_token_id or 0)
        with torch.inference_mode():
            return self.network(
                torch.from_numpy(ids).to(self.device),
                torch.from_numpy(types).to(self.device),
                torch.from_numpy(positions).to(self.device),
                attention_mask=None if mask is None else torch.from_numpy(mask).to(self.device),
                head_mask=head_mask,
                keep_attentions=keep_attentions,
                details_layer=details_layer,
            )

    @staticmethod
    def _numpy(t: torch.Tensor) -> np.ndarray:
        return t.detach().to("cpu", torch.float32).numpy()

    def _analysis(
        self,
        enc: Encoding,
        out: EncoderOutput,
        row: int,
        text: str,
        text_pair: str | None,
        head_mask: torch.Tensor | None,
    ) -> Analysis:
        s = len(enc.tokens)
        e = out.embeddings
        with torch.inference_mode():
            # A view when the batch is one text; a copy of this row otherwise.
            attentions = out.attentions[:, row, :, :s, :s].contiguous()  # (L, N, S, S)
            hidden = out.hidden_states[:, row, :s].contiguous()  # (L + 1, S, H)
        return Analysis(
            text=text,
            text_pair=text_pair,
            encoding=enc,
            embeddings=EmbeddingComponents(
                word=self._numpy(e.word[row, :s]),
                segment=None if e.segment is None else self._numpy(e.segment[row, :s]),
                position=self._numpy(e.position[row, :s]),
                summed=self._numpy(e.summed[row, :s]),
                normalized=self._numpy(e.normalized[row, :s]),
            ),
            attentions=self._numpy(attentions),
            hidden_states=self._numpy(hidden),
            pooled=None if out.pooled is None else self._numpy(out.pooled[row]),
            head_mask=None if head_mask is None else self._numpy(head_mask),
            piece_style=self.architecture.piece_style,
        )

    def encode(self, text: str, text_pair: str | None = None) -> Encoding:
        """The text (and pair) as this model reads it, in every call of this class: `[MASK]` or `<mask>`
        typed is this model's own mask token (`_with_model_mask`). The tokenizer alone (`self.tokenizer`) reads
        what was typed literally, as transformers' does: RoBERTa's for "[MASK]" is six pieces."""
        enc = self.tokenizer.encode(self._with_model_mask(text), self._with_model_mask(text_pair))
        rows = self.config.type_vocab_size
        if rows and int(enc.token_type_ids.max()) >= rows:
            # BERT's tokenizer gives sentence B segment id 1, a row this model's segment table does not have.
            raise InputError(
                f"this model has a single segment type (type_vocab_size = {rows}), so it cannot take a "
                "sentence pair: leave sentence B empty"
            )
        return enc

    def _with_model_mask(self, text: str | None) -> str | None:
        """[MASK] or <mask> as typed by the user, written as this model's own mask token, so one text means the
        same hole in every family, and the same token sequence in every call: `analyze` read RoBERTa's
        "[MASK]" as six pieces while the logit lens of the same text read one, so a position from one indexed
        another token in the other. Both spellings are six characters: offsets into the text stay right."""
        return with_own_mask(text, self.tokenizer.mask_token)

    def analyze(self, text: str, text_pair: str | None = None, *, head_mask=None) -> Analysis:
        """One forward pass over `text` (and `text_pair`): everything the views need.

        A text longer than the model reads is cut to its positions without an error (the longer sentence of a
        pair first): `result.encoding.truncated` says so, and `num_tokens_before_truncation` how long it was.
        head_mask: optional (L, N) array, 1 = keep a head, 0 = switch it off (its output is zeroed; its
        attention probabilities are still returned); a fraction between scales the head's output.
        """
        enc = self.encode(text, text_pair)
        mask = self._head_mask_tensor(head_mask)
        return self._analysis(enc, self._run([enc], mask), 0, text, text_pair, mask)

    def _encode_items(self, items: list[tuple[str, str | None]]) -> list[Encoding]:
        """Each (text, pair) encoded; InputError naming the first that cannot be ("texts[1]: text is empty")."""
        encodings = []
        for index, (a, b) in enumerate(items):
            try:
                encodings.append(self.encode(a, b))
            except InputError as exc:
                raise InputError(f"texts[{index}]: {exc}") from exc
        return encodings

    def analyze_batch(self, texts: Sequence[TextInput], *, head_mask=None) -> list[Analysis]:
        """Analyse several texts (or (text, pair) tuples) in one padded forward pass.

        Each result is what `analyze` returns for that text alone (padding is masked out), up to float
        rounding: a padded softmax row or matmul may sum in a different order, so values can differ by ~1e-6.
        """
        items = _batch_items(texts)
        if not items:
            return []
        encodings = self._encode_items(items)
        mask = self._head_mask_tensor(head_mask)
        out = self._run(encodings, mask)
        return [
            self._analysis(enc, out, row, a, b, mask)
            for row, (enc, (a, b)) in enumerate(zip(encodings, items, strict=True))
        ]

    def vectors_batch(self, texts: Sequence[TextInput], *, max_batch_tokens: int = 2048) -> list[Vectors]:
        """Hidden states (and pooled vectors) of many texts, without keeping any attention map.

        Texts are grouped by length into padded batches of at most `max_batch_tokens` (B x S) so memory stays
        bounded however many texts come in; each result is what `analyze` gives for that text alone, up to
        float rounding from the padding (~1e-6, as in `analyze_batch`).
        Raises InputError naming the first text that cannot be encoded.
        """
        max_batch_tokens = check_batch_tokens(max_batch_tokens)
        items = _batch_items(texts)
        encodings = self._encode_items(items)
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].tokens))
        results: list[Vectors | None] = [None] * len(items)
        start = 0
        while start < len(order):
            # Longest-last order: the chunk's padded width is its last member's length.
            end = start + 1
            while (
                end < len(order) and (end - start + 1) * len(encodings[order[end]].tokens) <= max_batch_tokens
            ):
                end += 1
            chunk = order[start:end]
            out = self._run([encodings[i] for i in chunk], None, keep_attentions=False)
            hidden = out.hidden_states.transpose(0, 1)  # (L + 1, B, S, H) -> (B, L + 1, S, H), a view
            for row, i in enumerate(chunk):
                enc, (a, b) = encodings[i], items[i]
                s = len(enc.tokens)
                results[i] = Vectors(
                    text=a,
                    text_pair=b,
                    encoding=enc,
                    hidden_states=self._numpy(hidden[row, :, :s]).copy(),
                    pooled=None if out.pooled is None else self._numpy(out.pooled[row]).copy(),
                )
            start = end
        return results  # type: ignore[return-value]

    # -- heads ----------------------------------------------------------------------------------------

    def word_vectors(
        self, texts: Sequence[str], word: str, *, occurrence: str = "first", max_batch_tokens: int = 2048
    ) -> WordVectors:
        """`word`'s vector in each of `texts` after every layer, and their cosines (`WordVectors`): how one
        word's meaning drifts apart from layer to layer ("bank" by a river and "bank" with money). A word in
        a text more than once gives its `occurrence` ("first", "last", or "each", a row each). `word` may be
        a phrase, found where its words stand one after another, its vector the mean of all their pieces.
        The texts go through the model as `vectors_batch` sends them (no attention maps kept)."""
        texts = listed(texts, "texts", "the word is compared across several")
        if not all(isinstance(t, str) for t in texts):
            raise InputError("texts must be a list of strings (sentence A of each; pairs are not searched)")
        if occurrence not in WORD_OCCURRENCES:
            raise InputError(f"occurrence must be one of {', '.join(WORD_OCCURRENCES)}, got {occurrence!r}")
        if not isinstance(word, str) or not clean_target(word):  # "..." would match every full stop
            raise InputError("word must be a word to look for, not punctuation alone, as a string")
        if not_a_word(word, self.tokenizer):  # "[MASK]" was read as "MASK", and found as the mask token
            raise InputError(
                f"{word.strip()[:40]!r} is a special token or a word piece, not a word: its vector is no word's "
                "meaning to compare; give a whole word of the texts"
            )
        word = clean_target(word)  # " bank. " is "bank", as the Word senses page reads a typed target
        try:
            alone = self.encode(word)
        except InputError as exc:
            raise InputError(f"the word {word!r} has nothing this model reads: {exc}") from exc
        # A phrase ("river bank", or "银行", two words to BERT) is found as its words one after another, and
        # its vector is the mean of all their pieces
        words = [word[s:e] for _, s, e in word_text_spans(alone, 0, word) if word[s:e].strip()]
        found, rows, missing = [], [], []
        for index, vectors in enumerate(self.vectors_batch(texts, max_batch_tokens=max_batch_tokens)):
            occurrences = target_occurrences(
                vectors,
                word if len(words) == 1 else words,
                self.tokenizer.normalize,
                specials=typed_specials(self.tokenizer),
            )
            if not occurrences:
                missing.append(index)
            elif occurrence != "each":
                occurrences = [occurrences[0 if occurrence == "first" else -1]]
            for pieces in occurrences:
                found.append((index, tuple(pieces)))
                rows.append(vectors.hidden_states[:, pieces].mean(axis=1))  # (L + 1, n, H) -> (L + 1, H)
        layers, hidden = self.config.num_hidden_layers + 1, self.config.hidden_size
        stacked = np.stack(rows).astype(np.float32) if rows else np.zeros((0, layers, hidden), np.float32)
        return WordVectors(
            word=word,
            texts=tuple(texts),
            found=tuple(found),
            vectors=stacked,
            cosines=np.stack([cosine_matrix(stacked[:, layer]) for layer in range(layers)]),  # (L + 1, K, K)
            missing=tuple(missing),
        )

    def _check_top_k(self, top_k: int) -> int:
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
            raise InputError(f"top_k must be a positive integer, got {top_k!r}")
        return int(min(top_k, self.config.vocab_size))

    def _predictions(
        self,
        sequence: torch.Tensor,
        positions: Sequence[int],
        top_k: int,
        labels: Sequence[int] | None = None,
    ) -> MlmScores:
        """sequence (S, H) of one text; MLM logits are computed only at `positions` (P of them)."""
        top_k = self._check_top_k(top_k)
        with torch.inference_mode():
            index = torch.as_tensor(list(positions), dtype=torch.long, device=sequence.device)
            logits = self.network.logits("mlm", sequence.index_select(0, index))  # (P, V)
            # softmax, not exp(log_softmax): the probabilities a fill-mask pipeline shows, to the last bit
            top_p, top_ids = torch.topk(torch.softmax(logits, dim=-1), top_k, dim=-1)  # (P, k)
            losses = label_probs = None
            if labels is not None:
                label_t = torch.as_tensor(list(labels), dtype=torch.long, device=sequence.device)
                label_lp = torch.log_softmax(logits, dim=-1).gather(1, label_t[:, None])[:, 0]  # (P,)
                losses = self._numpy(-label_lp)
                label_probs = self._numpy(label_lp.exp())
        probs = top_p.cpu().numpy()
        ids = top_ids.cpu().numpy()
        predictions = [
            MaskPrediction(
                position=int(pos),
                tokens=self._piece_names(ids[i].tolist()),
                token_ids=[int(x) for x in ids[i]],
                probabilities=[float(p) for p in probs[i]],
            )
            for i, pos in enumerate(positions)
        ]
        return MlmScores(predictions, losses, label_probs)

    def _piece_names(self, ids: list[int]) -> list[str]:
        """Names for predicted ids. An embedding table may have more rows than vocab.txt has pieces (padded to a
        multiple of 8, e.g. 30528 rows for 30522 pieces); those rows are still in the softmax the model
        computed, so they are kept and named by their id instead of being dropped."""
        known = self.tokenizer.vocab_size
        names = self.tokenizer.convert_ids_to_tokens([i for i in ids if i < known])
        it = iter(names)
        return [next(it) if i < known else f"[id {i}: no vocabulary piece]" for i in ids]

    def predict_masks(
        self, text: str, text_pair: str | None = None, *, top_k: int = 5, head_mask=None
    ) -> list[MaskPrediction]:
        """Top-k predictions for every [MASK] in the text, in order of appearance; head_mask (L, N) as in
        `analyze` (the predictions with those heads switched off)."""
        self.network.head("mlm")  # MissingHeadError before any work
        self._mask_id()
        enc = self.encode(text, text_pair)
        positions = self._mask_positions(enc)
        top_k = self._check_top_k(top_k)
        out = self._run([enc], self._head_mask_tensor(head_mask), keep_attentions=False)
        return self._predictions(out.last_hidden_state[0], positions, top_k).predictions

    def _mask_id(self) -> int:
        if self.tokenizer.mask_token_id is None:
            raise InputError("this model's vocabulary has no [MASK] token")
        return self.tokenizer.mask_token_id

    def _mask_positions(self, enc: Encoding) -> list[int]:
        """Where the [MASK]s are; InputError when there is none."""
        mask_id = self._mask_id()
        positions = [i for i, t in enumerate(enc.input_ids.tolist()) if t == mask_id]
        if not positions:
            # Said as a possibility: the encoding no longer knows whether the cut-off part had one.
            lost = (
                f" (the text was cut to the model's maximum length: a {self.tokenizer.mask_token} typed after "
                "that point is not seen)"
            )
            mask = self.tokenizer.mask_token
            # [MASK] is read as any family's own mask (`_with_model_mask`), so it is the one to suggest.
            typed = "[MASK]" if mask == "[MASK]" else f"[MASK] (or {mask})"
            raise InputError(
                f"no {mask} in the text: type {typed} where a word should be predicted"
                + (lost if enc.truncated else "")
            )
        return positions

    def fill_mask(self, text: str, top_k: int = 5) -> list[list[tuple[str, float]]]:
        """One list per [MASK], each [(token, probability), ...] best first; InputError where the model's
        length cut some of them off (one list fewer than masks typed would pair the rest with the wrong ones;
        `predict_masks` gives each prediction's position)."""
        enc = self.encode(text)
        if enc.truncated:  # checked before the forward pass
            full = self.tokenizer.encode(
                self._with_model_mask(text), max_length=enc.num_tokens_before_truncation
            )
            typed = int((full.input_ids == self.tokenizer.mask_token_id).sum())
            read = int((enc.input_ids == self.tokenizer.mask_token_id).sum())
            if typed > read > 0:  # none read: predict_masks says so
                raise InputError(
                    f"{typed - read} of the {typed} {self.tokenizer.mask_token} lie past the "
                    f"model's {self.tokenizer.max_length} pieces and are not read: shorten the text, or call "
                    "predict_masks, whose predictions name their positions"
                )
        return [p.as_pairs() for p in self.predict_masks(text, top_k=top_k)]

    def predict_at(
        self,
        input_ids: Sequence[int] | np.ndarray,
        positions: Sequence[int],
        *,
        token_type_ids: Sequence[int] | np.ndarray | None = None,
        labels: Sequence[int] | None = None,
        top_k: int = 5,
    ) -> MlmScores:
        """MLM predictions at `positions` of an already-built id sequence (e.g. a pre-training corruption).

        With `labels` (the original ids at those positions) the per-position cross-entropy is returned too.
        """
        self.network.head("mlm")  # MissingHeadError before any work
        try:
            given = np.asarray(input_ids)
            ids = np.array(given, dtype=np.int64)  # a copy: callers may hand us read-only arrays
        except (TypeError, ValueError) as exc:  # ragged or non-numeric
            raise InputError(f"input_ids must be a list of integers: {exc}") from exc
        if given.size and given.dtype.kind not in "iu":  # 2.7 was read as id 2
            raise InputError(f"input_ids must be integers, got {given.dtype} values")
        if ids.ndim != 1 or not 0 < len(ids) <= self.config.max_tokens:
            raise InputError(
                f"input_ids must be 1-D with 1..{self.config.max_tokens} ids (the model's positions)"
            )
        if ids.min() < 0 or ids.max() >= self.config.vocab_size:
            raise InputError("input_ids contain ids outside the vocabulary")
        positions = _whole_numbers(positions, "positions", "integer positions")
        if any(not 0 <= p < len(ids) for p in positions):
            raise InputError("a position is outside the sequence")
        if labels is not None:
            labels = _whole_numbers(labels, "labels", "token ids, one per position")
            if len(labels) != len(positions):
                raise InputError("labels and positions must have the same length")
            if any(not 0 <= x < self.config.vocab_size for x in labels):
                raise InputError(f"labels must be token ids from 0 to {self.config.vocab_size - 1}")
        try:
            given_types = np.zeros_like(ids) if token_type_ids is None else np.asarray(token_type_ids)
            types = np.array(given_types, dtype=np.int64)
        except (TypeError, ValueError) as exc:  # ragged or non-numeric
            raise InputError(f"token_type_ids must be a list of integers: {exc}") from exc
        if given_types.size and given_types.dtype.kind not in "iu":  # 0.9 was read as segment 0
            raise InputError(f"token_type_ids must be integers, got {given_types.dtype} values")
        if types.shape != ids.shape:
            raise InputError(
                f"token_type_ids must have one id per input id ({len(ids)}), got shape {types.shape}"
            )
        rows = self.config.type_vocab_size  # 0: no segment table (DistilBERT), so the ids are ignored
        if rows and (types.min() < 0 or types.max() >= rows):
            raise InputError(f"token_type_ids must be from 0 to {rows - 1}")
        if not positions:
            return MlmScores([], None if labels is None else np.zeros(0, np.float32), None)
        with torch.inference_mode():
            out = self.network(
                torch.from_numpy(ids)[None].to(self.device), torch.from_numpy(types)[None].to(self.device)
            )
        return self._predictions(out.last_hidden_state[0], positions, top_k, labels)

    def next_sentence(self, text_a: str, text_b: str) -> float:
        """Probability that `text_b` follows `text_a` (IsNext); MissingHeadError without an NSP head."""
        if self.nsp_trained_as_sop:
            raise MissingHeadError(
                "this model has no NSP head (next-sentence prediction): its pair head was pre-trained for "
                "sentence order (its pretraining.json); ask it for the sentence order instead"
            )
        self.network.head("nsp")
        enc = self.encode(text_a, _sentence_b(text_b, "next-sentence prediction"))
        out = self._run([enc], None)
        with torch.inference_mode():
            probs = torch.softmax(self.network.logits("nsp", out.pooled), dim=-1)
        return float(probs[0, 0])

    def sentence_order(self, text_a: str, text_b: str) -> float:
        """Probability that A then B is the original order (ALBERT's sentence-order prediction, SOP);
        MissingHeadError without an SOP head."""
        head = "nsp" if self.nsp_trained_as_sop else "sop"
        self.network.head(head)
        out = self._run([self.encode(text_a, _sentence_b(text_b, "sentence order"))], None)
        with torch.inference_mode():
            probs = torch.softmax(self.network.logits(head, out.pooled), dim=-1)  # (1, 2); index 0 = in order
        return float(probs[0, 0])

    def replaced_tokens(self, text: str, text_pair: str | None = None) -> list[tuple[str, float]]:
        """[(token, probability it was replaced), ...], one per token of `analyze(text, text_pair).tokens`:
        an ELECTRA discriminator's replaced-token detection (RTD); MissingHeadError without an RTD head."""
        self.network.head("rtd")
        enc = self.encode(text, text_pair)
        out = self._run([enc], None, keep_attentions=False)
        with torch.inference_mode():
            probs = torch.sigmoid(self.network.logits("rtd", out.last_hidden_state[0]))  # (S,)
        return list(zip(enc.tokens, (float(p) for p in probs), strict=True))
