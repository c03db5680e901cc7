"""load_pretrained: checkpoint layouts, head detection, the hub path without a network, and every way a
checkpoint can be broken (each must give ModelLoadError with a message naming the problem, quickly)."""

from __future__ import annotations

import json
import logging
import math
import os
import pickle
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

import bert_core
from bert_core import MissingHeadError, ModelLoadError
from tests.conftest import TINY_VOCAB, make_checkpoint, write_vocab

TEXT = ("the cat sat on the bank", "we deposited cash")


def _outputs(model):
    r = model.analyze(*TEXT)
    return r.hidden_states, r.attentions


def _same_outputs(a, b):
    for x, y in zip(_outputs(a), _outputs(b), strict=True):
        np.testing.assert_array_equal(x, y)


def _rewrite_weights(directory: Path, transform) -> None:
    path = directory / "model.safetensors"
    state = load_file(str(path))
    save_file(transform(dict(state)), str(path))


# -- layouts ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind,pooler,mlm,nsp",
    [
        ("model", True, False, False),
        ("mlm", False, True, False),
        ("pretraining", True, True, True),
        ("nsp", True, False, True),
    ],
)
def test_heads_are_detected_never_invented(tmp_path, kind, pooler, mlm, nsp):
    model = bert_core.load_pretrained(make_checkpoint(tmp_path / kind, kind))
    assert (model.has_pooler, model.has_mlm_head, model.has_nsp_head) == (pooler, mlm, nsp)
    info = model.info
    assert (info.has_pooler, info.has_mlm_head, info.has_nsp_head) == (pooler, mlm, nsp)
    r = model.analyze("the cat sat")
    assert (r.pooled is not None) == pooler
    if mlm:
        assert len(model.fill_mask("the [MASK] sat")) == 1
    else:
        with pytest.raises(MissingHeadError, match="no MLM head"):
            model.fill_mask("the [MASK] sat")
    assert info.heads == tuple(name for name, present in (("mlm", mlm), ("nsp", nsp)) if present)
    if nsp:
        assert 0.0 <= model.next_sentence("the cat sat", "on the bank") <= 1.0
    else:
        # as the README promises: a missing head is an error naming it, never a silent None
        with pytest.raises(MissingHeadError, match="no NSP head"):
            model.next_sentence("the cat sat", "on the bank")


def test_bertmodel_checkpoint_has_no_bert_prefix(tmp_path):
    directory = make_checkpoint(tmp_path / "m", "model")
    assert not any(k.startswith("bert.") for k in load_file(str(directory / "model.safetensors")))
    assert bert_core.load_pretrained(directory).analyze("the dog").hidden_states.shape == (3, 4, 32)


def test_legacy_gamma_beta_and_decoder_names(tmp_path, tiny_checkpoint):
    reference = bert_core.load_pretrained(tiny_checkpoint)
    legacy = tmp_path / "legacy"
    shutil.copytree(tiny_checkpoint, legacy)

    def to_legacy(state):
        out = {}
        for key, value in state.items():
            key = key.replace("LayerNorm.weight", "LayerNorm.gamma").replace(
                "LayerNorm.bias", "LayerNorm.beta"
            )
            out[key] = value
        # Old checkpoints also saved the tied decoder and its bias twice, and the position_ids buffer.
        out["cls.predictions.decoder.weight"] = state["bert.embeddings.word_embeddings.weight"].clone()
        out["cls.predictions.decoder.bias"] = state["cls.predictions.bias"].clone()
        out["bert.embeddings.position_ids"] = torch.arange(64)[None]
        return out

    _rewrite_weights(legacy, to_legacy)
    _same_outputs(reference, bert_core.load_pretrained(legacy))
    np.testing.assert_array_equal(
        reference.predict_masks("the [MASK]")[0].probabilities,
        bert_core.load_pretrained(legacy).predict_masks("the [MASK]")[0].probabilities,
    )


def test_pytorch_bin_loads_with_same_outputs(tmp_path, tiny_checkpoint):
    directory = tmp_path / "bin"
    shutil.copytree(tiny_checkpoint, directory)
    state = load_file(str(directory / "model.safetensors"))
    (directory / "model.safetensors").unlink()
    torch.save(state, directory / "pytorch_model.bin")
    loaded = bert_core.load_pretrained(directory)
    _same_outputs(bert_core.load_pretrained(tiny_checkpoint), loaded)
    assert loaded.info.weights_files == ("pytorch_model.bin",)


def test_safetensors_preferred_over_bin(tmp_path, tiny_checkpoint):
    directory = tmp_path / "both"
    shutil.copytree(tiny_checkpoint, directory)
    (directory / "pytorch_model.bin").write_bytes(b"not a checkpoint at all")
    # the broken .bin is never read, and the model card says which file was
    assert bert_core.load_pretrained(directory).info.weights_files == ("model.safetensors",)


class _Payload:
    """Unpickling this runs os.system: what a malicious checkpoint would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_bin_with_code_payload_is_refused_and_nothing_runs(tmp_path, tiny_checkpoint):
    directory = tmp_path / "evil"
    shutil.copytree(tiny_checkpoint, directory)
    (directory / "model.safetensors").unlink()
    marker = tmp_path / "payload-ran"
    state = dict(load_file(str(tiny_checkpoint / "model.safetensors")))
    state["bert.embeddings.word_embeddings.weight"] = _Payload(marker)
    with open(directory / "pytorch_model.bin", "wb") as fh:
        pickle.dump(state, fh)
    with pytest.raises(ModelLoadError, match="refused"):
        bert_core.load_pretrained(directory)
    assert not marker.exists()


def test_a_pickled_model_object_is_refused_in_a_few_words(tmp_path, tiny_checkpoint):
    """torch's own 1,350 characters came through whole, terminal escape codes and its advice to load with
    weights_only=False included: the very thing the refusal exists to avoid."""
    import torch

    directory = tmp_path / "whole"
    shutil.copytree(tiny_checkpoint, directory)
    (directory / "model.safetensors").unlink()
    torch.save(torch.nn.Linear(2, 2), directory / "pytorch_model.bin")
    with pytest.raises(ModelLoadError) as refused:
        bert_core.load_pretrained(directory)
    said = str(refused.value)
    assert "it pickles a torch.nn.modules.linear.Linear object" in said and len(said) < 400
    assert "\x1b" not in said and "weights_only" not in said


def test_tokenizer_json_is_used_when_present(tmp_path, tiny_checkpoint):
    directory = tmp_path / "tj"
    shutil.copytree(tiny_checkpoint, directory)
    reference = bert_core.load_pretrained(tiny_checkpoint)
    reference.tokenizer.backend.save(str(directory / "tokenizer.json"))
    (directory / "vocab.txt").unlink()
    loaded = bert_core.load_pretrained(directory)
    assert loaded.analyze(*TEXT).tokens == reference.analyze(*TEXT).tokens


# -- the hub, without a network -------------------------------------------------------------------------


def _populate_cache(cache: Path, repo_id: str, files_from: Path) -> None:
    """Lay files out exactly as huggingface_hub's cache does: blobs, a snapshot per commit, refs/main."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo_dir = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (repo_dir / "blobs").mkdir()
    for file in files_from.iterdir():
        blob = repo_dir / "blobs" / f"blob-{file.name}"
        shutil.copy(file, blob)
        (snapshot / file.name).symlink_to(os.path.relpath(blob, snapshot))
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(commit)


def test_hub_id_loads_offline_from_cache(tmp_path, tiny_checkpoint, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    cache = tmp_path / "hf-cache"
    _populate_cache(cache, "someone/tiny-bert", tiny_checkpoint)
    seen = []
    model = bert_core.load_pretrained("someone/tiny-bert", cache_dir=cache, progress=seen.append)
    _same_outputs(model, bert_core.load_pretrained(tiny_checkpoint))
    assert any("config.json" in s for s in seen)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_hub_and_empty_cache_says_so(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)

    def no_waiting(seconds):  # huggingface_hub's retry loop sleeps between attempts; we must not get there
        raise AssertionError(f"slept {seconds} s: the loader retried an unreachable hub")

    monkeypatch.setattr(time, "sleep", no_waiting)
    with pytest.raises(ModelLoadError, match="cannot be reached and the model is not in the local"):
        bert_core.load_pretrained(
            "someone/not-cached", cache_dir=tmp_path / "empty", endpoint=f"http://127.0.0.1:{_closed_port()}"
        )


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "all_proxy"])
def test_a_proxy_nobody_answers_is_no_way_to_the_hub(tmp_path, monkeypatch, variable):
    """A proxy variable was taken for a connection: with the proxy down, the hub library retried through it
    for minutes. The probe now asks through the hub library's own client, which takes the proxy (and NO_PROXY)
    as its downloads will."""
    import http.server
    import threading

    import huggingface_hub
    import huggingface_hub.constants

    from bert_core.checkpoints.files import hub_reachable

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802 - http.server's name
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    for name in (
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(
        time, "sleep", lambda s: pytest.fail(f"slept {s} s: the loader retried through a dead proxy")
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)  # a hub that answers...
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    # the hub library's client reads the proxy variables when it is made: made again as each setting changes
    huggingface_hub.close_session()
    try:
        assert hub_reachable(endpoint)
        monkeypatch.setenv(variable, f"http://127.0.0.1:{_closed_port()}")  # ...behind a proxy that doesn't
        huggingface_hub.close_session()
        assert not hub_reachable(endpoint)
        with pytest.raises(ModelLoadError, match="cannot be reached and the model is not in the local"):
            bert_core.load_pretrained("someone/not-cached", cache_dir=tmp_path / "empty", endpoint=endpoint)
        # NO_PROXY as the hub's client reads it: ".localhost" spares subdomains only, where the standard library
        # (which the probe once followed) spares "localhost" too and went straight to a hub the client can't reach
        monkeypatch.setenv("NO_PROXY", ".localhost")
        huggingface_hub.close_session()
        assert not hub_reachable(f"http://localhost:{server.server_address[1]}")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        huggingface_hub.close_session()
        assert hub_reachable(endpoint)
        assert not hub_reachable("no url at all")
    finally:
        server.shutdown()
        huggingface_hub.close_session()


def test_offline_and_not_cached(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelLoadError, match="not in the local Hugging Face cache"):
        bert_core.load_pretrained("bert-base-uncased", cache_dir=tmp_path / "empty")


# -- broken checkpoints -----------------------------------------------------------------------------------


def _copy(tmp_path, tiny_checkpoint, name="broken") -> Path:
    directory = tmp_path / name
    shutil.copytree(tiny_checkpoint, directory)
    return directory


def test_missing_directory(tmp_path):
    with pytest.raises(ModelLoadError, match="no such directory"):
        bert_core.load_pretrained(tmp_path / "does" / "not" / "exist")


@pytest.mark.parametrize(
    ("source", "said"), [(3, "got int 3"), (None, "got NoneType None"), ("  ", "no model given")]
)
def test_a_source_that_is_no_string_is_named_for_what_it_is(source, said):
    """load_pretrained(3) was told "no model given"."""
    with pytest.raises(ModelLoadError, match=said):
        bert_core.load_pretrained(source)


def test_file_instead_of_directory(tmp_path, tiny_checkpoint):
    with pytest.raises(ModelLoadError, match="is a file"):
        bert_core.load_pretrained(tiny_checkpoint / "config.json")


def test_directory_without_config(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="no config.json"):
        bert_core.load_pretrained(tmp_path / "empty")


@pytest.mark.parametrize(
    "content,match",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2, 3]", "must be a JSON object"),
        ('{"hidden_size": "big"}', "'hidden_size' must be an integer"),
    ],
)
def test_malformed_config(tmp_path, tiny_checkpoint, content, match):
    directory = _copy(tmp_path, tiny_checkpoint)
    (directory / "config.json").write_text(content)
    with pytest.raises(ModelLoadError, match=match):
        bert_core.load_pretrained(directory)


def test_missing_vocabulary(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    (directory / "vocab.txt").unlink()
    with pytest.raises(ModelLoadError, match="vocab"):
        bert_core.load_pretrained(directory)


def test_vocabulary_larger_than_embedding_table(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    write_vocab(directory, TINY_VOCAB + [f"extra{i}" for i in range(10)])
    with pytest.raises(ModelLoadError, match="vocabulary has .* entries but the embedding table"):
        bert_core.load_pretrained(directory)


def test_weights_that_do_not_match_the_config(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    config = json.loads((directory / "config.json").read_text())
    config["intermediate_size"] = 64
    (directory / "config.json").write_text(json.dumps(config))
    with pytest.raises(
        ModelLoadError, match=r"intermediate.dense.weight: checkpoint \(37, 32\), config expects \(64, 32\)"
    ):
        bert_core.load_pretrained(directory)


def test_config_with_more_layers_than_the_checkpoint(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    config = json.loads((directory / "config.json").read_text())
    for layers, expected in [  # the layer counts given both ways, more and fewer
        (3, r"lacks weights.*encoder.layer.2.*num_hidden_layers = 3; the .* has 2"),
        (1, r"does not know.*num_hidden_layers = 1; the checkpoint has 2\)$"),
    ]:
        (directory / "config.json").write_text(json.dumps({**config, "num_hidden_layers": layers}))
        with pytest.raises(ModelLoadError, match=expected):
            bert_core.load_pretrained(directory)


def test_weights_a_config_key_leaves_out_name_that_key(tmp_path, tiny_checkpoint):
    """Every unknown weight was put down to "a config with fewer layers", every missing one to "more layers":
    a segment table, an embedding projection or an untied decoder is a config key's doing, named now."""
    directory = _copy(tmp_path, tiny_checkpoint)
    config = json.loads((directory / "config.json").read_text())
    for changes, expected in [
        ({"type_vocab_size": 0}, r"token_type_embeddings.*\(the config has type_vocab_size = 0\)$"),
        ({"embedding_size": 16}, r"lacks.*embeddings_project.*embedding_size = 16 and hidden_size = 32"),
        ({"tie_word_embeddings": False}, r"lacks.*decoder.weight.*tie_word_embeddings = false"),
    ]:
        (directory / "config.json").write_text(json.dumps({**config, **changes}))
        with pytest.raises(ModelLoadError, match=expected):
            bert_core.load_pretrained(directory)


def test_the_families_own_keys_are_named_in_weight_errors(tmp_path):
    """DistilBERT's layer count was named num_hidden_layers, a key its config.json lacks; its untied decoder
    got no hint; ELECTRA's embedding_size, taken as transformers' 128 when left out, went unmentioned."""
    from tests.variants import make_variant

    distil = make_variant(tmp_path / "distil", "distilbert", "mlm")
    config = json.loads((distil / "config.json").read_text())
    for changes, expected in [
        ({"n_layers": 3}, r"lacks.*layer.2.*\(the config has n_layers = 3; the checkpoint has 2\)$"),
        ({"tie_word_embeddings": False}, r"lacks.*vocab_projector.weight.*tie_word_embeddings = false"),
    ]:
        (distil / "config.json").write_text(json.dumps({**config, **changes}))
        with pytest.raises(ModelLoadError, match=expected):
            bert_core.load_pretrained(distil)
    # left out, they are named as assumed, in DistilBERT's own words
    (distil / "config.json").write_text(
        json.dumps({k: v for k, v in config.items() if k not in ("n_layers", "dim")})
    )
    with pytest.raises(
        ModelLoadError, match=r"has 2\) \(config.json does not give dim, n_layers, so .*n_layers = 6\)$"
    ):
        bert_core.load_pretrained(distil)
    electra = make_variant(tmp_path / "electra", "electra", "mlm")
    config = json.loads((electra / "config.json").read_text())
    del config["embedding_size"]
    (electra / "config.json").write_text(json.dumps(config))
    with pytest.raises(
        ModelLoadError, match=r"does not give embedding_size, .*assumed: embedding_size = 128\)$"
    ):
        bert_core.load_pretrained(electra)


def test_distilbert_weights_under_a_config_without_model_type_name_the_family(tmp_path):
    from tests.variants import make_variant

    directory = make_variant(tmp_path / "distil", "distilbert", "mlm")
    config = json.loads((directory / "config.json").read_text())
    del config["model_type"]
    (directory / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="named as DistilBERT's; set model_type to 'distilbert'"):
        bert_core.load_pretrained(directory)


def test_a_config_without_sizes_says_the_defaults_were_assumed(tmp_path, tiny_checkpoint):
    """An empty config.json read as bert-base's sizes, and the error named only a weight the tiny checkpoint
    lacks, which sent the reader to the checkpoint instead of the config."""
    directory = _copy(tmp_path, tiny_checkpoint)
    (directory / "config.json").write_text("{}")
    with pytest.raises(ModelLoadError) as caught:
        bert_core.load_pretrained(directory)
    assert str(caught.value).endswith(
        "(config.json does not give vocab_size, hidden_size, num_hidden_layers, num_attention_heads, "
        "intermediate_size, so the defaults were assumed: vocab_size = 30522, hidden_size = 768, "
        "num_hidden_layers = 12, num_attention_heads = 12, intermediate_size = 3072)"
    )
    # a config that gives every size gets no such note
    config = json.loads((tiny_checkpoint / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "intermediate_size": 64}))
    with pytest.raises(ModelLoadError) as caught:
        bert_core.load_pretrained(directory)
    assert "were assumed" not in str(caught.value)


def test_weights_sharded_across_bin_files_are_named_as_unread(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    (directory / "model.safetensors").rename(directory / "pytorch_model-00001-of-00001.bin")
    (directory / "pytorch_model.bin.index.json").write_text('{"weight_map": {}}')
    with pytest.raises(
        ModelLoadError, match=r"^no weights in .*sharded across several .bin files are not read"
    ):
        bert_core.load_pretrained(directory)


def test_unexpected_keys_are_named(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    _rewrite_weights(directory, lambda s: {**s, "bert.encoder.layer.0.extra.weight": torch.zeros(3)})
    with pytest.raises(ModelLoadError, match=r"does not know: bert.encoder.layer.0.extra.weight"):
        bert_core.load_pretrained(directory)
    # one stray key of a layer 5, or one lost from the last layer, is no count of layers
    for change in (
        lambda s: {**s, "bert.encoder.layer.5.output.dense.bias": torch.zeros(32)},
        lambda s: {k: v for k, v in s.items() if k != "bert.encoder.layer.1.output.dense.bias"},
    ):
        _rewrite_weights(directory := _copy(tmp_path, tiny_checkpoint, f"c{id(change)}"), change)
        with pytest.raises(ModelLoadError) as caught:
            bert_core.load_pretrained(directory)
        assert "num_hidden_layers" not in str(caught.value) and "different config.json" in str(caught.value)


def test_truncated_safetensors(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    path = directory / "model.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ModelLoadError, match="not a readable safetensors file"):
        bert_core.load_pretrained(directory)


def test_random_bytes_safetensors(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    (directory / "model.safetensors").write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(ModelLoadError, match="not a readable safetensors file"):
        bert_core.load_pretrained(directory)


def test_random_bytes_bin(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    (directory / "model.safetensors").unlink()
    (directory / "pytorch_model.bin").write_bytes(np.random.default_rng(1).bytes(4096))
    with pytest.raises(ModelLoadError, match="pytorch_model.bin"):
        bert_core.load_pretrained(directory)


def test_no_weights_at_all(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    (directory / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="no weights"):
        bert_core.load_pretrained(directory)


@pytest.mark.parametrize(
    "key,value,match",
    [
        ("hidden_size", 10**9, "'hidden_size' = 1000000000 is outside"),
        ("vocab_size", 10**12, "'vocab_size'"),
        ("num_hidden_layers", 0, "'num_hidden_layers'"),
        ("hidden_size", 33, "not divisible"),
        ("hidden_act", "xielu", "'hidden_act'"),
        ("position_embedding_type", "relative_key", "'position_embedding_type'"),
        ("layer_norm_eps", float("nan"), "'layer_norm_eps'"),
    ],
)
def test_absurd_or_unsupported_config_is_refused_before_allocating(
    tmp_path, tiny_checkpoint, key, value, match, monkeypatch
):
    directory = _copy(tmp_path, tiny_checkpoint)
    config = json.loads((directory / "config.json").read_text())
    config[key] = value
    (directory / "config.json").write_text(json.dumps(config))

    def never(*args, **kwargs):
        raise AssertionError("weights were read or a network built before the config was refused")

    monkeypatch.setattr(bert_core.checkpoints.load, "open_state_dict", never)
    monkeypatch.setattr(bert_core.checkpoints.load, "build_network", never)
    with pytest.raises(ModelLoadError, match=match):
        bert_core.load_pretrained(directory)


def test_total_size_cap(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    config = json.loads((directory / "config.json").read_text())
    config.update(hidden_size=8192, num_attention_heads=64, intermediate_size=32768, num_hidden_layers=96)
    (directory / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="parameters, more than"):
        bert_core.load_pretrained(directory)


def test_other_architecture_is_refused(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    config = json.loads((directory / "config.json").read_text())
    config["model_type"] = "gpt2"
    (directory / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="reads these model types: bert"):
        bert_core.load_pretrained(directory)


def test_cuda_requested_without_gpu(tiny_checkpoint):
    if torch.cuda.is_available():
        model = bert_core.load_pretrained(tiny_checkpoint, device="cuda")
        assert model.analyze("the cat").attentions.dtype == np.float32
    else:
        with pytest.raises(ModelLoadError, match="no CUDA GPU"):
            bert_core.load_pretrained(tiny_checkpoint, device="cuda")


def test_sharded_safetensors_checkpoint(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint, "sharded")
    state = load_file(str(directory / "model.safetensors"))
    (directory / "model.safetensors").unlink()
    keys = sorted(state)
    halves = {"model-00001-of-00002.safetensors": keys[::2], "model-00002-of-00002.safetensors": keys[1::2]}
    weight_map = {}
    for name, part in halves.items():
        save_file({k: state[k] for k in part}, str(directory / name))
        weight_map.update(dict.fromkeys(part, name))
    (directory / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map})
    )
    loaded = bert_core.load_pretrained(directory)
    _same_outputs(bert_core.load_pretrained(tiny_checkpoint), loaded)
    assert loaded.info.weights_files == tuple(halves)
    (directory / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="missing weights shard"):
        bert_core.load_pretrained(directory)


def test_fp16_checkpoint_is_computed_in_fp32(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint, "half")
    _rewrite_weights(directory, lambda s: {k: v.half() for k, v in s.items()})
    r = bert_core.load_pretrained(directory).analyze("the bank")
    assert r.attentions.dtype == np.float32 and np.isfinite(r.hidden_states).all()


@pytest.mark.parametrize(
    "head,task", [("BertForSequenceClassification", "classify"), ("BertForQuestionAnswering", "qa")]
)
def test_fine_tuned_head_loads_when_config_names_it_and_is_set_aside_otherwise(tmp_path, head, task):
    import transformers

    config = transformers.BertConfig(
        vocab_size=len(TINY_VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
    )
    torch.manual_seed(0)
    hf = getattr(transformers, head)(config).eval()
    hf.save_pretrained(tmp_path / head)
    write_vocab(tmp_path / head)
    model = bert_core.load_pretrained(tmp_path / head)
    assert model.info.task == task and model.info.heads == (task,) and not model.info.ignored_weights
    # Without "architectures" the keys cannot say a sentence from a token classifier: set aside, reported.
    _edit_config(tmp_path / head, architectures=None)
    model = bert_core.load_pretrained(tmp_path / head)
    assert model.info.task is None and model.info.ignored_weights
    assert all(k.startswith(("classifier.", "qa_outputs.")) for k in model.info.ignored_weights)
    r = model.analyze("the cat sat")
    with torch.no_grad():
        out = hf.bert(input_ids=torch.tensor([r.input_ids.tolist()]), output_hidden_states=True)
    np.testing.assert_allclose(r.hidden_states[-1], out.hidden_states[-1][0].numpy(), atol=1e-5)
    assert not model.has_mlm_head


# -- the safetensors reader (plain reads into owned memory, not a map of the whole file) ------------------


def test_safetensors_reader_matches_the_reference_library(tmp_path):
    from bert_core.checkpoints.files import read_safetensors

    g = torch.Generator().manual_seed(0)
    tensors = {
        "a.weight": torch.randn(7, 5, generator=g),
        "b.half": torch.randn(3, 4, generator=g).half(),
        "c.bf16": torch.randn(6, generator=g).bfloat16(),
        "d.ids": torch.arange(12, dtype=torch.int64).reshape(3, 4),
        "e.flags": torch.tensor([True, False, True]),
        "f.scalar": torch.tensor(2.5),
        "g.empty": torch.zeros(0, 4),
        "h.double": torch.randn(2, 2, generator=g, dtype=torch.float64),
    }
    path = tmp_path / "x.safetensors"
    save_file(tensors, str(path), metadata={"format": "pt"})
    ours, theirs = read_safetensors(path), load_file(str(path))
    assert set(ours) == set(theirs) == set(tensors)
    for key, value in theirs.items():
        assert ours[key].dtype == value.dtype and ours[key].shape == value.shape, key
        assert torch.equal(ours[key], value), key
        assert ours[key].is_contiguous()


def _raw_safetensors(path, header: dict, data: bytes) -> None:
    blob = json.dumps(header).encode()
    path.write_bytes(len(blob).to_bytes(8, "little") + blob + data)


def _f32(shape, offsets):
    return {"dtype": "F32", "shape": shape, "data_offsets": offsets}


@pytest.mark.parametrize(
    "header,data,message",
    [
        ({"x": _f32([2], [0, 8])}, b"\0" * 4, "do not fit"),
        ({"x": _f32([3], [0, 8])}, b"\0" * 8, "do not fit"),
        ({"x": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8, "does not read"),
        ({"x": _f32([2], [0, 8]), "y": _f32([2], [4, 12])}, b"\0" * 12, "overlap"),
        ({"x": _f32([-2], [0, 8])}, b"\0" * 8, "bad header entry"),
        ({"x": _f32([2.9], [0, 8])}, b"\0" * 8, "list of integers"),
        ({"x": _f32([True, 2], [0, 8])}, b"\0" * 8, "list of integers"),
        ({"x": _f32("22", [0, 16])}, b"\0" * 16, "list of integers"),
        ({"x": _f32([2], [0, 8]), "y": _f32([2], [12, 20])}, b"\0" * 20, "unindexed bytes before 'y'"),
        ({"x": _f32([2], [0, 8])}, b"\0" * 12, "unindexed bytes after"),
        ({"x": _f32([2], [0, 8]), "__metadata__": {"a": 1}}, b"\0" * 8, "__metadata__"),
        ({"x": {**_f32([2], [0, 8]), "extra": 1}}, b"\0" * 8, "bad header entry"),
    ],
)
def test_safetensors_reader_refuses_malformed_files(tmp_path, header, data, message):
    from bert_core.checkpoints.files import read_safetensors

    path = tmp_path / "bad.safetensors"
    _raw_safetensors(path, header, data)
    with pytest.raises(ValueError, match=message):
        read_safetensors(path)


def test_safetensors_header_longer_than_the_file_is_refused(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint)
    path = directory / "model.safetensors"
    path.write_bytes((10**12).to_bytes(8, "little") + b"{}")
    with pytest.raises(ModelLoadError, match="header claims"):
        bert_core.load_pretrained(directory)


@pytest.mark.parametrize(
    "blob,message",
    [
        (b'{"x": {"dtype": "F32", "shape": [Infinity], "data_offsets": [0, 8]}}', "not a JSON number"),
        (b"[" * 100000, "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
    ],
)
def test_safetensors_hostile_headers_give_model_load_errors(tmp_path, tiny_checkpoint, blob, message):
    directory = _copy(tmp_path, tiny_checkpoint)
    (directory / "model.safetensors").write_bytes(len(blob).to_bytes(8, "little") + blob)
    with pytest.raises(ModelLoadError, match=message):
        bert_core.load_pretrained(directory)


def _with_extra_tensor(path, name: str, shape: list[int]) -> None:
    """Add a float32 tensor `name` to a safetensors file as a hole: the file grows to the size the header
    declares, but no bytes are written (a sparse file, as an optimizer's state copied in by mistake can be)."""
    header_len = int.from_bytes(path.read_bytes()[:8], "little")
    raw = path.read_bytes()
    header = json.loads(raw[8 : 8 + header_len])
    data = raw[8 + header_len :]
    header[name] = _f32(shape, [len(data), len(data) + 4 * math.prod(shape)])
    _raw_safetensors(path, header, data)
    with open(path, "r+b") as f:
        f.truncate(f.seek(0, 2) + 4 * math.prod(shape))


def test_weights_the_model_does_not_take_are_never_read(tmp_path, tiny_checkpoint, caplog):
    """Names and shapes are checked against the config from the header alone: a file that also holds 4 TB
    the model does not know is refused at once by name (reading first ran out of memory), and the weights of
    a fine-tuning head config.json does not name are set aside unread."""
    directory = _copy(tmp_path, tiny_checkpoint)
    _with_extra_tensor(directory / "model.safetensors", "junk.optimizer_state", [2**20, 2**20])
    with pytest.raises(ModelLoadError, match="does not know: bert.junk.optimizer_state"):
        bert_core.load_pretrained(directory)

    directory = _copy(tmp_path, tiny_checkpoint, "with_head")
    _with_extra_tensor(directory / "model.safetensors", "classifier.weight", [2**20, 2**20])
    with caplog.at_level(logging.INFO, logger="bert_core.checkpoints.load"):
        model = bert_core.load_pretrained(directory)
    assert "classifier.weight" in caplog.text and model.analyze("the cat").tokens[0] == "[CLS]"


def test_a_weights_file_replaced_between_its_header_and_its_data_is_refused(tmp_path, tiny_checkpoint):
    """Its bytes would be read at the old header's offsets: a model of garbage weights, without an error."""
    import shutil

    from bert_core.checkpoints.files import open_state_dict

    directory = _copy(tmp_path, tiny_checkpoint)
    stored = open_state_dict(directory)
    weights = directory / "model.safetensors"
    replacement = tmp_path / "other.safetensors"
    shutil.copy(weights, replacement)
    _with_extra_tensor(replacement, "aaa.first", [64])  # another layout, copied over the checked one
    replacement.replace(weights)
    with pytest.raises(ModelLoadError, match="changed after its header was read"):
        stored.read(stored.tensors)


def test_safetensors_reader_reads_unsigned_and_float8(tmp_path):
    from bert_core.checkpoints.files import read_safetensors

    tensors = {
        "u16": torch.arange(6, dtype=torch.int32).to(torch.uint16),
        "u32": torch.arange(6, dtype=torch.int64).to(torch.uint32),
        "f8": torch.linspace(-2, 2, 8).to(torch.float8_e4m3fn),
        "f8b": torch.linspace(-2, 2, 8).to(torch.float8_e5m2),
    }
    path = tmp_path / "x.safetensors"
    save_file(tensors, str(path))
    ours, theirs = read_safetensors(path), load_file(str(path))
    for key, value in theirs.items():
        assert ours[key].dtype == value.dtype
        assert torch.equal(ours[key].view(torch.uint8), value.view(torch.uint8)), key


def test_loaded_weights_are_not_a_memory_map_of_the_file(tmp_path, tiny_checkpoint):
    """Packing frees the dense weights only if they are the process's own memory, not views of a map."""
    directory = _copy(tmp_path, tiny_checkpoint)
    model = bert_core.load_pretrained(directory)
    maps = Path("/proc/self/maps")
    if not maps.exists():
        pytest.skip("needs Linux /proc to list memory maps")
    assert str(directory / "model.safetensors") not in maps.read_text()
    assert model.network.is_packed


def test_untied_decoder_bias_follows_transformers(tmp_path):
    """An untied checkpoint may hold a decoder.bias that differs from predictions.bias: transformers adds
    decoder.bias, so must we."""
    import transformers

    directory = make_checkpoint(tmp_path, "mlm", seed=4, tie_word_embeddings=False)
    path = directory / "model.safetensors"
    state = dict(load_file(str(path)))
    state["cls.predictions.bias"] = torch.zeros_like(state["cls.predictions.bias"])
    state["cls.predictions.decoder.bias"] = torch.linspace(
        -1, 1, state["cls.predictions.decoder.bias"].numel()
    )
    save_file(state, str(path), metadata={"format": "pt"})
    ours = bert_core.load_pretrained(directory)
    assert not ours.network.cls.predictions.tied
    hf = transformers.BertForMaskedLM.from_pretrained(directory, attn_implementation="eager").eval()
    text = "the cat sat on the [MASK] of the river"
    (pred,) = ours.predict_masks(text, top_k=5)
    enc = ours.encode(text)
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor([list(enc.input_ids)])).logits[0]
    top = torch.topk(torch.softmax(logits[pred.position], -1), 5)
    assert list(pred.token_ids) == top.indices.tolist()
    np.testing.assert_allclose(pred.probabilities, top.values.numpy(), atol=1e-5)


@pytest.mark.parametrize(
    "index",
    [
        "{not json",
        json.dumps({"metadata": {}}),
        json.dumps({"weight_map": ["model-00001-of-00002.safetensors"]}),
        json.dumps({"weight_map": "model.safetensors"}),
        json.dumps({"weight_map": {}}),
        json.dumps({"weight_map": {"bert.x": 5}}),
        json.dumps({"weight_map": {"bert.x": "../elsewhere/model.safetensors"}}),
    ],
)
def test_a_malformed_shard_index_is_a_load_error(tmp_path, tiny_checkpoint, index):
    directory = _copy(tmp_path, tiny_checkpoint, "bad-index")
    (directory / "model.safetensors").unlink()
    (directory / "model.safetensors.index.json").write_text(index)
    with pytest.raises(ModelLoadError, match="not a valid safetensors index"):
        bert_core.load_pretrained(directory)


@pytest.mark.parametrize("dtype", [torch.int32, torch.bool])
def test_integer_weights_are_a_load_error_naming_the_key(tmp_path, tiny_checkpoint, dtype):
    directory = _copy(tmp_path, tiny_checkpoint, "int-weights")
    key = "bert.encoder.layer.0.attention.self.query.weight"
    _rewrite_weights(directory, lambda s: {**s, key: s[key].to(dtype)})
    with pytest.raises(ModelLoadError, match="floating point.*" + key.replace(".", r"\.")):
        bert_core.load_pretrained(directory)


def test_an_absurd_dimension_in_a_safetensors_header_is_a_load_error(tmp_path, tiny_checkpoint):
    directory = _copy(tmp_path, tiny_checkpoint, "huge-dim")
    path = directory / "model.safetensors"
    blob = path.read_bytes()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8 : 8 + n])
    header["extra.empty"] = {"dtype": "F32", "shape": [0, 2**70], "data_offsets": [0, 0]}
    raw = json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + blob[8 + n :])
    with pytest.raises(ModelLoadError):
        bert_core.load_pretrained(directory)


@pytest.mark.parametrize("flag", ["is_decoder", "add_cross_attention"])
def test_a_decoder_bert_is_refused_not_run_as_an_encoder(tmp_path, tiny_checkpoint, flag):
    directory = _copy(tmp_path, tiny_checkpoint, "decoder")
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps(config | {flag: True}))
    with pytest.raises(ModelLoadError, match=f"'{flag}' is true.*decoder"):
        bert_core.load_pretrained(directory)
    (directory / "config.json").write_text(json.dumps(config | {flag: False}))
    assert bert_core.load_pretrained(directory).analyze("the cat").num_layers == 2


@pytest.mark.parametrize(
    "content,expected",
    [
        ('{"longest_sequence": 20}', 20),
        ('{"longest_sequence": 64}', None),  # every position of the 64 was trained
        ('{"longest_sequence": "20"}', None),
        ('{"longest_sequence": true}', None),
        ("[1, 2]", None),
        ("{broken", None),
        ('{"step": 3}', None),
    ],
)
def test_the_trained_length_is_read_from_pretraining_json_or_left_unknown(
    tmp_path, tiny_checkpoint, content, expected
):
    directory = _copy(tmp_path, tiny_checkpoint, "recorded")
    (directory / "pretraining.json").write_text(content)
    assert bert_core.load_pretrained(directory).info.trained_length == expected


def test_an_untied_head_state_dict_loads_into_transformers_as_is(tmp_path):
    import transformers

    directory = make_checkpoint(tmp_path / "untied", "mlm", seed=3, tie_word_embeddings=False)
    model = bert_core.load_pretrained(directory)
    state = model.network.state_dict()
    assert torch.equal(state["cls.predictions.decoder.bias"], state["cls.predictions.bias"])
    hf = transformers.BertForMaskedLM(transformers.BertConfig.from_pretrained(directory)).eval()
    missing, unexpected = hf.load_state_dict(state, strict=False)
    assert [k for k in missing if "position_ids" not in k] == [] and unexpected == []
    enc = model.encode("the cat sat on the [MASK]")
    position = enc.tokens.index("[MASK]")
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor(enc.input_ids[None])).logits[0, position]
    ours = model.predict_masks("the cat sat on the [MASK]", top_k=5)[0]
    assert torch.topk(logits, 5).indices.tolist() == ours.token_ids
    # and back: a state dict with both names (or only decoder.bias) loads strictly
    again = bert_core.load_pretrained(directory)
    again.network.load_state_dict(state, strict=True)
    only_decoder = {k: v for k, v in state.items() if k != "cls.predictions.bias"}
    again.network.load_state_dict(only_decoder, strict=True)
    assert torch.equal(again.network.cls.predictions.bias, state["cls.predictions.bias"])


def _edit_config(directory, **changes) -> None:
    path = directory / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))


def test_loading_in_a_fresh_process_does_not_import_torch_dynamo(tiny_checkpoint):
    """nn.Embedding's normal_ on the meta device imports torch._dynamo, about 1 s of a process's first load;
    the network is built without it, and its weights are still the checkpoint's (the parity tests)."""
    code = (
        "import sys, bert_core; bert_core.load_pretrained(sys.argv[1]).analyze('the cat'); "
        "print('torch._dynamo' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code, str(tiny_checkpoint)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "False"
