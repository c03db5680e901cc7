"""The analyses that need passes of their own beyond `analyze`'s one forward: one layer's queries, keys and
values; value-weighted attention; head importance by ablation; pseudo-log-likelihood; the logit lens.
`BertScopeModel` inherits them, so they are its methods; they use its `_run`, `encode` and `network`.

Results are numpy dataclasses (`results.py`); the torch-free arithmetic lives in `bert_core.interpret`.

Dimensions: B = batch, S = sequence length, H = hidden size, L = layers, N = heads, D = head size (H / N),
V = vocabulary, R = rows of a batched probe (one per ablated head, or per masked piece), K = top-k.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import torch

from .checks import check_batch_tokens, listed
from .errors import InputError
from .interpret.value_weighted import value_weighted_norms
from .modeling.packed import linear
from .pieces import VISIBLE_SPACE, byte_level_spelling
from .results import (
    PLL_SCORINGS,
    Analysis,
    AttentionDetails,
    HeadImportance,
    LogitLens,
    PseudoLogLikelihood,
    ValueWeightedAttention,
)
from .tokenizer import SURROGATE, Encoding


class AnalysisPasses:
    """Mixed into `BertScopeModel` (see there for the attributes these methods use)."""

    @staticmethod
    def _check_index(value, size: int, what: str) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < size:
            raise InputError(f"{what} must be an integer from 0 to {size - 1}, got {value!r}")
        return int(value)

    def _vocab_piece(self, token: str) -> int:
        """The id of the vocabulary piece `token`; InputError otherwise, naming the piece meant where it is
        near: RoBERTa's "bank" starts a word only as "Ġbank", and an uncased model's "The" is "the"."""
        if not isinstance(token, str):
            raise InputError(f"the token must be a piece of the vocabulary, as a string, got {token!r}")
        found = self.tokenizer.token_to_id(token)
        if found is not None:
            return found
        near = [g for g in self._spellings(token) if g != token and self.tokenizer.token_to_id(g) is not None]
        hint = f" (the piece {near[0]!r} is)" if near else ""
        raise InputError(f"{token!r} is not a piece of this model's vocabulary{hint}")

    def _spellings(self, word: str) -> list[str]:
        """How this vocabulary may write a typed `word`, the likeliest first: as a word's first piece where
        the family marks word starts (RoBERTa's "river" is "Ġriver"; its plain "river" is the piece inside a
        word such as "upriver", which nobody typing "river" means), as typed, then normalised (an uncased
        model's "River" is "river"); a byte-level vocabulary in its own spelling of the bytes (RoBERTa's
        "café" is "ĠcafÃ©"). A word typed with the marker keeps it, as does one typed as the pages and messages
        show a marked piece ("␣river"): the lens's own message offered "␣" and then refused it."""
        style = self.architecture.piece_style
        marker = style.word_start_marker or ""
        spell = byte_level_spelling if style.byte_level else (lambda text: text)
        if marker and word.startswith(VISIBLE_SPACE):
            word = marker + word[len(VISIBLE_SPACE) :]
        if marker and word.startswith(marker):
            guesses = [marker + spell(word[len(marker) :])]
        else:
            lowered = self.tokenizer.normalize(word)
            guesses = [marker + spell(word), spell(word), marker + spell(lowered), spell(lowered)]
        return list(dict.fromkeys(g for g in guesses if g))

    def lens_piece(self, word: str) -> str:
        """The piece `logit_lens(follow=[word])` follows for `word` (InputError where it follows none), so a
        caller can check each of several words alone; given back, the piece stands for itself."""
        return self._piece_names([self._follow_piece(word)])[0]

    def _follow_piece(self, word: str) -> int:
        """The id of the piece the logit lens follows for `word`: the first of its `_spellings` the vocabulary
        has, else the word as a piece's name, so a piece `lens_piece` gave back stands for itself."""
        if not isinstance(word, str) or not word.strip():
            raise InputError(f"a piece to follow must be a non-empty string, got {word!r}")
        if SURROGATE.search(word):  # no UTF-8, so no piece: the vocabulary lookup raised UnicodeEncodeError
            raise InputError(f"the word to follow {ascii(word)} holds half of a UTF-16 surrogate pair")
        style = self.architecture.piece_style
        for guess in dict.fromkeys([*self._spellings(word), word]):
            found = self.tokenizer.token_to_id(guess)
            if found is not None:
                return found
        try:
            enc = self.tokenizer.encode(word)
        except InputError as exc:  # a word the tokenizer reads as nothing (a lone zero-width space)
            raise InputError(f"the word to follow {word!r} is nothing this model reads") from exc
        pieces = [t for t, special in zip(enc.tokens, enc.special_tokens_mask, strict=True) if not special]
        read = ", ".join(repr(style.display(p)) for p in pieces) or "nothing"
        raise InputError(
            f"{word!r} is not one piece of this model's vocabulary: the model reads it as {read}. The lens "
            "follows single pieces; follow one of those"
        )

    def typed_special_ids(self) -> list[int]:
        """The ids of the specials a text can hold only because they were typed: [CLS], [SEP], [PAD] (<s>,
        </s>, <pad>). The unknown piece is not among them: it stands for what was typed."""
        t = self.tokenizer
        return [i for i in (t.cls_token_id, t.sep_token_id, t.pad_token_id) if i is not None]

    def _target_position(self, enc: Encoding, position: int | None) -> int:
        """`position` checked against the text, or the first [MASK] when it is None."""
        if position is None:
            return self._mask_positions(enc)[0]
        if isinstance(position, str):
            # logit_lens and head_importance take the position second, where the other calls take a second
            # sentence: logit_lens("text", "pair") is a likely slip.
            raise InputError(
                f"position must be an integer from 0 to {len(enc.tokens) - 1}, got {position!r}: a second "
                "sentence goes in text_pair="
            )
        return self._check_index(position, len(enc.tokens), "position")

    def attention_details(self, text: str, text_pair: str | None = None, *, layer: int) -> AttentionDetails:
        """Queries, keys, values, raw scores and probabilities of one layer (0-based), from one forward pass
        that keeps them for that layer only."""
        layer = self._check_index(layer, self.config.num_hidden_layers, "layer")
        enc = self.encode(text, text_pair)
        d = self._run([enc], None, keep_attentions=False, details_layer=layer).details

        def one(t: torch.Tensor) -> np.ndarray:
            return np.ascontiguousarray(self._numpy(t[0]))  # (B = 1, N, ., .) -> (N, ., .)

        return AttentionDetails(
            text=text,
            text_pair=text_pair,
            encoding=enc,
            layer=layer,
            queries=one(d.queries),
            keys=one(d.keys),
            values=one(d.values),
            scores=one(d.scores),
            probabilities=one(d.probs),
        )

    def _embeds_as(self, analysis: Analysis) -> bool:
        """Whether `analysis` starts where this model would (its hidden_states[0], this model's embeddings of
        its ids): another model of the same shape would otherwise lend its hidden states to these weights, and
        the maps would be of neither. The embeddings alone are a lookup, not a pass."""
        enc = analysis.encoding
        if int(enc.input_ids.max(initial=0)) >= self.config.vocab_size:
            return False
        rows = (enc.input_ids, enc.token_type_ids, enc.position_ids)
        base = self.network.base
        with torch.inference_mode():  # each (S,) -> (1, S)
            emb = base.embeddings(
                *(torch.tensor(np.asarray(x), dtype=torch.int64, device=self.device)[None] for x in rows)
            )
            first = self._numpy(base.project(emb.normalized)[0])  # (S, H)
        # fp32 rounding of a batch the analysis padded (analyze_batch) stays far inside this
        return bool(np.allclose(first, analysis.hidden_states[0], rtol=1e-4, atol=1e-5))

    def value_weighted_attention(
        self, text: str | Analysis, text_pair: str | None = None
    ) -> ValueWeightedAttention:
        """||alpha_ij f_h(x_j)|| per head and summed over heads, and ||f_h(x_j)|| (`interpret/value_weighted.py`).

        `text` may be an `Analysis` of this model, whose hidden states are reused (no forward pass). A head the
        analysis switched off (`head_mask`) contributes nothing, so its value-weighted maps are zero.
        """
        if isinstance(text, Analysis):
            if text_pair is not None:
                raise InputError("pass either an Analysis or a text (and its pair), not both")
            analysis = text
        else:
            analysis = self.analyze(text, text_pair)
        c = self.config
        if analysis.hidden_states.shape[::2] != (c.num_hidden_layers + 1, c.hidden_size):
            raise InputError(
                "this analysis comes from a model of another shape: analyse the text with this one"
            )
        if isinstance(text, Analysis) and not self._embeds_as(analysis):  # one made here is this model's
            raise InputError("this analysis comes from another model: analyse the text with this one")
        n, d = c.num_attention_heads, c.hidden_size // c.num_attention_heads
        grams = []
        with torch.inference_mode():
            hidden = torch.from_numpy(analysis.hidden_states).to(self.device)  # (L + 1, S, H)
            s = hidden.shape[1]
            # through LayerParts, so every family's layout (and ALBERT's shared layers) reads the same
            for index, parts in enumerate(self.network.base.layer_parts()):
                values = linear(parts.value, hidden[index]).double()  # (S, H)
                out = parts.attention_output.weight.double()  # (H, H): [output, input]
                # head h's value slice through the output columns that read it: f_h(x_j), (N, S, H)
                f = torch.einsum("snd,ond->nso", values.view(s, n, d), out.view(c.hidden_size, n, d))
                grams.append(torch.einsum("nso,mso->snm", f, f))  # (S, N, N)
            gram = torch.stack(grams).cpu().numpy()  # (L, S, N, N) float64
        alpha = analysis.attentions
        if analysis.head_mask is not None:
            alpha = alpha * analysis.head_mask[:, :, None, None]  # (L, N, S, S) * (L, N, 1, 1)
        per_head, summed, value_norms = value_weighted_norms(alpha, gram)
        return ValueWeightedAttention(
            text=analysis.text,
            text_pair=analysis.text_pair,
            encoding=analysis.encoding,
            attentions=analysis.attentions,
            per_head=per_head,
            summed=summed,
            value_norms=value_norms,
        )

    def head_importance(
        self,
        text: str,
        position: int | None = None,
        token: str | None = None,
        *,
        text_pair: str | None = None,
        head_mask=None,
        max_batch_tokens: int = 2048,
    ) -> HeadImportance:
        """For every head, the drop in log P(token at position) when that head alone is switched off: an
        ablation, signed and not normalised, as Michel et al. (2019) first measure heads (not their
        gradient-based importance score).

        position: default the first [MASK]; token: a vocabulary piece or its id, default the intact model's
        top prediction there. head_mask (L, N): heads already off in every run, the intact one included. After one
        intact pass, the L x N ablated runs go through the encoder a layer at a time, as rows of batches of at
        most `max_batch_tokens` (B x S) tokens, each row with its own head mask.
        """
        self.network.head("mlm")
        max_batch_tokens = check_batch_tokens(max_batch_tokens)
        enc = self.encode(text, text_pair)
        position = self._target_position(enc, position)
        if token is None:
            token_id = None
        elif isinstance(token, (int, np.integer)) and not isinstance(token, bool):
            # an id, as attribute()'s (position, token) target takes one
            token_id = self._check_index(token, self.config.vocab_size, "token")
        else:
            token_id = self._vocab_piece(token)
        base = self._head_mask_tensor(head_mask)
        layers, heads = self.config.num_hidden_layers, self.config.num_attention_heads
        if base is None:
            base = torch.ones(layers, heads, device=self.device)
        intact = self._run([enc], base, keep_attentions=False)
        with torch.inference_mode():
            lp = torch.log_softmax(self.network.logits("mlm", intact.last_hidden_state[0, position]), dim=-1)
            if token_id is None:
                token_id = int(lp.argmax())
            intact_lp = float(lp[token_id])
            # Switching off a head of layer l changes nothing below it: its rows start from the intact
            # hidden_states[l], which is 0.54 of the work of full passes on a 12-layer model.
            chunk = max(1, max_batch_tokens // len(enc.tokens))
            ablated = np.empty((layers, heads))
            for layer in range(layers):
                for start in range(0, heads, chunk):
                    off = torch.arange(start, min(start + chunk, heads), device=self.device)  # (B,)
                    masks = base.repeat(len(off), 1, 1)  # (B, L, N)
                    masks[torch.arange(len(off)), layer, off] = 0.0
                    hidden = intact.hidden_states[layer].expand(len(off), -1, -1)  # (1, S, H) -> (B, S, H)
                    last = self.network.base.run_layers(hidden, layer, head_mask=masks)  # (B, S, H)
                    logits = self.network.logits("mlm", last[:, position])  # (B, V)
                    ablated[layer, start : start + len(off)] = self._numpy(
                        torch.log_softmax(logits, dim=-1)[:, token_id]
                    )
        return HeadImportance(
            text=text,
            text_pair=text_pair,
            encoding=enc,
            position=position,
            token=self._piece_names([token_id])[0],
            token_id=token_id,
            log_probability=intact_lp,
            drop=intact_lp - ablated,
            base_head_mask=None if head_mask is None else self._numpy(base),
        )

    def pseudo_log_likelihood(
        self,
        text: str,
        text_pair: str | None = None,
        *,
        scoring: str = "piece",
        max_batch_tokens: int = 2048,
    ) -> PseudoLogLikelihood:
        """Mask each non-special piece in turn and score it with the MLM head (natural log); the rows go through
        the encoder in batches of at most `max_batch_tokens` (B x S) tokens. `scoring` (PLL_SCORINGS): "piece"
        masks the scored piece alone, "word_l2r" also the later pieces of its word. A mask token typed into
        the text is not a piece of the sentence: it is left masked and not scored (its 'probability' would be
        the model's guess that a mask stands there, which the sentence's score must not include). A typed [CLS],
        [SEP] or [PAD] (RoBERTa's <s>, </s>, <pad>) is not scored either. A text
        longer than the model reads is refused (InputError): its total would leave out the cut-off end, and
        read as the whole text's."""
        _check_scoring(scoring)
        max_batch_tokens = check_batch_tokens(max_batch_tokens)
        self.network.head("mlm")
        mask_id = self._mask_id()
        enc = self.encode(text, text_pair)
        if enc.truncated:
            raise InputError(_too_long(text if text_pair is None else f"{text} | {text_pair}", enc))
        # typed specials ([SEP], </s>, ...) are no pieces of the sentence either: scored, a typed "[SEP]" added
        # the model's easy guess of a separator to the sentence's total
        positions = np.flatnonzero(
            ~enc.special_tokens_mask & ~np.isin(enc.input_ids, [mask_id, *self.typed_special_ids()])
        )  # (R,)
        masked = np.repeat(enc.input_ids[None], len(positions), axis=0)  # (S,) -> (R, S)
        masked[np.arange(len(positions)), positions] = mask_id
        if scoring == "word_l2r":
            for row, position in enumerate(positions):
                after = position + 1
                while after < len(enc.tokens) and _same_word(enc, position, after):
                    masked[row, after] = mask_id
                    after += 1
        rows = max(1, max_batch_tokens // len(enc.tokens))
        scores = []
        for start in range(0, len(positions), rows):
            chunk = positions[start : start + rows]
            variants = [dataclasses.replace(enc, input_ids=ids) for ids in masked[start : start + rows]]
            out = self._run(variants, None, keep_attentions=False)
            with torch.inference_mode():
                hidden = out.last_hidden_state[torch.arange(len(chunk)), torch.from_numpy(chunk)]  # (B, H)
                lp = torch.log_softmax(self.network.logits("mlm", hidden), dim=-1)  # (B, V)
                truth = torch.from_numpy(enc.input_ids[chunk]).to(lp.device)
                scores.append(self._numpy(lp.gather(1, truth[:, None])[:, 0]))
        values = np.concatenate(scores).astype(np.float64) if scores else np.zeros(0)
        pieces = [(enc.tokens[p], float(v)) for p, v in zip(positions, values, strict=True)]
        # Nothing scored (a text of typed masks and specials): no score, not the empty sum's 0.0, which reads
        # as probability 1, a perfect sentence
        return PseudoLogLikelihood(float(values.sum()) if pieces else float("nan"), pieces)

    def rank_minimal_pairs(
        self, texts: Sequence[str], *, scoring: str = "piece"
    ) -> list[tuple[str, PseudoLogLikelihood]]:
        """Sentences that differ in one place (a minimal pair, or more), most likely first by pseudo-log-
        likelihood (`scoring` as in `pseudo_log_likelihood`). The totals are sums, so a sentence with more
        pieces pays for each of them; a text with a typed mask token is refused (InputError): its hole would
        be one negative term fewer, a free pass up the ranking. So is a text longer than the model reads, whose
        cut-off end would be terms left out."""
        _check_scoring(scoring)
        # read twice: checked, then scored (a generator would be empty the second time)
        texts = listed(texts, "texts", "use pseudo_log_likelihood for one sentence")
        mask_id = self._mask_id()
        specials = self.typed_special_ids()
        for text in texts:
            enc = self.encode(text)
            if mask_id in enc.input_ids:
                raise InputError(f"{text[:60]!r} has a mask token: rank whole sentences, without a hole")
            typed = ~enc.special_tokens_mask & np.isin(enc.input_ids, specials)
            if typed.any():  # left out of its score, it would be a term fewer: the same free pass as a hole
                raise InputError(
                    f"{text[:60]!r} has a special token typed ({enc.tokens[int(np.flatnonzero(typed)[0])]}): "
                    "rank sentences of words"
                )
            if enc.truncated:
                raise InputError(_too_long(text, enc))
        scored = [(text, self.pseudo_log_likelihood(text, scoring=scoring)) for text in texts]
        return sorted(scored, key=lambda item: -item[1].total)

    def logit_lens(
        self,
        text: str,
        position: int | None = None,
        top_k: int = 5,
        *,
        text_pair: str | None = None,
        follow: str | Sequence[str] = (),
    ) -> LogitLens:
        """The MLM head applied to `position`'s vector after every layer (default: the first [MASK]).

        follow: pieces whose rank and probability to report at every layer beside the last layer's answer
        (a string is one piece). A word is read as the piece it starts a word as where the family marks word
        starts (RoBERTa's "river" is followed as "Ġriver"), or in its normalised form (an uncased model's
        "River" as "river"); a word that is several pieces is an InputError naming them. Each piece is followed
        once: words that read as one piece ("River", "river") make one row, which `followed_tokens` names."""
        self.network.head("mlm")
        top_k = self._check_top_k(top_k)
        if isinstance(follow, str):
            follow = [follow]
        if isinstance(follow, np.ndarray):  # words read off an array (np.str_ each) were refused
            follow = follow.tolist()
        if not isinstance(follow, Sequence):  # a set's order, and so the rows', would change between runs
            raise InputError(f"follow must be a piece or a list of pieces, got {follow!r}")
        follow_ids = list(dict.fromkeys(self._follow_piece(w) for w in follow))  # each piece once
        enc = self.encode(text, text_pair)
        position = self._target_position(enc, position)
        out = self._run([enc], None, keep_attentions=False)
        with torch.inference_mode():
            logits = self.network.logits("mlm", out.hidden_states[:, 0, position])  # (L + 1, H) -> (L + 1, V)
            probs = torch.softmax(logits, dim=-1)
            top_p, top_ids = torch.topk(probs, top_k, dim=-1)  # (L + 1, K)
            final = int(top_ids[-1, 0])
            final_p = probs[:, final]  # (L + 1,)
            rank = 1 + (probs > final_p[:, None]).sum(dim=-1)  # ranked by the same numbers topk sorted
            # (L + 1, F) -> (F, L + 1): a followed piece's probability at every layer, ranked as `rank` is
            follow_p = probs[:, follow_ids].T
            follow_rank = torch.zeros((len(follow_ids), len(probs)), dtype=torch.long, device=probs.device)
            for k, i in enumerate(follow_ids):
                # one piece at a time, (L + 1, V) -> (L + 1,): all at once held an (F, L + 1, V) mask, 1.5 GB
                # for a thousand pieces of a 120k vocabulary
                follow_rank[k] = 1 + (probs > probs[:, i, None]).sum(dim=-1)
        ids = top_ids.cpu().numpy()
        return LogitLens(
            text=text,
            text_pair=text_pair,
            encoding=enc,
            position=position,
            top_tokens=[self._piece_names(row.tolist()) for row in ids],
            top_token_ids=ids,
            top_probabilities=self._numpy(top_p),
            final_token=self._piece_names([final])[0],
            final_token_id=final,
            final_token_rank=rank.cpu().numpy().astype(np.int64),
            final_token_probability=self._numpy(final_p),
            followed_tokens=self._piece_names(follow_ids),
            followed_token_ids=np.asarray(follow_ids, dtype=np.int64),
            followed_ranks=follow_rank.cpu().numpy().astype(np.int64),
            followed_probabilities=self._numpy(follow_p),
        )


def _check_scoring(scoring: str) -> None:
    if scoring not in PLL_SCORINGS:
        raise InputError(f"scoring must be one of {', '.join(PLL_SCORINGS)}, got {scoring!r}")


def _too_long(text: str, enc: Encoding) -> str:
    shown = text if len(text) <= 60 else text[:60].rstrip() + "…"  # cut as the minimal pairs' notes cut
    return (
        f"{shown!r} is longer than the {len(enc.input_ids)} pieces the model reads: a pseudo-log-likelihood "
        "would leave out the rest and read as the whole text's; score a shorter text"
    )


def _same_word(enc: Encoding, a: int, b: int) -> bool:
    """Positions a and b hold pieces of one word of one sentence (a typed special is a word of its own).

    A word is the tokenizer's, as in Kauf & Ivanova's own code (fast tokenizers' word ids): BERT's and
    RoBERTa's split punctuation off, SentencePiece's (ALBERT) run from space to space, so its "bank." is
    one word and scoring "▁bank" masks the full stop too."""
    return (
        enc.sequence_ids[a] == enc.sequence_ids[b]
        and enc.word_ids[a] is not None
        and enc.word_ids[a] == enc.word_ids[b]
        and not enc.special_tokens_mask[b]
    )
