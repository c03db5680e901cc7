"""What fine-tuned heads predict, and why: classify, tag (and entities), answer, choose, attribute.

`BertScopeModel` inherits these methods; they use its `encode`, `_run`, `network` and `tokenizer`.

Dimensions: B = batch (windows, choices or interpolation steps), S = sequence length, H = hidden size,
E = embedding size, C = classes, K = interpolation steps.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from .checks import check_whole, listed
from .errors import InputError, MissingHeadError
from .modeling.encoder import EncoderOutput
from .results import Attribution, Entity
from .tokenizer import Encoding, _frozen, position_ids

ATTRIBUTION_METHODS = ("integrated_gradients", "gradient_x_input")
MAX_ANSWER_TOKENS = 30  # the longest answer `answer` gives by default, in pieces
QA_STRIDE = 128  # pieces a long passage's neighbouring windows share (at most half a window; see _qa_windows)
# Windows run through the encoder at once: a long question leaves a window little of the passage, and a 2,000-
# character question beside a 5,000-character passage made 287 windows of 512 positions, every layer's hidden
# states of all of them held at once (~6 GB for bert-base) where a batch of them at a time holds ~0.3 GB.
TASK_BATCH = 16


class QuestionTooLong(InputError):
    """A question that leaves no room for the passage: fine-tuning's --skip-unreachable skips such a row as it
    skips an answer out of reach, and only such a row (an invalid text is still an error naming its line)."""


class TaskPasses:
    """Mixed into `BertScopeModel` (see there for the attributes these methods use)."""

    def _head_input(self, name: str, out: EncoderOutput) -> Tensor:
        """What head `name` reads from a forward's output: pooled (B, H), tokens (B, S, H) or the sequence."""
        reads = self.network.head_table[name].reads
        return out.pooled if reads == "pooled" else out.last_hidden_state

    def _task_logits(self, name: str, encodings: Sequence[Encoding]) -> Tensor:
        """Head `name`'s logits for a padded batch: (B, C) for sentence heads, (B, S, C) for token heads."""
        self.network.head(name)  # MissingHeadError before any work
        parts = []
        for start in range(0, len(encodings), TASK_BATCH):
            out = self._run(list(encodings[start : start + TASK_BATCH]), None, keep_attentions=False)
            with torch.inference_mode():
                parts.append(self.network.logits(name, self._head_input(name, out)))
        if len(parts) == 1 or parts[0].dim() == 2:
            return torch.cat(parts)
        # token heads: each batch padded to its own longest, (b, S_b, C) -> (B, S, C), the padding never read
        longest = max(part.shape[1] for part in parts)
        return torch.cat(
            [torch.nn.functional.pad(part, (0, 0, 0, longest - part.shape[1])) for part in parts]
        )

    # -- sentence classification ----------------------------------------------------------------------------

    def classify(self, text: str, text_pair: str | None = None) -> list[tuple[str, float]]:
        """[(label, probability), ...] best first: softmax for a single-label classifier, a sigmoid per label
        for a multi-label one; for regression [(label, value), ...] in label order."""
        logits = self._task_logits("classify", [self.encode(text, text_pair)])[0]  # (C,)
        labels = self._label_names(logits.shape[-1])
        kind = self.config.task_kind
        if kind == "regression":
            return [(label, float(v)) for label, v in zip(labels, logits.tolist(), strict=True)]
        probs = torch.sigmoid(logits) if kind == "multi_label_classification" else torch.softmax(logits, -1)
        return sorted(zip(labels, probs.tolist(), strict=True), key=lambda pair: -pair[1])

    def _label_names(self, count: int) -> list[str]:
        names = self.config.id2label
        return list(names) if len(names) == count else [f"LABEL_{i}" for i in range(count)]

    # -- token classification -------------------------------------------------------------------------------

    def tag(self, text: str, text_pair: str | None = None) -> list[tuple[str, str, float]]:
        """[(token, label, probability), ...], one per token of `analyze(text, text_pair).tokens`."""
        enc = self.encode(text, text_pair)
        probs = torch.softmax(self._task_logits("tag", [enc])[0], -1)  # (S, C)
        best, index = probs.max(-1)
        labels = self._label_names(probs.shape[-1])
        return [
            (token, labels[i], float(p))
            for token, i, p in zip(enc.tokens, index.tolist(), best.tolist(), strict=True)
        ]

    def entity_types(self) -> list[str]:
        """The entity types the tagger's labels name ("PERSON" for B-PERSON and I-PERSON), sorted; "O" is none."""
        labels = self._label_names(self.config.num_labels)
        return sorted({kind for kind in map(entity_type, labels) if kind is not None})

    def entities(self, text: str, text_pair: str | None = None) -> list[Entity]:
        """Word-level entities merged from the tagger's B-/I- (BIOES, BILOU, or plain type) labels, each with its
        character span in the sentence it was typed in. A word is a run of characters between spaces, and
        takes its first piece's label, whatever the tokenizer's pre-splitting makes of "U.S." or "can't": so
        the fine-tuning lab trains and scores a tagger (transformers' run_ner example labels a word's first
        piece alone). Transformers' token-classification pipeline (aggregation "first") differs for WordPiece
        tokenizers: it takes each piece the pre-splitting cut at punctuation as a word of its own, so where the
        tagger labels "'s" O, "Tom's" is the entity "Tom" there and "Tom's" here. A piece of punctuation the
        tagger itself labels O does not widen its word ("Norway." is the entity "Norway": the lab's generated
        data makes punctuation words of their own), unless a later piece of the word does; nor does it open
        one: "(Tom)" with "(" labelled O takes the label of "Tom" and begins there (the bracket's O once hid
        the name)."""
        enc = self.encode(text, text_pair)
        tags = self.tag(text, text_pair)
        texts = (text, text_pair)
        owners = [None if t is None else word_owner(t) for t in texts]
        words: list[tuple[int, int, int, str, float]] = []  # (sentence, start, end, label, probability)
        index: dict[tuple[int, int], int] = {}  # (sentence, word) -> its place in `words`
        opening: set[tuple[int, int]] = set()  # words read so far as punctuation only: "(" of "(Tom)"
        # A typed [SEP] (or [CLS], [PAD]) is no word of an entity, whatever the tagger labels it: "at 9:30.
        # [SEP] Tom" made the TIME "at 9:30. [SEP]"
        typed = set(self.typed_special_ids())
        tags = [
            (t, "O", p) if int(i) in typed else (t, label, p)
            for (t, label, p), i in zip(tags, enc.input_ids, strict=True)
        ]
        for i, (sentence, (start, end)) in enumerate(
            zip(enc.sequence_ids, enc.offsets.tolist(), strict=True)
        ):
            if sentence is None:
                continue
            covered = owners[sentence][start:end]
            covered = covered[covered >= 0]
            if not len(
                covered
            ):  # nothing but spaces (RoBERTa's lone "Ġ"; ALBERT's lone "▁" is given the word's
                # first character by `tokenizers`, so it is that word's first piece, as in transformers' word_ids)
                continue
            word = (sentence, int(covered[0]))
            punctuation = all(unicodedata.category(c).startswith("P") for c in texts[sentence][start:end])
            # So far only opening punctuation labelled O: the word's next other piece labels it.
            if word in opening:
                if not punctuation:
                    opening.discard(word)
                    words[index[word]] = (sentence, start, end, tags[i][1], tags[i][2])
                continue
            if word in index:  # a later piece of the same word widens its span
                s, st, e, label, p = words[index[word]]
                left_out = entity_type(tags[i][1]) is None and punctuation
                words[index[word]] = (s, st, e if left_out else max(e, end), label, p)
                continue
            index[word] = len(words)
            first = int(np.flatnonzero(owners[sentence] == word[1])[0])  # the word's own first character
            words.append((sentence, max(start, first), end, tags[i][1], tags[i][2]))
            if punctuation and entity_type(tags[i][1]) is None:
                opening.add(word)
        return _merge_entities(words, texts)

    # -- question answering ---------------------------------------------------------------------------------

    def answer(
        self,
        question: str,
        context: str,
        top_k: int = 1,
        *,
        max_answer_tokens: int = MAX_ANSWER_TOKENS,
        stride: int = QA_STRIDE,
    ) -> list[tuple[str, int, int, float, float]]:
        """[(answer_text, start_char, end_char, score, probability), ...], the best spans of `context` by start +
        end logit (the score), end >= start, at most `max_answer_tokens` pieces, over context pieces only, each
        widened to the whole words its first and last pieces fall in (transformers' pipeline's align_to_words,
        but whole also where a window's edge cuts a word; spans that become the same words are one answer, at the
        best score among them). The
        probability is transformers' pipeline's: the start's softmax over its window's context pieces and its
        first token times the end's (a span is always picked, however unsure). A context longer than the
        model's positions is read in overlapping windows (`stride` pieces shared between neighbours, at most
        half a window), as the reference pipelines do."""
        spans, _ = self._best_spans(question, context, top_k, max_answer_tokens, stride)
        return [(context[a:b], a, b, score, p) for (a, b), (score, _, _, _, p) in spans]

    def _best_spans(self, question: str, context: str, top_k: int, max_answer_tokens: int, stride: int):
        """([((start_char, end_char), (score, window, start_piece, end_piece, probability)), ...] best first, the
        windows): `answer`'s spans with where each scored best, which `attribute` explains."""
        self.network.head("qa")
        for value, name in ((question, "the question"), (context, "the passage (context)")):
            if not isinstance(value, str):  # None read as no passage, and failed at an empty list's [0]
                raise InputError(f"{name} must be a string, got {type(value).__name__}")
        if not question.strip():
            raise InputError("the question is empty: type a question about the passage")
        if not context.strip():  # it was "text_pair is empty", a name nobody gave
            raise InputError("the passage (context) is empty: give the text the answer is to be found in")
        top_k = self._check_top_k(top_k)
        max_answer_tokens = check_whole(max_answer_tokens, "max_answer_tokens")
        windows = self._qa_windows(question, context, stride)
        logits = self._task_logits("qa", windows)  # (B, S, 2)
        # The passage's words as the tokenizer splits them (word id: first and last character of its pieces, a
        # RoBERTa lone "Ġ" of no characters included, as `tokenizers`' word_to_chars counts them): an answer is
        # widened to the words its first and last pieces fall in, as transformers' pipeline does by default
        # (align_to_words). Piece by piece, a span that started and ended in "Th|##ame|##sme|##ad" read "Th",
        # which a learner takes for a fault. Over every window, so a word an edge of a window cuts is whole here,
        # where the pipeline's stays cut at that edge ("un" of "unwanted").
        words: dict[int, tuple[int, int]] = {}
        for enc in windows:
            for (a, b), seq, word in zip(enc.offsets.tolist(), enc.sequence_ids, enc.word_ids, strict=True):
                if seq == 1 and word is not None:
                    low, high = words.get(word, (a, b))
                    words[word] = (min(low, a), max(high, b))
        best: dict[tuple[int, int], tuple[float, int, int, int, float]] = {}
        for row, enc in enumerate(windows):
            in_context = [i for i, seq in enumerate(enc.sequence_ids) if seq == 1]
            starts, ends = logits[row, : len(enc), 0], logits[row, : len(enc), 1]
            first, last = in_context[0], in_context[-1]
            # every (start, end) pair of context pieces at once: (S, S) start + end
            scores = starts[first : last + 1, None] + ends[None, first : last + 1]
            valid = torch.triu(torch.ones_like(scores, dtype=torch.bool))
            valid &= ~torch.triu(valid, diagonal=max_answer_tokens)
            scores = scores.masked_fill(~valid, float("-inf"))
            # The pipeline's softmax: over this window's passage pieces and the first token ([CLS], <s>), where a
            # model trained for unanswerable questions puts "no answer"; left out, that share went to the spans.
            keep = [0, *range(first, last + 1)]
            p_start = torch.softmax(starts[keep], 0)[1:]
            p_end = torch.softmax(ends[keep], 0)[1:]
            # Best first until top_k distinct spans: pieces that share a character span (a lone "▁" before its
            # word) make pairs that read as the same answer, and must not take the places of others.
            found: set[tuple[int, int]] = set()
            for flat in torch.argsort(scores.flatten(), descending=True)[: int(valid.sum())].tolist():
                i, j = divmod(flat, scores.shape[1])
                start_word, end_word = enc.word_ids[first + i], enc.word_ids[first + j]
                span = (
                    words[start_word][0] if start_word in words else int(enc.offsets[first + i][0]),
                    words[end_word][1] if end_word in words else int(enc.offsets[first + j][1]),
                )
                score = float(scores[i, j])
                if span not in best or score > best[span][0]:
                    best[span] = (score, row, first + i, first + j, float(p_start[i] * p_end[j]))
                found.add(span)
                if len(found) == top_k:
                    break
        ranked = sorted(best.items(), key=lambda item: -item[1][0])[:top_k]
        return ranked, windows

    def _qa_windows(self, question: str, context: str, stride: int) -> list[Encoding]:
        """[question + window of the context] encodings covering the whole context: the question and the
        specials around it repeat, the context's pieces advance by (window - stride)."""
        stride = check_whole(stride, "stride", least=0)
        full, context_at, head, tail, room = self._qa_parts(question, context)
        # Neighbours share at most half a window: a stride as large as the room (the default 128 against a
        # 128-position model's ~115 left after the question) would advance one piece at a time, a window per
        # piece of the passage. The reference pipelines cap it the same way (max length // 2).
        step = room - min(stride, room // 2)
        windows = []
        for start in range(0, len(context_at), step):
            keep = head + context_at[start : start + room] + tail
            windows.append(_select(full, keep, self.tokenizer.position_offset))
            if start + room >= len(context_at):
                break
        return windows

    def _qa_parts(self, question: str, context: str) -> tuple[Encoding, list[int], list[int], list[int], int]:
        """The whole (question, context) encoding, uncut; where its context pieces are; the pieces before them
        ([CLS] question [SEP], and RoBERTa's second </s>) and after them; and how many context pieces a window
        has room for beside the question."""
        # read as `encode` reads every text: a typed [MASK] or <mask> is this model's own mask token
        try:
            full = self.tokenizer.encode(
                self._with_model_mask(question), self._with_model_mask(context), max_length=10**9
            )
        except InputError as exc:
            # named as the page names them ("text_pair is empty once ..." named neither)
            message = str(exc)
            for core, ours in (("text_pair", "the passage"), ("text", "the question")):
                if message.startswith(core):
                    raise InputError(ours + message.removeprefix(core)) from exc
            raise
        context_at = [i for i, seq in enumerate(full.sequence_ids) if seq == 1]
        if not context_at:
            raise InputError(
                "the passage has no pieces for the model to read: give the text the answer is in"
            )
        head = list(range(context_at[0]))
        tail = list(range(context_at[-1] + 1, len(full)))
        room = self.tokenizer.max_length - len(head) - len(tail)
        if room < 1:
            raise QuestionTooLong(
                # "takes 186 of the model's 64 positions" read as a count past its own total
                f"the question takes {len(head)} positions with the special tokens, but the model reads only "
                f"{self.tokenizer.max_length} at once: shorten it to leave room for the passage"
            )
        return full, context_at, head, tail, room

    def _qa_window_around(self, question: str, context: str, start: int, end: int) -> Encoding | None:
        """A (question, context window) encoding with characters [start, end) of the context in its middle;
        None when their pieces are more than a window holds. For an answer that straddles the edges of
        `_qa_windows`' windows, as one longer than their overlap can: it fits a window placed around it."""
        full, context_at, head, tail, room = self._qa_parts(question, context)
        spans = full.offsets[context_at].tolist()  # (P, 2) character spans of the context's pieces
        inside = [k for k, (s, e) in enumerate(spans) if s < end and e > start]
        if not inside or inside[-1] - inside[0] + 1 > room:
            return None
        first = min(
            max(0, inside[0] - (room - (inside[-1] - inside[0] + 1)) // 2), max(0, len(context_at) - room)
        )
        return _select(full, head + context_at[first : first + room] + tail, self.tokenizer.position_offset)

    # -- multiple choice ------------------------------------------------------------------------------------

    def choose(self, prompt: str, choices: Sequence[str]) -> list[tuple[str, float]]:
        """[(choice, probability), ...] best first: each choice scored after the prompt as a sentence pair,
        softmax over the choices."""
        choices = listed(choices, "choices", "give at least two to choose between")
        if len(choices) < 2:
            raise InputError("give at least two choices to choose between")
        encoded = []
        for i, choice in enumerate(choices):
            if not isinstance(choice, str):  # None read as no second sentence: the prompt scored alone
                raise InputError(f"choices[{i}] must be a string, got {type(choice).__name__}")
            try:
                encoded.append(self.encode(prompt, choice))
            except InputError as exc:  # a choice's own fault named as the second sentence's: say which choice
                message = str(exc)
                if not message.startswith("text_pair"):
                    raise
                raise InputError(f"choices[{i}]{message.removeprefix('text_pair')}") from exc
        logits = self._task_logits("choice", encoded)[:, 0]  # (C,)
        probs = torch.softmax(logits, -1).tolist()
        return sorted(zip(choices, probs, strict=True), key=lambda pair: -pair[1])

    # -- attribution ----------------------------------------------------------------------------------------

    def attribute(
        self,
        text: str,
        text_pair: str | None = None,
        *,
        target=None,
        method: str = "integrated_gradients",
        steps: int = 50,
    ) -> Attribution:
        """How much each token's word embedding moved one logit, by integrated gradients (Sundararajan et al.,
        2017) or gradient x input.

        The logit (`target`): a classifier's class (index or label; default the predicted one); a tagger's
        (position, label) (default the first piece of a word, a typed [SEP] none, and its predicted label); for QA, "start" or "end" of
        the best answer (default "start"; `text` is the question, `text_pair` the passage); for an MLM model a
        (position, token) (default the first [MASK] and its top prediction). The IG baseline is the same input
        with every non-special token replaced by the pad token (specials, positions and segments kept),
        interpolated in word-embedding space with `steps` midpoint steps.

        Written here rather than with captum: the interpolation runs on the encoder's own `word_embeddings`
        input, one batched forward per chunk of steps, in the ~40 lines below, without another dependency.
        """
        if method not in ATTRIBUTION_METHODS:
            raise InputError(f"method must be one of {', '.join(ATTRIBUTION_METHODS)}, got {method!r}")
        steps = check_whole(steps, "steps", most=1000)
        enc, name, pick, described = self._attribution_target(
            self.encode(text, text_pair), text, text_pair, target
        )
        ids = torch.from_numpy(np.array(enc.input_ids))[None].to(self.device)  # (1, S)
        types = torch.from_numpy(np.array(enc.token_type_ids))[None].to(self.device)
        positions = torch.from_numpy(np.array(enc.position_ids))[None].to(self.device)
        table = self.network.base.embeddings.word_embeddings
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        special = torch.from_numpy(np.array(enc.special_tokens_mask))[None].to(self.device)  # a writable copy
        baseline_ids = torch.where(special, ids, pad)

        def score(words: Tensor) -> Tensor:
            """words (B, S, E) -> the target logit for each row, (B,)."""
            b = words.shape[0]
            out = self.network(
                ids.expand(b, -1),
                types.expand(b, -1),
                positions.expand(b, -1),
                keep_attentions=False,
                word_embeddings=words,
            )
            return pick(self.network.logits(name, self._head_input(name, out)))

        integrated = method == "integrated_gradients"
        with torch.no_grad():
            x = table(ids).float()  # (1, S, E)
            x0 = table(baseline_ids).float()
            f_x = float(score(x)[0])
            f_x0 = float(score(x0)[0]) if integrated else None  # gradient x input has no baseline
        with torch.enable_grad():
            if not integrated:
                point = x.clone().requires_grad_(True)
                grads = torch.autograd.grad(score(point).sum(), point)[0]  # (1, S, E)
                scores = (grads * x).sum(-1)[0]
            else:
                total = torch.zeros_like(x)
                alphas = (
                    torch.arange(steps, dtype=torch.float32, device=x.device) + 0.5
                ) / steps  # midpoints
                for chunk in alphas.split(16):  # bounded memory: 16 interpolated inputs per backward
                    point = (x0 + chunk[:, None, None] * (x - x0)).requires_grad_(True)  # (K, S, E)
                    total += torch.autograd.grad(score(point).sum(), point)[0].sum(0, keepdim=True)
                scores = ((x - x0) * total / steps).sum(-1)[0]  # (S,)
        attributions = scores.detach().cpu().numpy().astype(np.float32)
        gap = abs(float(attributions.sum()) - (f_x - f_x0)) if integrated else None
        return Attribution(
            text=text,
            text_pair=text_pair,
            encoding=enc,
            scores=_frozen(attributions),
            target=described,
            method=method,
            score=f_x,
            baseline_score=f_x0,
            completeness_gap=gap,
        )

    def _attribution_target(self, enc: Encoding, text: str, text_pair: str | None, target):
        """(the encoding to explain, head name, logits -> (B,) picker, words for people) for `attribute`: `enc`
        itself, but for QA the window of the passage that the best answer was scored in."""
        task = self.task if self.task is not None else ("mlm" if self.has_mlm_head else None)
        if task is None:
            raise MissingHeadError(
                "this model has no head to explain: load a fine-tuned or an MLM checkpoint"
            )
        if task == "classify":
            labels = self._label_names(self.config.num_labels)
            if target is None:
                target = int(self._task_logits("classify", [enc])[0].argmax())
            if isinstance(target, str) and target not in labels:
                raise InputError(f"{target!r} is not one of this classifier's labels: {', '.join(labels)}")
            index = labels.index(target) if isinstance(target, str) else target
            index = self._check_index(index, len(labels), "the target class")
            what = "output" if self.config.task_kind == "regression" else "class"
            return enc, "classify", lambda logits: logits[:, index], f"{what} {labels[index]}"
        if task in ("tag", "mlm"):
            if target is None:
                if task == "tag":
                    # the first piece of a word: a typed [SEP] is none, whatever the tagger labels it
                    typed = set(self.typed_special_ids())
                    pieces = [i for i, seq in enumerate(enc.sequence_ids) if seq is not None]
                    position = next((i for i in pieces if int(enc.input_ids[i]) not in typed), pieces[0])
                    label = int(self._task_logits("tag", [enc])[0, position].argmax())
                else:
                    position = self._mask_positions(enc)[0]
                    out = self._run([enc], None, keep_attentions=False)
                    with torch.inference_mode():
                        label = int(self.network.logits("mlm", out.last_hidden_state[0, position]).argmax())
                target = (position, label)
            if isinstance(target, (str, bytes)) or not (
                isinstance(target, (tuple, list)) and len(target) == 2
            ):
                what = "(position, label)" if task == "tag" else "(position, token)"
                raise InputError(f"the target of this model's explanation is a {what} pair, got {target!r}")
            position, label = target
            position = self._check_index(position, len(enc), "the target position")
            names = self._label_names(self.config.num_labels) if task == "tag" else None
            if isinstance(label, str) and names is not None:
                if label not in names:
                    raise InputError(f"{label!r} is not one of this tagger's labels: {', '.join(names)}")
                label = names.index(label)
            elif isinstance(label, str):
                label = self._vocab_piece(label)
            size = self.config.num_labels if task == "tag" else self.config.vocab_size
            label = self._check_index(label, size, "the target label")
            shown = names[label] if names else self.tokenizer.id_to_token(label)
            return enc, task, lambda logits: logits[:, position, label], f"{shown!s} at token {position}"
        if task == "qa":
            end = {"start": 0, "end": 1}.get(target if target is not None else "start")
            if end is None or text_pair is None:
                raise InputError(
                    'for question answering, pass the passage as text_pair and target "start" or "end"'
                )
            # The window the best answer scored in (`answer`'s defaults), not the passage's first: a long
            # passage's answer may lie beyond it, or score otherwise there, nearer its edge.
            spans, windows = self._best_spans(text, text_pair, 1, MAX_ANSWER_TOKENS, QA_STRIDE)
            _, (_, window, start_piece, end_piece, _) = spans[0]
            position = start_piece if end == 0 else end_piece
            return (
                windows[window],
                "qa",
                lambda logits: logits[:, position, end],
                f"answer {'start' if end == 0 else 'end'} (token {position}"
                + (f" of window {window + 1} of {len(windows)} of the passage)" if len(windows) > 1 else ")"),
            )
        raise InputError(f"attribution is not available for the {task} head")


def _select(full: Encoding, keep: list[int], position_offset: int) -> Encoding:
    """The pieces of `full` at `keep`, as an Encoding of their own (positions counted afresh, as the model
    counts them in a window of its own)."""
    index = np.array(keep, dtype=np.intp)
    return Encoding(
        tokens=[full.tokens[i] for i in keep],
        input_ids=_frozen(full.input_ids[index]),
        token_type_ids=_frozen(full.token_type_ids[index]),
        position_ids=_frozen(position_ids(full.input_ids[index], position_offset)),
        offsets=_frozen(full.offsets[index]),
        sequence_ids=[full.sequence_ids[i] for i in keep],
        word_ids=[full.word_ids[i] for i in keep],
        special_tokens_mask=_frozen(full.special_tokens_mask[index]),
        truncated=False,
        num_tokens_before_truncation=len(keep),
        pieces_before_truncation=(
            sum(full.sequence_ids[i] == 0 for i in keep),
            sum(full.sequence_ids[i] == 1 for i in keep),
        ),
    )


# The position prefixes of BIO / IOB1, BIOES and BILOU: L- ends an entity as E- does, U- is one word as S- is.
_PREFIXES = frozenset("BIESLU")
_ENDS = frozenset("ESLU")  # an entity with this last prefix takes no further word


def _split_label(label: str) -> tuple[str, str]:
    # (prefix, type): "B-PERSON" -> ("B", "PERSON"), "B-WORK-OF-ART" -> ("B", "WORK-OF-ART"), a plain type
    # "PERSON" or "WORK-OF-ART" -> ("", ...), "O" -> ("", "O"). Only a known prefix is one.
    prefix, _, kind = label.partition("-")
    return (prefix, kind) if prefix in _PREFIXES and kind else ("", label)


def word_owner(text: str) -> np.ndarray:
    """(len(text) + 1,) int64: for each character, the whitespace-delimited word it belongs to; -1 for spaces
    (and the end, so a slice [start:end] of it is never empty by accident of the last index)."""
    owner = np.full(len(text) + 1, -1, dtype=np.int64)
    for word, match in enumerate(re.finditer(r"\S+", text)):
        owner[match.start() : match.end()] = word
    return owner


def entity_type(label: str) -> str | None:
    """The entity type a tagger's label names, None for "O" (outside every entity)."""
    _, kind = _split_label(label)
    return None if label == "O" or not kind else kind


def _merge_entities(words, texts) -> list[Entity]:
    """BIO / BIOES / BILOU / plain-type word labels -> entities. B-/S-/U- (or a change of type) starts one;
    I-/E-/L- or the plain type of the same type continue it; E-/S-/L-/U- and O end it."""
    entities: list[Entity] = []
    current = None  # [sentence, start, end, type, probabilities]
    for sentence, start, end, label, p in words:
        prefix, kind = _split_label(label)
        if entity_type(label) is None:
            if current:
                entities.append(current)
            current = None
            continue
        continues = (
            current is not None
            and current[0] == sentence
            and current[3] == kind
            and prefix in ("I", "E", "L", "")
            and current[5] not in _ENDS
        )
        if continues:
            current[2] = end
            current[4].append(p)
            current[5] = prefix
        else:
            if current:
                entities.append(current)
            current = [sentence, start, end, kind, [p], prefix]
    if current:
        entities.append(current)
    return [
        Entity(label=kind, text=(texts[s] or "")[a:b], start=a, end=b, score=float(np.mean(ps)), sentence=s)
        for s, a, b, kind, ps, _ in entities
    ]
