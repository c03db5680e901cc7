"""Finding a checkpoint's files (a local directory, or a hub id fetched into the Hugging Face cache) and
reading its weights without executing anything (safetensors, or `torch.load(weights_only=True)`).
Nothing here knows an architecture: `load.py` and the per-architecture files do that.
"""

from __future__ import annotations

import json
import logging
import math
import os
import pickle
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from ..errors import ModelLoadError

log = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PYTORCH_FILE = "pytorch_model.bin"
# Every family's tokenizer files (WordPiece vocab.txt, BPE vocab.json + merges.txt, SentencePiece spiece.model),
# each optional: the architecture's loader says what it needs.
TOKENIZER_FILES = (
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)

# Hub ids: "name" or "owner/name", letters, digits, '-', '_', '.'.
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*(/[A-Za-z0-9][A-Za-z0-9_.\-]*)?$")

Progress = Callable[[str], None]


# -- finding the files ------------------------------------------------------------------------------------


def looks_like_hub_id(source: str) -> bool:
    return bool(_HUB_ID.match(source)) and not source.startswith((".", "~"))


def resolve_source(
    source: str | os.PathLike,
    *,
    progress: Progress | None = None,
    cache_dir: str | os.PathLike | None = None,
    endpoint: str | None = None,
    local_files_only: bool = False,
) -> Path:
    """Return a local directory holding the checkpoint, downloading from the hub when `source` is a hub id."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):  # load_pretrained(3) was told "no model given"
        raise ModelLoadError(
            f"a model is a local directory or a hub id such as 'bert-base-uncased', as a string or path; got "
            f"{type(source).__name__} {source!r}"
        )
    if not source.strip():
        raise ModelLoadError("no model given: pass a local directory or a hub id such as 'bert-base-uncased'")
    source = source.strip()
    try:
        path = Path(source).expanduser()
        exists = path.exists()
    except (OSError, ValueError, RuntimeError) as exc:  # a name too long, a NUL, `~nosuchuser`
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc  # not the whole path again
        raise ModelLoadError(f"{source[:80]!r} is neither a usable path nor a hub id ({why})") from exc
    if exists:
        if not path.is_dir():
            raise ModelLoadError(
                f"{path} is a file; pass the directory that holds config.json and the weights"
            )
        return path
    if looks_like_hub_id(source):
        return download_from_hub(
            source,
            progress=progress,
            cache_dir=cache_dir,
            endpoint=endpoint,
            local_files_only=local_files_only,
        )
    # As typed (cut): a Path folds "//" into "/" and writes `~` out as the home directory.
    shown = source if len(source) <= 200 else source[:200] + "…"
    raise ModelLoadError(f"no such directory: {shown} (and it is not a valid hub id either)")


def download_from_hub(
    repo_id: str,
    *,
    revision: str | None = None,
    progress: Progress | None = None,
    cache_dir: str | os.PathLike | None = None,
    endpoint: str | None = None,
    local_files_only: bool = False,
) -> Path:
    """Fetch only the files BERTScope reads into the HF cache (the standard one unless `cache_dir` is given).

    Works offline from that cache (HF_HUB_OFFLINE=1, `local_files_only`, or simply no connection).
    """
    import huggingface_hub
    from huggingface_hub import constants as hub_constants
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )
    from huggingface_hub.utils import validate_repo_id

    try:
        # The hub's own rule, stricter than looks_like_hub_id: "qa/bert-mlm." (a sentence's full stop copied
        # with it) escaped as HFValidationError, a traceback in the server's log, and was tried on every rerun.
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        raise ModelLoadError(f"{repo_id!r} is not a valid hub id: {exc}") from None

    if not local_files_only and not hub_constants.HF_HUB_OFFLINE:
        cached = complete_snapshot_in_cache(repo_id, revision=revision, cache_dir=cache_dir)
        if cached is not None:
            # Hub models are immutable in practice; using the cache first keeps start-up instant and offline-proof.
            log.info("using cached %s from %s", repo_id, cached)
            return cached
        if not hub_reachable(endpoint):
            # Without this, huggingface_hub retries for ~30 s before giving up on a machine with no network.
            local_files_only = True

    # Files that are neither cached nor to be had (offline, or no connection): a weights file among them is not
    # "the repo has none", which is what an interrupted download was told.
    not_here: list[str] = []
    # HF_HUB_OFFLINE set on purpose is not a hub out of reach
    cut_off = (
        "downloads are switched off (HF_HUB_OFFLINE)"
        if hub_constants.HF_HUB_OFFLINE
        else ("the model hub cannot be reached")
    )

    def fetch(filename: str, *, required: bool) -> Path | None:
        if progress:
            progress(f"{repo_id}: {filename}")
        try:
            return Path(
                huggingface_hub.hf_hub_download(
                    repo_id,
                    filename,
                    revision=revision,
                    cache_dir=cache_dir,
                    endpoint=endpoint,
                    local_files_only=local_files_only,
                )
            )
        except LocalEntryNotFoundError as exc:
            # Raised both offline and when the hub can't be reached, if the file is not cached either.
            if filename == CONFIG_FILE:
                raise ModelLoadError(
                    f"cannot load {repo_id!r}: {cut_off} and the model is not in the "
                    f"local Hugging Face cache ({cache_dir or hub_constants.HF_HUB_CACHE}), and there is no "
                    f"local directory of that name. Connect once to download it, or pass a local directory."
                ) from exc
            if required:
                raise ModelLoadError(
                    f"cannot load {repo_id!r}: {filename} is not in the local cache and {cut_off}"
                ) from exc
            not_here.append(filename)
            return None
        except RepositoryNotFoundError as exc:
            raise ModelLoadError(f"no model {repo_id!r} on the hub (or it is private)") from exc
        except RevisionNotFoundError as exc:
            raise ModelLoadError(f"{repo_id!r} has no revision {revision!r}") from exc
        except EntryNotFoundError as exc:
            if required:
                raise ModelLoadError(f"{repo_id!r} on the hub has no {filename}") from exc
            return None
        except OSError as exc:  # disk full, permission denied in the cache, ...
            raise ModelLoadError(f"cannot download {filename} of {repo_id!r}: {exc}") from exc

    config_path = fetch(CONFIG_FILE, required=True)
    assert config_path is not None
    # safetensors first; the pickle-based file only when there is no safetensors file at all.
    weights = fetch(SAFETENSORS_FILE, required=False)
    if weights is None:
        index = fetch(SAFETENSORS_INDEX, required=False)
        if index is not None:
            for shard in _index_shards(index):
                fetch(shard, required=True)
        elif fetch(PYTORCH_FILE, required=False) is None:
            sharded = (
                " (its weights are sharded across .bin files, which are not read: download it and save it "
                "again as safetensors with transformers, the class its config.json's 'architectures' names, "
                ".from_pretrained(DIR).save_pretrained(DIR))"
                if fetch("pytorch_model.bin.index.json", required=False)
                else ""
            )
            if not_here:
                raise ModelLoadError(
                    f"cannot load {repo_id!r}: its config is in the local Hugging Face cache but not its weights "
                    f"(a download stopped part way, or only its tokenizer was ever fetched), and {cut_off}. "
                    "Connect once to download them, or pass a local directory."
                )
            raise ModelLoadError(f"{repo_id!r} has neither {SAFETENSORS_FILE} nor {PYTORCH_FILE}{sharded}")
    for name in TOKENIZER_FILES:
        fetch(name, required=False)
    return config_path.parent


def complete_snapshot_in_cache(
    repo_id: str, *, revision: str | None = None, cache_dir: str | os.PathLike | None = None
) -> Path | None:
    """The cached snapshot directory when it holds what a load reads: a config, weights (every shard an index
    names) and a vocabulary (a byte-level one with its merges); else None. Reads the disk only.

    Not a config alone: running a tokenizer once leaves bert-base-uncased's config and vocabulary cached, and
    the app took the model for cached and opened on "has neither model.safetensors nor pytorch_model.bin";
    nor an index with a shard missing, which was read as complete and never fetched again."""
    from huggingface_hub import try_to_load_from_cache

    if not looks_like_hub_id(repo_id):
        return None

    def cached(filename: str) -> Path | None:
        try:
            found = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir, revision=revision)
        except Exception:  # noqa: BLE001 - an id the hub library refuses, a broken cache: nothing cached
            return None
        return Path(found) if isinstance(found, str) else None

    config = cached(CONFIG_FILE)
    if config is None:
        return None
    index = cached(SAFETENSORS_INDEX)
    try:
        shards = _index_shards(index) if index is not None else []
    except ModelLoadError:
        return None
    has_weights = (
        all(cached(name) for name in shards)
        if index is not None
        else any(cached(name) for name in (SAFETENSORS_FILE, PYTORCH_FILE))
    )
    has_vocab = any(cached(name) for name in ("vocab.txt", "tokenizer.json")) or (
        cached("vocab.json") is not None and cached("merges.txt") is not None
    )
    return config.parent if has_weights and has_vocab else None


def hub_reachable(endpoint: str | None = None, *, timeout: float = 3.0) -> bool:
    """A quick probe of the hub endpoint through the hub library's own HTTP client: one HEAD request, no
    retries. Unreachable where it cannot connect (no network, a proxy that doesn't answer); any answer, or a
    connection that then says nothing, is a hub within reach.

    Through that client, not a bare socket: a proxy variable used to be taken for a connection, and with the
    proxy down (a laptop off its office network) huggingface_hub retried through it for minutes. Reading the
    proxy variables here as the standard library does was no better: NO_PROXY=.huggingface.co sends the
    standard library straight to the hub, while the hub's client (httpx) still goes through the proxy."""
    from huggingface_hub import constants as hub_constants
    from huggingface_hub.utils import get_session

    url = endpoint or hub_constants.ENDPOINT
    try:
        get_session().head(url, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - the client's own error classes differ across its versions
        # httpx's ConnectError, ConnectTimeout and ProxyError; requests' ConnectionError (its ProxyError and
        # ConnectTimeout among them); an address that is no URL at all, in either
        names = {cls.__name__ for cls in type(exc).__mro__}
        return not names & {
            *("ConnectError", "ConnectTimeout", "ProxyError", "ConnectionError"),
            *("InvalidURL", "UnsupportedProtocol", "MissingSchema", "InvalidSchema"),
        }
    return True


# -- reading weights --------------------------------------------------------------------------------------


def _index_shards(index: Path) -> list[str]:
    """The shard file names a model.safetensors.index.json lists; ModelLoadError when it is malformed."""
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise ModelLoadError(f"{index} is not a valid safetensors index: {exc!r}") from exc
    if not isinstance(weight_map, dict) or not weight_map:
        raise ModelLoadError(
            f"{index} is not a valid safetensors index: 'weight_map' must be a non-empty object"
        )
    names = set(weight_map.values())
    # Names only, never paths: an index must not send the reader (or a download) outside the model directory.
    if not all(isinstance(n, str) and n and Path(n).name == n and n not in (".", "..") for n in names):
        raise ModelLoadError(
            f"{index} is not a valid safetensors index: shard names must be plain file names"
        )
    return sorted(names)


class StoredWeights:
    """A checkpoint's weights before they are read: `tensors` maps each name to a meta tensor with the shape
    and dtype the file declares, and `read` turns the ones the network takes into real tensors.

    Why not read everything at once: the loader checks every name and shape against the config first, so a
    safetensors file that also holds what the model never uses (an optimizer's state, a second model; a 3 GB
    tensor stored sparse in a 9 MB file) is refused, or its extra tensors skipped, without allocating them.
    A pickled .bin is read whole (its tensors are in memory already): only the safetensors header says what
    is there before reading it."""

    def __init__(self) -> None:
        self.tensors: dict[str, torch.Tensor] = {}
        self.files: list[str] = []  # the weights files' names, as the model card names them
        # id(meta tensor) -> (file, byte offset of its data, bytes): the meta tensors are renamed by the
        # architecture, never copied, so identity finds where each one's bytes are
        self._where: dict[int, tuple[Path, int, int]] = {}
        # file -> what identified it when its header was read: a file replaced before its data is read (a
        # directory being copied over) would have its bytes read at the old header's offsets
        self._identity: dict[Path, tuple[int, int, int, int]] = {}

    def add_file(self, file: Path, handle) -> None:
        stat = os.fstat(handle.fileno())
        self._identity[file] = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def add_stored(self, name: str, meta: torch.Tensor, file: Path, offset: int, nbytes: int) -> None:
        self.tensors[name] = meta
        self._where[id(meta)] = (file, offset, nbytes)

    def read(self, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """`state` (names -> this object's tensors, renamed or not) with every meta tensor read from its file."""
        out = dict(state)
        pending = sorted(
            ((*self._where[id(t)], key) for key, t in state.items() if t.is_meta), key=lambda w: (w[0], w[1])
        )
        current: Path | None = None
        f = None
        try:
            for file, offset, nbytes, key in pending:
                if file != current:
                    if f is not None:
                        f.close()
                    current = file
                    f = open(file, "rb")
                    stat = os.fstat(f.fileno())
                    if (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns) != self._identity[file]:
                        raise ValueError(
                            "it changed after its header was read (is it being copied?): try again"
                        )
                meta = state[key]
                out[key] = _read_bytes(f, offset, nbytes, key).view(meta.dtype).reshape(meta.shape)
        except (OSError, ValueError) as exc:  # the file shrank or vanished between its header and its data
            raise ModelLoadError(
                f"{current.name if current else 'a weights file'} in {current.parent if current else 'the checkpoint'} "
                f"could not be read: {exc}"
            ) from exc
        finally:
            if f is not None:
                f.close()
        return out


def open_state_dict(directory: Path) -> StoredWeights:
    """What the weights in `directory` are (safetensors preferred, else a weights-only unpickle of the .bin),
    read from the safetensors headers alone; `StoredWeights.read` reads the bytes."""
    single = directory / SAFETENSORS_FILE
    index = directory / SAFETENSORS_INDEX
    files: list[Path] = []
    if single.is_file():
        files = [single]
    elif index.is_file():
        files = [directory / name for name in _index_shards(index)]
    stored = StoredWeights()
    stored.files = [file.name for file in files]
    if files:
        for file in files:
            try:
                if sys.byteorder != "little":  # read whole by the library, which swaps the bytes
                    stored.tensors.update(read_safetensors(file))
                    continue
                with open(file, "rb") as f:
                    stored.add_file(file, f)
                    base, entries = _safetensors_entries(f)
            except FileNotFoundError as exc:
                raise ModelLoadError(f"missing weights shard {file}") from exc
            except (OSError, ValueError) as exc:
                raise ModelLoadError(
                    f"{file.name} in {directory} is not a readable safetensors file (truncated or corrupt?): {exc}"
                ) from exc
            for begin, end, name, dtype, shape in entries:
                stored.add_stored(
                    name, torch.empty(shape, dtype=dtype, device="meta"), file, base + begin, end - begin
                )
        return stored

    bin_path = directory / PYTORCH_FILE
    if bin_path.is_file():
        stored.files = [PYTORCH_FILE]
        stored.tensors.update(_read_pickled_weights(bin_path))
        return stored

    others = sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
    hint = ""
    if any(n.endswith((".h5", ".ckpt.index", ".msgpack")) for n in others):
        hint = " (TensorFlow/Flax weights are not supported; convert them to safetensors)"
    elif "pytorch_model.bin.index.json" in others:  # rare for this family's sizes, so not read
        # the class config.json names, with its heads: AutoModel would save the encoder alone
        hint = (
            " (weights sharded across several .bin files are not read; save them again as safetensors with "
            "transformers: AutoModelForMaskedLM, or the class config.json's 'architectures' names, "
            ".from_pretrained(DIR).save_pretrained(DIR))"
        )
    raise ModelLoadError(f"no weights in {directory}: expected {SAFETENSORS_FILE} or {PYTORCH_FILE}{hint}")


def read_state_dict(directory: Path) -> dict[str, torch.Tensor]:
    """Read every weight in `directory` (the loader reads only what the network takes: `open_state_dict`)."""
    stored = open_state_dict(directory)
    return stored.read(stored.tensors)


# -- safetensors ------------------------------------------------------------------------------------------

# The format: 8 bytes (little-endian u64) giving the header length, a JSON header mapping each name to
# {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the end of the header) plus an optional
# "__metadata__" entry, then the raw little-endian tensor bytes.
_SAFETENSORS_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F8_E4M3": torch.float8_e4m3fn,
    "F8_E5M2": torch.float8_e5m2,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U64": torch.uint64,
    "U32": torch.uint32,
    "U16": torch.uint16,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
_MAX_HEADER_BYTES = 100 * 1024 * 1024
# Any one dimension beyond this is a corrupt header (and would overflow a torch size).
_MAX_DIM = 2**40


def _reject_constant(name: str) -> None:
    raise ValueError(f"the header contains {name}, which is not a JSON number")


def _ints(value: object, what: str) -> list[int]:
    # bool is an int subclass and floats would truncate silently: only true JSON integers pass.
    if not isinstance(value, list) or not all(type(v) is int for v in value):
        raise ValueError(f"{what} must be a list of integers, got {value!r}")
    return value


def _parse_safetensors_header(
    raw: bytes, data_size: int
) -> list[tuple[int, int, str, torch.dtype, list[int]]]:
    """The header's tensors as sorted (begin, end, name, dtype, shape); ValueError on any violation of the
    format: unknown dtypes, offsets that do not match the shape, overlaps, gaps, or bytes left unindexed."""
    try:
        header = json.loads(raw, parse_constant=_reject_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"the header is not valid JSON: {str(exc)[:200]}") from exc
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ValueError("__metadata__ must map strings to strings")
    entries = []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise ValueError(f"bad header entry for {name!r}: {str(info)[:200]}")
        if info["dtype"] not in _SAFETENSORS_DTYPES:
            raise ValueError(f"{name!r} has dtype {info['dtype']!r}, which BERTScope does not read")
        dtype = _SAFETENSORS_DTYPES[info["dtype"]]
        shape = _ints(info["shape"], f"the shape of {name!r}")
        offsets = _ints(info["data_offsets"], f"the data offsets of {name!r}")
        if len(offsets) != 2 or any(not 0 <= d < _MAX_DIM for d in shape):
            raise ValueError(f"bad header entry for {name!r}: {str(info)[:200]}")
        begin, end = offsets
        if end - begin != math.prod(shape) * dtype.itemsize or not 0 <= begin <= end <= data_size:
            raise ValueError(
                f"{name!r}: offsets {begin}..{end} do not fit shape {shape} ({info['dtype']}) in "
                f"{data_size} bytes of data"
            )
        entries.append((begin, end, name, dtype, shape))
    entries.sort()
    # The format requires the data to be covered exactly: no overlaps, no holes, nothing after the last tensor.
    position = 0
    for begin, end, name, *_ in entries:
        if begin < position:
            raise ValueError(f"the bytes of {name!r} overlap the tensor before it")
        if begin > position:
            raise ValueError(f"{begin - position} unindexed bytes before {name!r}")
        position = end
    if position != data_size:
        raise ValueError(f"{data_size - position} unindexed bytes after the last tensor")
    return entries


def read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    """Read a .safetensors file into tensors this process owns, one tensor at a time with plain reads.

    Why not the safetensors library's own reader: `load_file` and `safe_open(...).get_tensor` both return views
    into one memory map of the whole file, so every page of the file stays resident for as long as any one
    tensor (say, the embedding table) is alive, and packing the Linear weights (modeling/packed.py) cannot free
    the dense copies. Measured on bert-base (random weights, this project's 2-core machine): loaded through
    `safe_open`, 1,025 MB resident after loading against 774 MB with this reader; cloning each tensor out of
    `safe_open` gets back to 776 MB but peaks at 1,113 MB during the load, against 790 MB here.
    Raises ValueError on anything malformed (a truncated file, bad header, overlapping or out-of-range offsets).
    """
    if sys.byteorder != "little":  # the file's bytes are little-endian; a big-endian host would need a swap
        from safetensors.torch import load_file

        return {k: v.clone() for k, v in load_file(str(path), device="cpu").items()}
    with open(path, "rb") as f:
        base, entries = _safetensors_entries(f)
        return {
            name: _read_bytes(f, base + begin, end - begin, name).view(dtype).reshape(shape)
            for begin, end, name, dtype, shape in entries
        }


def _safetensors_entries(f) -> tuple[int, list[tuple[int, int, str, torch.dtype, list[int]]]]:
    """(where the data starts, the header's sorted tensors) of an open .safetensors file; ValueError when
    malformed. Reads the header only."""
    size = os.fstat(f.fileno()).st_size
    head = f.read(8)
    if len(head) != 8:
        raise ValueError("the file is shorter than its 8-byte header length")
    header_len = int.from_bytes(head, "little")
    if header_len > min(size - 8, _MAX_HEADER_BYTES):
        raise ValueError(f"the header claims {header_len} bytes in a {size}-byte file")
    base = 8 + header_len
    return base, _parse_safetensors_header(f.read(header_len), size - base)


def _read_bytes(f, offset: int, nbytes: int, name: str) -> torch.Tensor:
    """`nbytes` bytes of an open file from `offset`, as a uint8 tensor this process owns."""
    if nbytes == 0:
        return torch.empty(0, dtype=torch.uint8)
    # numpy allocates large buffers on transparent huge pages: fewer page faults for 440 MB
    raw = torch.from_numpy(np.empty(nbytes, dtype=np.uint8))
    f.seek(offset)
    if f.readinto(memoryview(raw.numpy())) != nbytes:
        raise ValueError(f"the file ends inside {name!r}")
    return raw


def _read_pickled_weights(path: Path) -> dict[str, torch.Tensor]:
    try:
        # weights_only=True: the unpickler accepts tensors and plain containers only, so a checkpoint that
        # carries code (a __reduce__ payload) is refused instead of run.
        data = torch.load(path, map_location="cpu", weights_only=True, mmap=False)
    except pickle.UnpicklingError as exc:
        # Only what the file holds: torch's own message runs to 1,350 characters with terminal escape codes,
        # and its advice (weights_only=False, add_safe_globals) is what this refusal exists to avoid.
        found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(exc))
        holds = f" (it pickles a {found[1]} object)" if found else ""
        raise ModelLoadError(
            f"refused to load {path.name}: it contains objects other than tensors{holds}, possibly code, and "
            "BERTScope never executes checkpoint contents. Use a safetensors checkpoint, or a .bin of a state "
            "dict (model.save_pretrained writes one)"
        ) from exc
    except (RuntimeError, EOFError, OSError, ValueError) as exc:
        raise ModelLoadError(
            f"{path} is not a readable PyTorch checkpoint (truncated or corrupt?): {exc}"
        ) from exc
    if isinstance(data, dict) and "state_dict" in data and isinstance(data["state_dict"], dict):
        data = data["state_dict"]
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in data.items()
    ):
        raise ModelLoadError(f"{path} does not hold a mapping of parameter names to tensors")
    return data
