"""From a source (local directory or hub id) to a ready `BertScopeModel`, for every architecture in
`ARCHITECTURES`.

Order of work matters for safety and memory: the config is validated before anything is allocated, the
weights' names, shapes and dtypes are read from the safetensors headers (files.py; a pickled .bin is read
whole, without executing anything), names are mapped by the architecture's short rename table, the heads
present are read off the `HEADS` table, every shape is checked against the config, and only then are the
bytes the network takes read and the network materialised directly from them (no random initialisation, no
second copy).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

from ..config import BertConfig, read_json
from ..errors import ModelLoadError
from ..modeling.heads import Network
from ..results import LabRecipe
from .albert import ALBERT
from .architecture import Architecture, StateDict
from .bert import BERT
from .distilbert import DISTILBERT
from .electra import ELECTRA
from .files import CONFIG_FILE, Progress, open_state_dict, resolve_source
from .roberta import ROBERTA

log = logging.getLogger(__name__)

# model_type -> its record. A config without "model_type" (very old BERT checkpoints) is BERT.
ARCHITECTURES: dict[str, Architecture] = {
    arch.model_type: arch for arch in (BERT, ROBERTA, DISTILBERT, ALBERT, ELECTRA)
}


def detect_heads(
    arch: Architecture, config: BertConfig, state: StateDict
) -> tuple[tuple[str, ...], list[str]]:
    """The architecture's heads whose weights the (renamed) state holds, in table order, and the sorted keys of
    fine-tuning heads that are set aside (removed from `state`): those config.json's "architectures" does not
    name, since a sequence and a token classifier share their key names (`classifier.*`)."""
    trained = {name for name in config.architectures}

    def present(head) -> bool:
        return any(k.startswith(path + ".") for path in head.modules for k in state)

    heads = []
    for name, head in arch.heads.items():
        if not present(head):
            continue
        if head.trained_as is None or any(cls.endswith(head.trained_as) for cls in trained):
            heads.append(name)
    claimed = {path for name in heads for path in arch.heads[name].modules}
    task_paths = {path for head in arch.heads.values() if head.trained_as for path in head.modules}
    ignored = sorted(
        k
        for k in state
        if any(k.startswith(p + ".") for p in task_paths) and not any(k.startswith(p + ".") for p in claimed)
    )
    for key in ignored:
        del state[key]
    return tuple(heads), ignored


def _summarise(keys: list[str], limit: int = 8) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


class _NoNormalInit(TorchFunctionMode):
    """Skips `torch.nn.init.normal_` (nn.Embedding's initialisation) while the network is built on the meta
    device: its values are never read, and the meta version of normal_ is Python code that imports
    torch._dynamo on first use, about 1 s of a process's first load (bench/loading.py, first load in a fresh
    process). A mode, unlike a patched function, acts on this thread only."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.init.normal_:
            return args[0] if args else kwargs["tensor"]
        return func(*args, **kwargs)


class WeightsMismatch(ModelLoadError):
    """The checkpoint's weights are not the ones its config.json describes (missing, unknown or misshapen)."""


def _model_type_hint(state: StateDict) -> str:
    """The family whose names the weights carry, where config.json named another (or none: BERT)."""
    # a base-model file's keys took the named family's prefix on the way in ("bert.distilbert.embeddings...")
    named = [
        a
        for a in ARCHITECTURES.values()
        if any(
            k.startswith(f"{a.base_prefix}.embeddings.") or f".{a.base_prefix}.embeddings." in k
            for k in state
        )
    ]
    if not named:
        return ": is it a checkpoint of one of the families BERTScope reads?"
    found = named[0]
    return f": its weights are named as {found.name}'s; set model_type to {found.model_type!r} in config.json"


def _mismatch_hint(
    keys: list[str], config: BertConfig, tie: bool, *, missing: bool, distil: bool, expected: set[str]
) -> str:
    """The config key behind weights that are missing or unknown, where their names tell it."""
    if any("token_type_embeddings" in k for k in keys):
        return f" (the config has type_vocab_size = {config.type_vocab_size})"
    if any("embeddings_project" in k for k in keys):  # ELECTRA's (ALBERT always has its projection)
        given = config.embedding_size or config.hidden_size
        return (
            f" (the config has embedding_size = {given} and hidden_size = {config.hidden_size}: a projection "
            "between them exists only where they differ)"
        )
    if (
        missing
        and not tie
        and any(k.endswith(("decoder.weight", "lm_head.weight", "vocab_projector.weight")) for k in keys)
    ):
        return " (the config has tie_word_embeddings = false, so the head needs its own decoder weights)"
    layers = [re.search(r"\.layer\.(\d+)\.", k) for k in keys]
    per_layer = Counter(int(m.group(1)) for m in layers if m)
    full = sum(".layer.0." in k for k in expected)  # weights one layer has
    # whole layers only: one stray key of layer 5, or one lost from the last layer, is no count of layers
    if all(layers) and full and all(count == full for count in per_layer.values()):
        found, n = set(per_layer), config.num_hidden_layers
        key = "num_hidden_layers"
        key = _SIZE_KEYS[key][0] if distil else key  # as the family's config.json spells it (n_layers)
        if missing and found == set(range(min(found), n)):
            return f" (the config has {key} = {n}; the checkpoint has {min(found)})"
        if not missing and min(found) >= n:
            return f" (the config has {key} = {n}; the checkpoint has {max(found) + 1})"
    return " (is it a checkpoint of a different architecture, or with a different config.json?)"


def build_network(
    arch: Architecture,
    config: BertConfig,
    state: StateDict,
    *,
    tie_word_embeddings: bool = True,
    read: Callable[[StateDict], StateDict] | None = None,
) -> Network:
    """Materialise the network straight from (renamed) checkpoint tensors; ModelLoadError on any mismatch.
    `state` may hold meta tensors (what the files declare): `read` reads those the network takes, once every
    name, shape and dtype has been checked."""
    heads, _ = detect_heads(arch, config, state)
    pooler = any(k.startswith(f"{arch.base_prefix}.pooler.") for k in state)
    needs_pooler = [arch.heads[name].path for name in heads if arch.heads[name].reads == "pooled"]
    if needs_pooler and not pooler:
        raise ModelLoadError(
            f"the checkpoint has a head ({needs_pooler[0]}) that reads the pooler, but no pooler"
        )
    if not any(k.startswith(f"{arch.base_prefix}.embeddings.") for k in state):
        raise ModelLoadError(
            f"the checkpoint has no {arch.name} embeddings ({arch.base_prefix}.embeddings.*), though config.json "
            f"reads as model_type {arch.model_type!r}" + _model_type_hint(state)
        )
    # Built on the meta device: no memory is allocated until the checkpoint's own tensors are assigned.
    with torch.device("meta"), _NoNormalInit():
        network = Network(
            config,
            heads,
            pooler=pooler,
            tie_word_embeddings=tie_word_embeddings,
            base_prefix=arch.base_prefix,
            encoder=arch.encoder,
            architecture=arch.model_type,
        )
    expected = network.state_dict()
    # An untied MLM head's state dict names its bias twice, as transformers does; the rename kept one.
    expected.pop("cls.predictions.decoder.bias", None)
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    distil = arch.model_type == "distilbert"
    if unexpected:
        raise WeightsMismatch(
            f"the checkpoint has weights this {arch.model_type} model does not know: {_summarise(unexpected)}"
            + _mismatch_hint(
                unexpected, config, tie_word_embeddings, missing=False, distil=distil, expected=set(expected)
            )
        )
    if missing:
        raise WeightsMismatch(
            f"the checkpoint lacks weights the config requires: {_summarise(missing)}"
            + _mismatch_hint(
                missing, config, tie_word_embeddings, missing=True, distil=distil, expected=set(expected)
            )
        )
    mismatched = [
        f"{k}: checkpoint {tuple(state[k].shape)}, config expects {tuple(expected[k].shape)}"
        for k in sorted(expected)
        if tuple(state[k].shape) != tuple(expected[k].shape)
    ]
    if mismatched:
        raise WeightsMismatch("weights do not match config.json: " + "; ".join(mismatched[:5]))
    not_float = [
        f"{k} ({state[k].dtype})"
        for k in sorted(expected)
        if expected[k].is_floating_point() and not state[k].is_floating_point()
    ]
    if not_float:
        raise ModelLoadError("weights must be floating point; the checkpoint has " + _summarise(not_float))
    if read is not None:
        state = read({k: state[k] for k in expected})
    floats = {k: (v.to(torch.float32) if v.is_floating_point() else v).contiguous() for k, v in state.items()}
    network.load_state_dict(floats, strict=True, assign=True)
    return network.eval()


def config_file(directory: Path) -> Path:
    """The checkpoint's config.json; ModelLoadError when `directory` has none (no checkpoint directory)."""
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise ModelLoadError(f"no {CONFIG_FILE} in {directory}: is this a checkpoint directory?")
    return path


# The sizes a config.json must give for the weights to fit, with DistilBERT's own names for them.
_SIZE_KEYS = {
    "vocab_size": (),
    "hidden_size": ("dim",),
    "num_hidden_layers": ("n_layers",),
    "num_attention_heads": ("n_heads",),
    "intermediate_size": ("hidden_dim",),
}


def read_config(directory: Path) -> tuple[Architecture, BertConfig, bool, list[str]]:
    """The architecture, its config, whether the MLM decoder is tied to the word embeddings, and the sizes
    config.json leaves out (`_SIZE_KEYS`, read from the family's defaults)."""
    raw = read_json(config_file(directory))
    if not isinstance(raw, dict):
        raise ModelLoadError(f"config must be a JSON object, got {type(raw).__name__}")
    model_type = raw.get("model_type") or "bert"
    if model_type not in ARCHITECTURES:
        raise ModelLoadError(
            f"config key 'model_type' = {model_type!r}: BERTScope reads these model types: {', '.join(ARCHITECTURES)}"
        )
    arch = ARCHITECTURES[model_type]
    absent = [k for k, aliases in _SIZE_KEYS.items() if not any(name in raw for name in (k, *aliases))]
    if model_type in ("albert", "electra") and "embedding_size" not in raw:  # their defaults' 128
        absent.append("embedding_size")
    return arch, arch.read_config(raw), bool(raw.get("tie_word_embeddings", True)), absent


def _assumed_sizes(config: BertConfig, absent: list[str]) -> str:
    """A note for a weights error when config.json left sizes out: they were taken from the family's defaults
    (bert-base's for an empty file), which is why the weights do not fit, though the error names only one."""
    if not absent:
        return ""
    sizes = {k: getattr(config, k) for k in absent}
    if "embedding_size" in sizes:  # None where it equals hidden_size
        sizes["embedding_size"] = config.embedding_size or config.hidden_size
    if config.model_type == "distilbert":  # as its config.json spells them
        sizes = {(_SIZE_KEYS.get(k) or (k,))[0]: v for k, v in sizes.items()}
    assumed = ", ".join(f"{k} = {v}" for k, v in sizes.items())
    return f" (config.json does not give {', '.join(sizes)}, so the defaults were assumed: {assumed})"


def load_pretrained(
    source: str | os.PathLike,
    *,
    device: str | torch.device | None = None,
    progress: Progress | None = None,
    cache_dir: str | os.PathLike | None = None,
    endpoint: str | None = None,
    local_files_only: bool = False,
    pack_weights: bool = True,
):
    """Load a checkpoint from a local directory or a hub id into a ready-to-use `BertScopeModel`.

    Hub ids are fetched into the Hugging Face cache (`cache_dir` overrides where; `endpoint` which server);
    with `local_files_only` or HF_HUB_OFFLINE=1 only the cache is consulted.
    On CPU the Linear weights are held pre-packed for oneDNN (`pack_weights`, see modeling/packed.py): faster,
    same memory, results within ~1e-6 of the reference; `pack_weights=False` keeps the reference's
    bit-identical arithmetic. Raises `ModelLoadError` with a message naming what is wrong (missing files, bad
    config keys, unexpected or mismatched weights, unreachable hub).
    """
    from ..analysis import BertScopeModel

    directory = resolve_source(
        source, progress=progress, cache_dir=cache_dir, endpoint=endpoint, local_files_only=local_files_only
    )
    arch, config, tie, absent = read_config(directory)
    tokenizer = arch.read_tokenizer(directory, config)
    if tokenizer.vocab_size > config.vocab_size:
        raise ModelLoadError(
            f"the vocabulary has {tokenizer.vocab_size} entries but the embedding table (config key "
            f"'vocab_size') has {config.vocab_size} rows: this vocabulary belongs to another model"
            + _assumed_sizes(config, absent)
        )
    if progress:
        progress("reading weights")
    # Names, shapes and dtypes from the safetensors headers: their bytes are read once checked (a pickled .bin,
    # and any file on a big-endian host, is read whole here)
    stored = open_state_dict(directory)
    state = arch.rename_keys(stored.tensors, tie)
    _, ignored = detect_heads(arch, config, state)
    if ignored:
        log.info("ignoring fine-tuning head weights config.json does not name: %s", ", ".join(ignored))
    try:
        network = build_network(arch, config, state, tie_word_embeddings=tie, read=stored.read)
    except WeightsMismatch as exc:
        raise WeightsMismatch(str(exc) + _assumed_sizes(config, absent)) from exc
    weights_files = tuple(stored.files)
    # float16 (or bfloat16) files are computed in float32 here, where transformers computes them as stored
    stored_as = sorted(
        {str(t.dtype).removeprefix("torch.") for t in stored.tensors.values() if t.is_floating_point()}
    )
    del stored
    record = _lab_record(directory)
    del state  # the network now holds the only reference to each weight, so packing frees them as it goes
    target = _resolve_device(device)
    if target.type != "cpu":
        network = network.to(target)
    elif pack_weights:
        network.pack_weights()
    return BertScopeModel(
        network,
        tokenizer,
        config,
        architecture=arch,
        source=str(source),
        directory=directory,
        weights_files=weights_files,
        weights_dtype=None if stored_as in ([], ["float32"]) else ", ".join(stored_as),
        device=target,
        ignored_weights=tuple(ignored),
        trained_length=_trained_length(record, config),
        nsp_trained_as_sop=arch is BERT and _pair_task(record) == "sop",
        lab_recipe=_lab_recipe(record),
        unfinished=_unfinished(directory, record),
    )


def _lab_record(directory: Path, name: str = "pretraining.json") -> dict:
    """A record BERTScope's labs write (pretraining.json, finetuning.json), or {}: only hints, so a missing,
    unreadable or odd file is simply no record (never a load error)."""
    path = directory / name
    if not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _unfinished(directory: Path, pretraining: dict) -> str | None:
    """Where a lab run stopped, for a checkpoint it saved on the way ("epoch 1 of 3", "pre-training step 107 of
    400"); None for a finished run or no record. Only the records said so, and a checkpoint of a stopped run
    was drawn as if it were the run's result. The fine-tuning record first: it is the model's own (a
    fine-tuned checkpoint keeps its encoder's pretraining.json)."""
    tuned = _lab_record(directory, "finetuning.json")
    for record, done, planned, config, what in (
        (tuned, "epoch", "epochs", "config", "fine-tuning epoch"),
        (pretraining, "step", "steps", "training_config", "pre-training step"),
    ):
        settings = record.get(config)
        total = settings.get(planned) if isinstance(settings, dict) else None
        if record.get("final") is False and _counted(record.get(done)) and _counted(total):
            return f"{what} {record[done]} of {total}"
    return None


def _counted(value: object) -> bool:
    """A positive whole number in a lab's record (JSON's true is no count)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _pair_task(record: dict) -> str | None:
    """The sentence-pair task the lab pre-trained with ("nsp", "sop", "none"), if recorded."""
    training = record.get("training_config")
    return training.get("pair_task") if isinstance(training, dict) else None


def _lab_recipe(record: dict) -> LabRecipe | None:
    """The masking and pair task the lab pre-trained with, its defaults where the record leaves one out; None
    without a record or where one is not what the lab writes (a hint, never a load error)."""
    from ..pretraining.masking import MaskingConfig  # the lab's own defaults and names
    from ..pretraining.train import MASKING_MODES, PAIR_TASKS

    training = record.get("training_config")
    if not isinstance(training, dict):
        return None
    given = {
        k: training.get(k, getattr(MaskingConfig, k))
        for k in ("mlm_probability", "mask_fraction", "random_fraction")
    }
    masking, pair_task = training.get("masking", "dynamic"), training.get("pair_task", "nsp")
    try:
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in given.values()):
            raise ValueError
        MaskingConfig(**{k: float(v) for k, v in given.items()})
    except ValueError:
        return None
    if masking not in MASKING_MODES or pair_task not in PAIR_TASKS:
        return None
    return LabRecipe(**{k: float(v) for k, v in given.items()}, masking=masking, pair_task=pair_task)


def _trained_length(record: dict, config: BertConfig) -> int | None:
    """The longest pre-training input the lab recorded, if any."""
    value = record.get("longest_sequence")
    if not _counted(value) or value >= config.max_position_embeddings:
        return None  # no record, or nothing left untrained
    return value


def _resolve_device(device: str | torch.device | None) -> torch.device:
    if device is None:
        return torch.device("cpu")
    try:
        target = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ModelLoadError(f"unknown device {device!r}") from exc
    if problem := device_problem(target):
        raise ModelLoadError(problem)
    return target


def device_problem(device: str | torch.device) -> str | None:
    """Why models cannot run on `device` here, or None; a server checks it when it starts (`bertscope --device`),
    before the room opens a page that could only say so."""
    try:
        target = torch.device(device)
    except (RuntimeError, TypeError):
        return f"unknown device {device!r}"
    if target.type == "cuda":
        if not torch.cuda.is_available():
            return f"device {str(target)!r} was asked for, but no CUDA GPU is available here"
        if target.index is not None and target.index >= torch.cuda.device_count():
            return f"device {str(target)!r} was asked for, but this machine has {torch.cuda.device_count()} CUDA GPU(s)"
    if target.type == "mps" and not torch.backends.mps.is_available():
        return f"device {str(target)!r} was asked for, but Apple's MPS is not available here"
    return None
