"""The hub path for real, without the internet: a minimal hub server on 127.0.0.1 serving a tiny checkpoint.

It answers `HEAD`/`GET /{repo}/resolve/{revision}/{file}` with the headers huggingface_hub reads (commit, etag,
size), and 404 + X-Error-Code for files or repositories it lacks, like the real hub.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

import bert_core
from bert_core import ModelLoadError

REPO = "tester/tiny-bert"
COMMIT = "a" * 40


class _Hub:
    def __init__(self, files: Path) -> None:
        self.files = files
        self.requests: list[tuple[str, str]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _answer(self, with_body: bool) -> None:
                hub.requests.append((self.command, self.path))
                parts = self.path.split("?")[0].strip("/").split("/")
                # owner/name/resolve/revision/filename
                if len(parts) != 5 or parts[2] != "resolve":
                    self.send_response(404)
                    self.end_headers()
                    return
                repo, filename = "/".join(parts[:2]), parts[4]
                if repo != REPO:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "RepoNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path = hub.files / filename
                if not path.is_file():
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("X-Repo-Commit", COMMIT)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = path.read_bytes()
                self.send_response(200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", '"' + hashlib.sha256(body).hexdigest() + '"')
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if with_body:
                    self.wfile.write(body)

            def do_HEAD(self) -> None:  # noqa: N802
                self._answer(False)

            def do_GET(self) -> None:  # noqa: N802
                self._answer(True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _Hub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def online(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def test_download_fetches_only_needed_files_then_works_offline(
    tmp_path, tiny_checkpoint, online, monkeypatch
):
    served = tmp_path / "served"
    served.mkdir()
    for f in tiny_checkpoint.iterdir():
        (served / f.name).write_bytes(f.read_bytes())
    (served / "flax_model.msgpack").write_bytes(b"x" * 1000)  # must not be downloaded
    (served / "pytorch_model.bin").write_bytes(b"y" * 1000)  # nor this: safetensors exists
    cache = tmp_path / "cache"
    with _Hub(served) as hub:
        model = bert_core.load_pretrained(REPO, cache_dir=cache, endpoint=hub.endpoint)
        fetched = {path.rsplit("/", 1)[1] for method, path in hub.requests if method == "GET"}
    assert {"config.json", "model.safetensors", "vocab.txt"} <= fetched
    assert not fetched & {"flax_model.msgpack", "pytorch_model.bin"}
    reference = bert_core.load_pretrained(tiny_checkpoint)
    np.testing.assert_array_equal(
        model.analyze("the bank").hidden_states, reference.analyze("the bank").hidden_states
    )

    # The server is gone: the same id now loads from the cache, online mode or not, without asking the hub.
    import huggingface_hub

    def no_download(*args, **kwargs):
        raise AssertionError("a cached model must load without contacting the hub")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(huggingface_hub, "hf_hub_download", no_download)
        again = bert_core.load_pretrained(REPO, cache_dir=cache, endpoint=hub.endpoint)
    np.testing.assert_array_equal(
        again.analyze("the bank").attentions, reference.analyze("the bank").attentions
    )
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    bert_core.load_pretrained(REPO, cache_dir=cache)


def test_unknown_repository(tmp_path, tiny_checkpoint, online):
    with (
        _Hub(tiny_checkpoint) as hub,
        pytest.raises(ModelLoadError, match="no model 'tester/other' on the hub"),
    ):
        bert_core.load_pretrained("tester/other", cache_dir=tmp_path / "c", endpoint=hub.endpoint)


def test_repository_without_weights(tmp_path, tiny_checkpoint, online):
    served = tmp_path / "served"
    served.mkdir()
    for name in ("config.json", "vocab.txt"):
        (served / name).write_bytes((tiny_checkpoint / name).read_bytes())
    with _Hub(served) as hub, pytest.raises(ModelLoadError, match="has neither model.safetensors nor"):
        bert_core.load_pretrained(REPO, cache_dir=tmp_path / "c", endpoint=hub.endpoint)
    # weights sharded across .bin files are said to be there, and not read
    (served / "pytorch_model.bin.index.json").write_text('{"weight_map": {"a": "pytorch_model-1.bin"}}')
    with (
        _Hub(served) as hub,
        pytest.raises(ModelLoadError, match=r"pytorch_model.bin \(its weights are sharded"),
    ):
        bert_core.load_pretrained(REPO, cache_dir=tmp_path / "d", endpoint=hub.endpoint)


@pytest.mark.parametrize("index", ["{not json", '{"metadata": {}}', '{"weight_map": ["a.safetensors"]}'])
def test_repository_with_a_malformed_shard_index(tmp_path, tiny_checkpoint, online, index):
    served = tmp_path / "served"
    served.mkdir()
    for name in ("config.json", "vocab.txt"):
        (served / name).write_bytes((tiny_checkpoint / name).read_bytes())
    (served / "model.safetensors.index.json").write_text(index)
    with _Hub(served) as hub, pytest.raises(ModelLoadError, match="not a valid safetensors index"):
        bert_core.load_pretrained(REPO, cache_dir=tmp_path / "c", endpoint=hub.endpoint)


def test_fresh_process_without_network_fails_fast_with_the_reason(tmp_path):
    """No monkeypatching: a clean interpreter, a hub endpoint nobody listens on, an empty cache."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = (
        "import bert_core\n"
        "try:\n"
        "    bert_core.load_pretrained('bert-base-uncased')\n"
        "except bert_core.ModelLoadError as e:\n"
        "    print('MODELLOADERROR', e)\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HF_HUB_OFFLINE": "0",
        "HF_ENDPOINT": f"http://127.0.0.1:{port}",
        "HF_HOME": str(tmp_path / "hf"),
    }
    # timeout= is only a guard against a hang; what is checked is that no retry loop ran.
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert "MODELLOADERROR" in out.stdout, out.stderr
    assert "cannot be reached" in out.stdout and "not in the local Hugging Face cache" in out.stdout
    assert "Retrying" not in out.stderr, out.stderr


def _sharded(directory: Path, source: Path) -> None:
    """`source`'s checkpoint written into `directory` with its weights in two safetensors shards and an index."""
    import json

    from safetensors.torch import load_file, save_file

    directory.mkdir()
    for f in source.iterdir():
        if f.name != "model.safetensors":
            (directory / f.name).write_bytes(f.read_bytes())
    state = load_file(str(source / "model.safetensors"))
    keys = sorted(state)
    weight_map = {}
    for n, part in enumerate((keys[::2], keys[1::2]), start=1):
        name = f"model-0000{n}-of-00002.safetensors"
        save_file({k: state[k] for k in part}, str(directory / name))
        weight_map.update(dict.fromkeys(part, name))
    (directory / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))


def test_a_cached_snapshot_counts_as_complete_only_with_all_a_load_reads(tmp_path, tiny_checkpoint, online):
    """A config alone (a tokenizer's first run leaves bert-base-uncased's) made the app take the default model
    for cached; an index with a shard missing was read as complete, and never fetched again however online."""
    from bert_core.checkpoints import complete_snapshot_in_cache

    served = tmp_path / "served"
    _sharded(served, tiny_checkpoint)
    cache = tmp_path / "cache"
    with _Hub(served) as hub:
        bert_core.load_pretrained(REPO, cache_dir=cache, endpoint=hub.endpoint)
    snapshot = complete_snapshot_in_cache(REPO, cache_dir=cache)
    assert snapshot is not None and (snapshot / "model-00002-of-00002.safetensors").is_file()
    (snapshot / "model-00002-of-00002.safetensors").unlink()  # an interrupted download's
    assert complete_snapshot_in_cache(REPO, cache_dir=cache) is None
    with _Hub(served) as hub:  # online again: the missing shard is fetched, not reported missing for ever
        repaired = bert_core.load_pretrained(REPO, cache_dir=cache, endpoint=hub.endpoint)
        asked = {path.rsplit("/", 1)[1] for _, path in hub.requests}
    assert (
        "model-00002-of-00002.safetensors" in asked
        and (snapshot / "model-00002-of-00002.safetensors").is_file()
    )
    np.testing.assert_array_equal(
        repaired.analyze("the bank").hidden_states,
        bert_core.load_pretrained(tiny_checkpoint).analyze("the bank").hidden_states,
    )
    for name in ("model.safetensors.index.json", "vocab.txt"):  # a config without weights, or a vocabulary
        (snapshot / name).unlink()
        assert complete_snapshot_in_cache(REPO, cache_dir=cache) is None
    assert complete_snapshot_in_cache("not a/valid id!", cache_dir=cache) is None


@pytest.mark.parametrize("given", ["tester/tiny-bert.", "tester--tiny", "a..b", "models--tester--tiny-bert"])
def test_an_id_the_hub_refuses_is_a_load_error(given):
    """A full stop copied with the id ("qa/bert-mlm.") escaped as huggingface_hub's HFValidationError."""
    with pytest.raises(ModelLoadError, match="is not a valid hub id"):
        bert_core.load_pretrained(given)


def test_weights_missing_from_the_cache_are_not_said_to_be_missing_from_the_repo(
    tmp_path, tiny_checkpoint, online, monkeypatch
):
    """Offline, a cached config whose weights never arrived (a stopped download; a tokenizer's first run) was
    told "has neither model.safetensors nor pytorch_model.bin", untrue of the repo."""
    from huggingface_hub import constants

    from bert_core.checkpoints import complete_snapshot_in_cache

    cache = tmp_path / "cache"
    with _Hub(tiny_checkpoint) as hub:
        bert_core.load_pretrained(REPO, cache_dir=cache, endpoint=hub.endpoint)
    (complete_snapshot_in_cache(REPO, cache_dir=cache) / "model.safetensors").unlink()
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelLoadError) as missing:
        bert_core.load_pretrained(REPO, cache_dir=cache)
    said = str(missing.value)
    assert (
        "its config is in the local Hugging Face cache but not its weights" in said and "neither" not in said
    )
    assert "downloads are switched off (HF_HUB_OFFLINE)" in said
