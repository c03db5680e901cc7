"""RoBERTa, DistilBERT, ALBERT and ELECTRA against transformers (eager), on random weights saved with
`save_pretrained`, with tokenizers trained here and saved by transformers' own tokenizer classes.

Every attention map, hidden state and head output within 1e-5 (fp32), on the packed and the exact path, for
one sentence and a pair; token ids identical to transformers' tokenizer for the same files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import bert_core
from bert_core import InputError, MissingHeadError, ModelLoadError
from tests.conftest import TINY_VOCAB, write_vocab
from tests.variants import CLASSES, MID, TEXTS, TINY, hf_tokenizer, make_variant

transformers = pytest.importorskip("transformers")

TOL = 1e-5


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("variants")
    made = {}
    for arch, kinds in CLASSES.items():
        for kind in kinds:
            made[arch, kind] = make_variant(root / f"{arch}-{kind}", arch, kind)
    return made


def _reference(directory: Path, kind: str, arch: str):
    cls = getattr(transformers, CLASSES[arch][kind])
    return cls.from_pretrained(directory, attn_implementation="eager").eval()


@pytest.mark.parametrize("pack", [True, False], ids=["packed", "exact"])
@pytest.mark.parametrize("arch,kind", [(a, k) for a, ks in CLASSES.items() for k in ks])
def test_every_map_state_and_head_matches_transformers(checkpoints, arch, kind, pack):
    directory = checkpoints[arch, kind]
    ours = bert_core.load_pretrained(directory, pack_weights=pack)
    hf = _reference(directory, kind, arch)
    tok = hf_tokenizer(directory, arch)
    assert ours.info.architecture == arch
    for text, pair in TEXTS:
        r = ours.analyze(text, pair)
        # transformers 5's ALBERT tokenizer no longer returns token_type_ids, so its model would see sentence B
        # as segment 0; ALBERT was trained (and SOP works) with B as segment 1, which BERTScope keeps. Asked
        # for explicitly, transformers gives 1 too, and the models must agree on that input.
        enc = tok(
            text, pair, return_tensors="pt", **({"return_token_type_ids": True} if arch == "albert" else {})
        )
        assert r.input_ids.tolist() == enc["input_ids"][0].tolist()
        if "token_type_ids" in enc:
            assert r.token_type_ids.tolist() == enc["token_type_ids"][0].tolist()
        with torch.inference_mode():
            out = hf(**enc, output_attentions=True, output_hidden_states=True)
        attentions = torch.stack(out.attentions)[:, 0].numpy()
        hidden = torch.stack(out.hidden_states)[:, 0].numpy()
        assert r.attentions.shape == attentions.shape
        np.testing.assert_allclose(r.attentions, attentions, atol=TOL, rtol=0)
        np.testing.assert_allclose(r.hidden_states, hidden, atol=TOL, rtol=0)
        if kind == "mlm":
            with torch.inference_mode():
                logits = ours.network.logits("mlm", torch.from_numpy(r.hidden_states[-1]))
            np.testing.assert_allclose(logits.numpy(), out.logits[0].numpy(), atol=TOL, rtol=0)
        if arch == "albert" and kind == "pretraining" and pair is not None:
            expected = torch.softmax(out.sop_logits, -1)[0, 0]
            assert abs(ours.sentence_order(text, pair) - float(expected)) <= TOL
        if arch == "electra" and kind == "pretraining":
            probs = [p for _, p in ours.replaced_tokens(text, pair)]
            np.testing.assert_allclose(probs, torch.sigmoid(out.logits[0]).numpy(), atol=TOL, rtol=0)


@pytest.mark.parametrize("arch", list(CLASSES))
def test_mid_size_matches_transformers(tmp_path, arch):
    directory = make_variant(tmp_path, arch, "model", MID, seed=3)
    ours = bert_core.load_pretrained(directory)
    hf = _reference(directory, "model", arch)
    tok = hf_tokenizer(directory, arch)
    text = " ".join(t for t, _ in TEXTS)
    r = ours.analyze(text)
    with torch.inference_mode():
        out = hf(**tok(text, return_tensors="pt"), output_attentions=True, output_hidden_states=True)
    np.testing.assert_allclose(r.attentions, torch.stack(out.attentions)[:, 0].numpy(), atol=TOL, rtol=0)
    np.testing.assert_allclose(
        r.hidden_states, torch.stack(out.hidden_states)[:, 0].numpy(), atol=TOL, rtol=0
    )


# config.json keys each family's transformers config has its own default for
LEFT_OUT = {
    "bert": ["pad_token_id", "hidden_act"],
    "roberta": ["pad_token_id", "vocab_size"],
    "distilbert": ["n_layers", "n_heads", "dim", "hidden_dim", "activation"],
    "albert": [
        *("embedding_size", "hidden_size", "num_attention_heads", "intermediate_size", "hidden_act"),
        *("hidden_dropout_prob", "attention_probs_dropout_prob"),  # 0 there: what fine-tuning drops
    ],
    "electra": ["embedding_size", "hidden_size", "num_attention_heads", "intermediate_size"],
}
SIZES = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"]


@pytest.mark.parametrize("arch", list(CLASSES))
def test_a_config_that_leaves_keys_out_reads_as_transformers_reads_it(tmp_path, checkpoints, arch):
    """A config.json without RoBERTa's pad_token_id counted positions from BERT's 0 (hidden states 2.7 apart),
    and one without ELECTRA's embedding_size was refused: each family's own defaults fill what is left out."""
    from bert_core.checkpoints.load import read_config

    source = checkpoints[arch, "mlm"]
    raw = json.loads((source / "config.json").read_text())
    for key in LEFT_OUT[arch]:
        raw.pop(key)
    if arch == "distilbert":  # BERT's names for its sizes, which transformers reads too, and prefers
        raw.update(num_attention_heads=2, hidden_size=raw.pop("hidden_size", None) or 768)
    (tmp_path / "config.json").write_text(json.dumps(raw))
    theirs = transformers.AutoConfig.from_pretrained(tmp_path)
    _, ours, _, _ = read_config(tmp_path)
    distil = arch == "distilbert"  # its own names for two of them
    expected = {k: getattr(theirs, k) for k in SIZES if not (distil and k == "intermediate_size")}
    expected.update(
        hidden_act=theirs.activation if distil else theirs.hidden_act,
        embedding_size=getattr(theirs, "embedding_size", theirs.hidden_size),
        intermediate_size=theirs.hidden_dim if distil else theirs.intermediate_size,
    )
    if not distil:
        expected.update(
            hidden_dropout_prob=theirs.hidden_dropout_prob,
            attention_probs_dropout_prob=theirs.attention_probs_dropout_prob,
        )
    got = {k: getattr(ours, k) for k in expected}
    got["embedding_size"] = ours.embedding_size or ours.hidden_size
    assert got == expected
    if arch == "roberta":
        assert ours.pad_token_id == theirs.pad_token_id == 1


def test_a_roberta_config_without_pad_token_id_computes_what_transformers_does(tmp_path, checkpoints):
    import shutil

    directory = shutil.copytree(checkpoints["roberta", "mlm"], tmp_path / "roberta")
    raw = json.loads((directory / "config.json").read_text())
    assert raw.pop("pad_token_id") == 1
    (directory / "config.json").write_text(json.dumps(raw))
    ours, hf = bert_core.load_pretrained(directory), _reference(directory, "mlm", "roberta")
    text = TEXTS[0][0]
    r = ours.analyze(text)
    with torch.inference_mode():
        out = hf(**hf_tokenizer(directory, "roberta")(text, return_tensors="pt"), output_hidden_states=True)
    np.testing.assert_allclose(
        r.hidden_states, torch.stack(out.hidden_states)[:, 0].numpy(), atol=TOL, rtol=0
    )


TOKENIZER_TEXTS = [
    "The bank of the river.",
    "  leading and trailing spaces  ",
    "Café naïve résumé",
    "東京 and 大阪",
    "emoji 😀 here",
    "a <mask> and [MASK] typed",
    "<s> literal </s> specials [CLS] [SEP]",
    "",
]


def test_robertas_prefix_space_and_offset_trimming_follow_tokenizer_config(tmp_path, checkpoints):
    """transformers reads add_prefix_space and trim_offsets from tokenizer_config.json over tokenizer.json's own
    pipeline: "the bank" became "t", "he", "Ġbank" here where transformers read "Ġthe", "Ġbank"."""
    import shutil

    directory = shutil.copytree(checkpoints["roberta", "model"], tmp_path / "roberta")
    path = directory / "tokenizer_config.json"
    file = directory / "tokenizer.json"
    plain = json.loads(file.read_text())
    assert plain["pre_tokenizer"]["type"] == "ByteLevel"
    # transformers also sets them where the config is silent (false, true), and in a Sequence's ByteLevel
    within = {**plain, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [plain["pre_tokenizer"]]}}
    prefixed = {**plain, "pre_tokenizer": {**plain["pre_tokenizer"], "add_prefix_space": True}}
    for options, tokenizer_json in (
        ({"add_prefix_space": True}, plain),
        ({"add_prefix_space": True, "trim_offsets": False}, plain),
        ({"add_prefix_space": True}, within),
        ({}, prefixed),
    ):
        config = {
            k: v
            for k, v in json.loads(path.read_text()).items()
            if k not in ("add_prefix_space", "trim_offsets")
        }
        path.write_text(json.dumps({**config, **options}))
        file.write_text(json.dumps(tokenizer_json))
        ours, tok = bert_core.load_pretrained(directory).tokenizer, hf_tokenizer(directory, "roberta")
        for text in TOKENIZER_TEXTS[:5]:
            for pair in (None, "the river ran by."):
                enc, theirs = ours.encode(text, pair), tok(text, pair, return_offsets_mapping=True)
                assert enc.input_ids.tolist() == theirs["input_ids"], (options, text, pair)
                assert enc.offsets.tolist() == [list(o) for o in theirs["offset_mapping"]], (options, text)
        prefix = options.get("add_prefix_space", False)
        assert (ours.encode("the bank").tokens[1] == "Ġthe") == prefix, options


def test_a_generic_fast_tokenizer_class_reads_the_byte_level_pipeline_as_the_file_has_it(
    tmp_path, checkpoints
):
    """transformers' PreTrainedTokenizerFast reads tokenizer.json as it stands (only RobertaTokenizer and its
    kin rebuild it from the config), so a prefix space the file asks for is kept there, and here."""
    import shutil

    directory = shutil.copytree(checkpoints["roberta", "mlm"], tmp_path / "roberta")
    raw = json.loads((directory / "tokenizer.json").read_text())
    raw["pre_tokenizer"]["add_prefix_space"] = True
    (directory / "tokenizer.json").write_text(json.dumps(raw))
    config = json.loads((directory / "tokenizer_config.json").read_text())
    config = {k: v for k, v in config.items() if k not in ("add_prefix_space", "trim_offsets")}
    for cls, prefixed in (("PreTrainedTokenizerFast", True), ("RobertaTokenizer", False)):
        (directory / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": cls}))
        ours, theirs = (
            bert_core.load_pretrained(directory),
            transformers.AutoTokenizer.from_pretrained(directory),
        )
        for text in TOKENIZER_TEXTS[:5]:
            assert ours.encode(text).input_ids.tolist() == theirs(text)["input_ids"], (cls, text)
        assert (ours.encode("the bank").tokens[1] == "Ġthe") == prefixed, cls


@pytest.mark.parametrize("arch", ["roberta", "albert"])
def test_a_phrase_is_found_across_any_spaces_between_its_words(checkpoints, arch):
    """Byte-level BPE reads a second space as a piece of its own ("Ġriver", "Ġ", "Ġbank"), which broke the run
    "river bank" in two; a target typed with two spaces was a phrase of three words, one of them blank."""
    m = bert_core.load_pretrained(checkpoints[arch, "mlm"])
    vectors = m.word_vectors(["a river  bank here", "the river bank", "the river , bank"], "river   bank")
    assert vectors.word == "river   bank" and vectors.missing == (2,)
    assert [t for t, _ in vectors.found] == [0, 1]
    from bert_core.words import target_occurrences

    assert (
        target_occurrences(m.encode("a bank"), [], m.tokenizer.normalize, text="a bank") == []
    )  # no words: none


def test_a_typed_mask_in_either_spelling_is_no_occurrence_of_the_word_mask(checkpoints):
    """RoBERTa reads a typed [MASK] as its <mask>, whose brackets off read "MASK": word_vectors found it."""
    m = bert_core.load_pretrained(checkpoints["roberta", "mlm"])
    vectors = m.word_vectors(["The [MASK] is a MASK.", "one MASK here"], "MASK")
    first = [i for text, pieces in vectors.found if text == 0 for i in pieces]
    assert (
        first and m.tokenizer.mask_token_id not in m.encode("The [MASK] is a MASK.").input_ids[first].tolist()
    )


def test_a_mask_matched_with_the_space_before_it_is_named_as_itself(tmp_path, checkpoints):
    """roberta-base's <mask> is lstrip: `tokenizers` names the match " <mask>", and every view drew it as a
    word-start piece "␣<mask>", and Sentence scores fell back to bare numbers."""
    import shutil

    directory = shutil.copytree(checkpoints["roberta", "mlm"], tmp_path / "roberta")
    raw = json.loads((directory / "tokenizer.json").read_text())
    for token in raw["added_tokens"]:
        token["lstrip"] = token["lstrip"] or token["content"] == "<mask>"
    (directory / "tokenizer.json").write_text(json.dumps(raw))
    ours, tok = bert_core.load_pretrained(directory), hf_tokenizer(directory, "roberta")
    text = "we sat on the <mask> of the river."
    enc = ours.encode(text)
    assert enc.tokens == tok.convert_ids_to_tokens(tok(text)["input_ids"]) and "<mask>" in enc.tokens
    assert enc.input_ids.tolist() == tok(text)["input_ids"]


def test_albert_options_its_tokenizer_json_does_not_follow_are_named(tmp_path, checkpoints, caplog):
    import shutil

    directory = shutil.copytree(checkpoints["albert", "model"], tmp_path / "albert")
    path = directory / "tokenizer_config.json"
    with caplog.at_level("WARNING", logger="bert_core"):
        bert_core.load_pretrained(directory)
    assert "tokenizer.json does not do" not in caplog.text
    path.write_text(json.dumps({**json.loads(path.read_text()), "do_lower_case": False}))
    with caplog.at_level("WARNING", logger="bert_core"):
        bert_core.load_pretrained(directory)
    assert "do_lower_case is false (in tokenizer_config.json) but tokenizer.json lower-cases" in caplog.text
    # silent, the config means transformers' defaults: lower-case, strip accents
    caplog.clear()
    path.write_text(
        json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "do_lower_case"})
    )
    raw = json.loads((directory / "tokenizer.json").read_text())
    raw["normalizer"]["normalizers"] = [
        n for n in raw["normalizer"]["normalizers"] if n["type"] not in ("Lowercase", "StripAccents")
    ]
    (directory / "tokenizer.json").write_text(json.dumps(raw))
    with caplog.at_level("WARNING", logger="bert_core"):
        bert_core.load_pretrained(directory)
    assert "do_lower_case is true (its default) but tokenizer.json does not lower-case" in caplog.text
    assert "keep_accents is false (in tokenizer_config.json) but tokenizer.json keeps accents" in caplog.text


@pytest.mark.parametrize("arch", ["roberta", "albert"])
def test_token_ids_equal_transformers_tokenizer(checkpoints, arch):
    directory = checkpoints[arch, "model"]
    ours = bert_core.load_pretrained(directory).tokenizer
    tok = hf_tokenizer(directory, arch)
    for text in TOKENIZER_TEXTS:
        for pair in (None, "the river ran by."):
            if not text.strip():
                with pytest.raises(InputError):
                    ours.encode(text, pair)
                continue
            enc = ours.encode(text, pair)
            assert enc.input_ids.tolist() == tok(text, pair)["input_ids"], (text, pair)
            # offsets point into what was typed, and word ids / specials are consistent
            for _token, (start, end), seq in zip(
                enc.tokens, enc.offsets.tolist(), enc.sequence_ids, strict=True
            ):
                if seq is None:
                    assert (start, end) == (0, 0)
                else:
                    assert 0 <= start <= end <= len(text if seq == 0 else pair)
            # every piece is named as the model reads it: the unknown id is the unknown token, whatever the
            # tokenizer kept as the piece's string (ALBERT's Unigram keeps what was typed)
            assert enc.tokens == [
                ours.unk_token if i == ours.unk_token_id else t
                for t, i in zip(
                    tok.convert_ids_to_tokens(enc.input_ids.tolist()), enc.input_ids.tolist(), strict=True
                )
            ]


def test_roberta_positions_start_after_padding_and_pairs_use_one_segment(checkpoints):
    m = bert_core.load_pretrained(checkpoints["roberta", "mlm"])
    r = m.analyze("the bank", "the river")
    assert r.position_ids[0] == 2 and r.position_ids[-1] == 2 + len(r) - 1  # pad_token_id + 1 onwards
    assert set(r.token_type_ids.tolist()) == {0}
    assert r.tokens[0] == "<s>" and r.tokens.count("</s>") == 3
    assert m.info.piece_style.word_start_marker == "Ġ"
    assert m.info.max_positions == 64 and m.tokenizer.max_length == 62  # 64 rows - 2 offset
    long = " ".join(["bank"] * 200)
    enc = m.encode(long)
    assert enc.truncated and len(enc) == 62
    with pytest.raises(InputError, match="62"):
        m.predict_at(list(range(63)), [1])


def test_mask_typed_as_bracket_works_for_every_mlm(checkpoints):
    for arch in CLASSES:
        m = bert_core.load_pretrained(checkpoints[arch, "mlm"])
        typed = m.fill_mask("the bank of the [MASK] .", top_k=3)
        assert len(typed) == 1 and len(typed[0]) == 3
        own = m.fill_mask(f"the bank of the {m.tokenizer.mask_token} .", top_k=3)
        assert own == typed
        # and RoBERTa's spelling is a hole in every family too, so one text compares them all
        assert m.fill_mask("the bank of the <mask> .", top_k=3) == typed
        # Every pass that looks for a hole reads the typed [MASK] the same way (RoBERTa's is <mask>).
        typed_text, own_text = "the bank of the [MASK] .", f"the bank of the {m.tokenizer.mask_token} ."
        lens = m.logit_lens(typed_text, top_k=2)
        assert lens.position == m.logit_lens(own_text, top_k=2).position
        assert m.head_importance(typed_text).position == lens.position
        # and every other call reads the same token sequence, so the lens's position indexes analyze's tokens
        # (RoBERTa's analyze read "[MASK]" as six pieces, its lens as one: position 4 was "[" there)
        analysis = m.analyze(typed_text)
        assert (
            analysis.tokens == m.analyze(own_text).tokens
            and analysis.tokens[lens.position] == m.tokenizer.mask_token
        )
        assert m.vectors_batch([typed_text])[0].tokens == analysis.tokens
        assert m.attention_details(typed_text, layer=0).encoding.tokens == analysis.tokens
        pll = m.pseudo_log_likelihood(typed_text)
        assert pll.total == m.pseudo_log_likelihood(own_text).total
        enc = m.encode(own_text)
        assert (
            len(pll.pieces) == len(enc.tokens) - int(enc.special_tokens_mask.sum()) - 1
        )  # the hole unscored
        with pytest.raises(InputError, match="mask token"):
            m.rank_minimal_pairs(["the bank of the river .", typed_text])
        # and the message for a text without one suggests what the app tells people to type
        with pytest.raises(InputError, match=r"type \[MASK\]") as told:
            m.fill_mask("the bank of the river .")
        own = m.tokenizer.mask_token
        assert (f"(or {own})" in str(told.value)) == (own != "[MASK]")


def test_the_logit_lens_follows_a_typed_word_as_the_piece_that_starts_it(checkpoints):
    """RoBERTa's and ALBERT's words start with a marked piece ("Ġbank", "▁bank"): typed plain, "bank" is that
    piece; a piece typed with its marker is taken as it is."""
    for arch, typed, followed in [
        ("roberta", "bank", "Ġbank"),
        ("albert", "Bank", "▁bank"),
        ("roberta", "Ġbank", "Ġbank"),
    ]:
        m = bert_core.load_pretrained(checkpoints[arch, "mlm"])
        lens = m.logit_lens("the [MASK] of the river .", follow=[typed])
        assert lens.followed_tokens == [followed], arch
        assert lens.followed_token_ids[0] == m.tokenizer.token_to_id(followed)
        assert m.lens_piece(typed) == followed and m.lens_piece(followed) == followed
    # RoBERTa's vocabulary spells bytes: "é" is the piece "Ã©", as the model reads it; looked up as typed, it
    # was the piece of the lone byte 0xE9, which never stands for é
    m = bert_core.load_pretrained(checkpoints["roberta", "mlm"])
    assert m.tokenizer.encode("é").tokens[1:-1] == ["Ã©"] and m.lens_piece("é") == "Ã©"
    assert m.lens_piece("Ã©") == "Ã©"  # given back, a piece stands for itself
    with pytest.raises(InputError, match=r"reads it as 'c', 'a', 'fé'"):  # named as read, not as bytes
        m.lens_piece("café")
    # a marked piece typed as the pages and messages show it ("␣bank") is that piece; and every piece a
    # refusal offers ("follow one of those") can be followed
    assert m.lens_piece("␣bank") == "Ġbank"
    albert = bert_core.load_pretrained(checkpoints["albert", "mlm"])
    assert albert.lens_piece("␣bank") == "▁bank"
    for model, word in ((albert, "river"), (m, "café")):
        with pytest.raises(InputError) as refused:
            model.lens_piece(word)
        offered = re.findall(r"'([^']*)'", str(refused.value).split("reads it as")[1])
        assert offered and all(model.lens_piece(piece) for piece in offered), offered


def test_heads_and_what_each_lacks(checkpoints):
    distil = bert_core.load_pretrained(checkpoints["distilbert", "mlm"])
    r = distil.analyze("the bank")
    assert r.embeddings.segment is None and r.pooled is None
    assert distil.segment_embedding_table() is None
    with pytest.raises(MissingHeadError, match="NSP"):
        distil.next_sentence("the bank", "the river")
    albert = bert_core.load_pretrained(checkpoints["albert", "pretraining"])
    assert albert.info.heads == ("mlm", "sop")
    # what the family lacks, said of an ALBERT without the SOP head too: no claim that it has one
    assert bert_core.load_pretrained(checkpoints["albert", "mlm"]).info.lacks == ("next-sentence prediction",)
    assert albert.info.layer_weight_sets == 1 and distil.info.layer_weight_sets is None  # ALBERT shares
    assert albert.analyze("the bank").embeddings.word.shape[-1] == TINY["embedding"]  # E, not H
    with pytest.raises(MissingHeadError, match="RTD"):
        albert.replaced_tokens("the bank")
    electra = bert_core.load_pretrained(checkpoints["electra", "pretraining"])
    assert electra.info.heads == ("rtd",)
    with pytest.raises(MissingHeadError, match="SOP"):
        electra.sentence_order("a", "b")
    with pytest.raises(MissingHeadError, match="MLM"):
        electra.fill_mask("the [MASK]")


def test_albert_shares_one_set_of_layer_weights_and_packs_it_once(checkpoints):
    m = bert_core.load_pretrained(checkpoints["albert", "model"])
    base = m.network.base
    parts = base.layer_parts()
    assert len(parts) == 2 and parts[0].query is parts[1].query
    assert len(list(m.network.state_dict())) == len(set(m.network.state_dict()))


def _edit_config(directory: Path, **changes) -> None:
    path = directory / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))


def test_bad_configs_and_tokenizers_are_clear_errors(tmp_path, checkpoints):
    import shutil

    def copy(arch, kind):
        target = tmp_path / f"{arch}-{kind}-{len(list(tmp_path.iterdir()))}"
        shutil.copytree(checkpoints[arch, kind], target)
        return target

    d = copy("roberta", "model")
    _edit_config(d, model_type="xlnet")
    with pytest.raises(ModelLoadError, match="'model_type' = 'xlnet'"):
        bert_core.load_pretrained(d)
    d = copy("albert", "model")
    _edit_config(d, num_hidden_groups=3)  # 2 layers in 3 groups
    with pytest.raises(ModelLoadError, match="num_hidden_groups"):
        bert_core.load_pretrained(d)
    d = copy("electra", "model")
    write_vocab(d, TINY_VOCAB + [f"extra{i}" for i in range(50)])  # more pieces than embedding rows
    with pytest.raises(ModelLoadError, match="vocabulary has"):
        bert_core.load_pretrained(d)
    d = copy("albert", "model")
    (d / "tokenizer.json").unlink()
    (d / "spiece.model").write_bytes(b"\0")
    with pytest.raises(ModelLoadError, match="spiece.model"):
        bert_core.load_pretrained(d)


def test_a_roberta_repo_downloads_through_the_hub_code(tmp_path, checkpoints, monkeypatch):
    """The real hub path (huggingface_hub against a local hub server) fetches a BPE family's files too."""
    from huggingface_hub import constants

    from tests.bert_core.test_hub import REPO, _Hub

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    served = tmp_path / "served"
    served.mkdir()
    for f in checkpoints["roberta", "mlm"].iterdir():
        (served / f.name).write_bytes(f.read_bytes())
    with _Hub(served) as hub:
        model = bert_core.load_pretrained(REPO, cache_dir=tmp_path / "cache", endpoint=hub.endpoint)
        fetched = {path.rsplit("/", 1)[1] for method, path in hub.requests if method == "GET"}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= fetched
    assert model.info.architecture == "roberta" and model.info.architecture_name == "RoBERTa"
    local = bert_core.load_pretrained(checkpoints["roberta", "mlm"])
    np.testing.assert_array_equal(
        model.analyze("the bank").hidden_states, local.analyze("the bank").hidden_states
    )


def test_byte_level_pieces_read_as_the_text_they_spell(checkpoints):
    """RoBERTa's pieces are bytes written as characters ('é' is 'Ã©'): shown decoded, never as mojibake, and
    a character split across pieces whole again once its pieces are joined."""
    from tokenizers.pre_tokenizers import ByteLevel

    from bert_core.pieces import _BYTE_OF_CHAR

    assert set(_BYTE_OF_CHAR) == set(ByteLevel.alphabet()) and sorted(_BYTE_OF_CHAR.values()) == list(
        range(256)
    )
    roberta = bert_core.load_pretrained(checkpoints["roberta", "model"])
    style = roberta.info.piece_style
    assert style.byte_level
    text = "Café naïve 東京 😀 run! a\tb ~ ÿ"
    written = [w for w, _ in ByteLevel(add_prefix_space=False).pre_tokenize_str(text)]
    assert "".join(style.display(w) for w in written).replace("␣", " ").replace("⇥", "\t") == text
    enc = roberta.encode("Café 東京")
    pieces = enc.tokens[1:-1]
    assert not any("Ã" in style.display(p) or "æ" in style.display(p) for p in pieces)  # no mojibake
    assert style.word(pieces) == "Café東京"  # the pieces joined, the space marker dropped
    # 東 (e6 9d b1) split across pieces: each part shows its bytes and says it is a part
    assert style.display("æĿ") == "\\xe6\\x9d" and style.partial("æĿ") and style.partial("±")
    assert style.word(["æĿ", "±"]) == "東" and not style.partial("ĠæĿ±")
    assert style.display("ĠcafÃ©") == "␣café" and style.display("<s>") == "<s>"
    # whitespace a piece holds is drawn, not left blank (a chart label, a box's option); its text stays text
    assert [style.display(p) for p in ("Ċ", "ĉ", "ĠĠ", "Ā")] == ["↵", "⇥", "␣␣", "\\x00"]
    assert style.strip("Ċ") == "\n" and style.word(["Ġa", "Ċ"]) == "a\n"
    # a piece of nothing but zero-width characters is written out; a joiner inside visible text does its work
    char_of_byte = {byte: char for char, byte in _BYTE_OF_CHAR.items()}
    zwsp = "".join(char_of_byte[b] for b in "\u200b".encode())  # the piece RoBERTa writes for U+200B
    assert style.display(zwsp) == "\\u200b" and style.word([zwsp]) == "\u200b"
    assert bert_core.pieces.visible("\u200b\u200b") == "\\u200b\\u200b"
    assert bert_core.pieces.visible("a\u200db") == "a\u200db"
    # other families are untouched: SentencePiece's ▁ and WordPiece's ## are characters, not bytes
    albert = bert_core.load_pretrained(checkpoints["albert", "model"]).info.piece_style
    assert not albert.byte_level and albert.display("▁café") == "␣café" and not albert.partial("é")


def test_a_typed_pad_takes_the_position_roberta_gives_it(checkpoints):
    """RoBERTa counts positions over the pieces that are not <pad> (fairseq's make_positions, kept by
    transformers): a <pad> typed in the text takes position 1 and the pieces after it one place lower than an
    arange; counted as an arange, everything after it drifted from the reference by up to 3.4 (issue 16)."""
    directory = checkpoints["roberta", "mlm"]
    ours = bert_core.load_pretrained(directory)
    hf = _reference(directory, "mlm", "roberta")
    tok = hf_tokenizer(directory, "roberta")
    text, pair = "the bank<pad> of the <mask> .", "the <pad>river ran"
    r = ours.analyze(text, pair)
    enc = tok(text, pair, return_tensors="pt")
    assert r.input_ids.tolist() == enc["input_ids"][0].tolist()
    pad = ours.config.pad_token_id
    assert r.tokens.count("<pad>") == 2
    expected = (
        transformers.models.roberta.modeling_roberta.RobertaEmbeddings.create_position_ids_from_input_ids(
            enc["input_ids"], pad
        )
    )
    assert r.position_ids.tolist() == expected[0].tolist()
    assert r.position_ids[r.tokens.index("<pad>")] == pad
    with torch.inference_mode():
        out = hf(**enc, output_attentions=True, output_hidden_states=True)
        # the encoder's own default positions (training's batches) count the same way
        default = ours.network.base(enc["input_ids"]).last_hidden_state
    np.testing.assert_allclose(r.attentions, torch.stack(out.attentions)[:, 0].numpy(), atol=TOL, rtol=0)
    np.testing.assert_allclose(
        r.hidden_states, torch.stack(out.hidden_states)[:, 0].numpy(), atol=TOL, rtol=0
    )
    np.testing.assert_allclose(default[0].numpy(), out.hidden_states[-1][0].numpy(), atol=TOL, rtol=0)
    probs = ours.predict_masks(text, pair, top_k=1)[0].as_pairs()[0][1]
    assert abs(probs - float(torch.softmax(out.logits[0, r.tokens.index("<mask>")], -1).max())) <= TOL


def test_head_roles_read_punctuation_as_the_analysed_model_marks_it(checkpoints):
    """README's `bert_core.head_roles(r)` read every text as WordPiece: RoBERTa's 'Ġ(' and ALBERT's '▁(' were
    words, so no head attending to them counted as a punctuation head."""
    import dataclasses

    from bert_core.pieces import WORDPIECE

    for arch in ("roberta", "albert"):
        m = bert_core.load_pretrained(checkpoints[arch, "mlm"])
        r = m.analyze("the bank ( by the river )")
        assert r.piece_style == m.info.piece_style
        # the tiny vocabularies have no marked bracket (RoBERTa's "Ġ", "("; ALBERT's "▁", "<unk>"): the pieces
        # a real one reads
        marker = m.info.piece_style.word_start_marker
        tokens = [marker + "(" if t in ("(", ")", "<unk>") else t for t in r.tokens]
        assert tokens.count(marker + "(") == 2
        r = dataclasses.replace(r, encoding=dataclasses.replace(r.encoding, tokens=tokens))
        own, wordpiece = bert_core.head_roles(r), bert_core.head_roles(r, style=WORDPIECE)
        assert (own.to_punctuation > wordpiece.to_punctuation).all(), arch
        explicit = bert_core.head_roles(r, style=m.info.piece_style)
        np.testing.assert_array_equal(own.to_punctuation, explicit.to_punctuation)
        default, told = (
            bert_core.role_stability([r, r]),
            bert_core.role_stability([r, r], style=m.info.piece_style),
        )
        np.testing.assert_array_equal(default.mean_scores["punctuation"], told.mean_scores["punctuation"])


def test_a_roberta_qa_window_counts_a_typed_pads_position_as_roberta_does(tmp_path):
    """Each window of a long passage is an input of its own to the model: its positions are counted afresh,
    over the pieces that are not <pad>, as transformers counts the window's ids."""
    from tests.variants import make_task_checkpoint

    m = bert_core.load_pretrained(make_task_checkpoint(tmp_path / "qa", "roberta", "qa"))
    hf = transformers.RobertaForQuestionAnswering.from_pretrained(
        tmp_path / "qa", attn_implementation="eager"
    )
    context = " ".join(["the river ran by the bank<pad> and"] * 12)
    windows = m._qa_windows("who <pad>sat?", context, stride=8)
    assert len(windows) > 2 and all("<pad>" in w.tokens for w in windows)
    create = transformers.models.roberta.modeling_roberta.RobertaEmbeddings.create_position_ids_from_input_ids
    for w in windows:
        ids = torch.from_numpy(np.array(w.input_ids))[None]
        assert w.position_ids.tolist() == create(ids, m.config.pad_token_id)[0].tolist()
    # and the start scores of a window are transformers' for those ids
    with torch.inference_mode():
        expected = hf(input_ids=torch.from_numpy(np.array(windows[1].input_ids))[None]).start_logits[0]
    ours = m._task_logits("qa", [windows[1]])[0, : len(windows[1]), 0]
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), atol=TOL, rtol=0)
