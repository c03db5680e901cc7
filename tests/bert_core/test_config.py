"""BertConfig mirrors config.json and refuses what it cannot honour, naming the key."""

from __future__ import annotations

import json

import pytest

from bert_core import BertConfig, ModelLoadError


def test_round_trip_and_unknown_keys_ignored(tmp_path):
    config = BertConfig(vocab_size=100, hidden_size=64, num_attention_heads=4, num_hidden_layers=3)
    path = tmp_path / "config.json"
    data = config.to_dict() | {"transformers_version": "5.0", "torch_dtype": "float32"}
    path.write_text(json.dumps(data))
    assert BertConfig.from_json(path) == config
    assert config.head_size == 16


def test_defaults_are_bert_base():
    c = BertConfig()
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.vocab_size) == (768, 12, 12, 30522)
    # 109.48M parameters in bert-base-uncased's BertModel (embeddings + encoder + pooler).
    assert c.parameter_estimate() == 109_482_240


def test_frozen():
    with pytest.raises(AttributeError):
        BertConfig().hidden_size = 10  # type: ignore[misc]


@pytest.mark.parametrize(
    "overrides,key",
    [
        ({"hidden_size": 100, "num_attention_heads": 12}, "hidden_size"),
        ({"num_attention_heads": 0}, "num_attention_heads"),
        ({"max_position_embeddings": 10**7}, "max_position_embeddings"),
        ({"hidden_act": "swiglu"}, "hidden_act"),
        ({"position_embedding_type": "rotary"}, "position_embedding_type"),
        ({"type_vocab_size": True}, "type_vocab_size"),
        ({"hidden_dropout_prob": -0.5}, "hidden_dropout_prob"),
        ({"pad_token_id": 10**6}, "pad_token_id"),
        ({"summary_activation": ["gelu"]}, "summary_activation"),
        ({"summary_type": 0}, "summary_type"),
        ({"summary_use_proj": "yes"}, "summary_use_proj"),
    ],
)
def test_invalid_values_name_the_key(overrides, key):
    with pytest.raises(ModelLoadError, match=key):
        BertConfig.from_dict(overrides)


def test_a_bert_position_table_too_small_for_one_piece_names_its_size_not_pad_token_id():
    with pytest.raises(ModelLoadError, match=r"^config key 'max_position_embeddings' = 2 is too small"):
        BertConfig.from_dict({"max_position_embeddings": 2})


def test_null_pad_token_id_means_zero():
    assert BertConfig.from_dict({"pad_token_id": None}).pad_token_id == 0


@pytest.mark.parametrize("value", [5, "BertModel", [1, 2]])
def test_architectures_must_be_a_list_of_names(value):
    with pytest.raises(ModelLoadError, match="architectures"):
        BertConfig.from_dict({"architectures": value})
