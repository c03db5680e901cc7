"""The core on a CUDA GPU (`bertscope --device cuda`, the GPU replica of docs/deploy.md) answers as it does on the
CPU: every public analysis of every family and task head, run on both and compared field by field.

These need a GPU, so they skip on a machine without one (CI has none). The parity tests against
`transformers` pin the CPU arithmetic; these pin the GPU to the CPU. Run them where a GPU is:
`python -m pytest tests/bert_core/test_cuda.py`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import bert_core
from tests.conftest import make_checkpoint
from tests.variants import FAMILY_PREFIX, TASK_CLASSES, make_task_checkpoint, make_variant

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
GPU = "cuda"
# fp32 on both sides (torch leaves TF32 off for fp32 matmuls unless asked); what differs is the order of the
# sums, so the bound is relative to the values' size, tight enough that a wrong mask or position would fail.
RTOL, ATOL = 1e-4, 1e-5
TEXT = "the cat sat on the bank of the river."
PAIR = ("we deposited cash at the bank.", "the river ran by")
MASKED = "the cat sat on the [MASK] of the river."


def _differences(cpu, gpu, path: str = "") -> list[str]:
    """Where `gpu` differs from `cpu` (arrays beyond RTOL/ATOL; everything else exactly), walking dataclasses,
    lists, tuples and dicts; [] when they agree."""
    if isinstance(cpu, np.ndarray):
        if not isinstance(gpu, np.ndarray) or cpu.shape != gpu.shape or cpu.dtype != gpu.dtype:
            return [
                f"{path}: {getattr(gpu, 'shape', type(gpu))} {getattr(gpu, 'dtype', '')}, CPU {cpu.shape} {cpu.dtype}"
            ]
        if np.issubdtype(cpu.dtype, np.floating):
            if not np.allclose(gpu, cpu, rtol=RTOL, atol=ATOL, equal_nan=True):
                worst = float(np.nanmax(np.abs(gpu.astype(np.float64) - cpu)))
                return [f"{path}: max |GPU - CPU| {worst:.3g}"]
            return []
        return [] if np.array_equal(cpu, gpu) else [f"{path}: {gpu!r} against CPU {cpu!r}"]
    if dataclasses.is_dataclass(cpu) and not isinstance(cpu, type):
        return [
            d
            for f in dataclasses.fields(cpu)
            for d in _differences(getattr(cpu, f.name), getattr(gpu, f.name), f"{path}.{f.name}")
        ]
    if isinstance(cpu, (list, tuple)):
        if not isinstance(gpu, (list, tuple)) or len(cpu) != len(gpu):
            return [f"{path}: {gpu!r} against CPU {cpu!r}"]
        return [
            d
            for i, (c, g) in enumerate(zip(cpu, gpu, strict=True))
            for d in _differences(c, g, f"{path}[{i}]")
        ]
    if isinstance(cpu, dict):
        if not isinstance(gpu, dict) or cpu.keys() != gpu.keys():
            return [f"{path}: keys {list(gpu)} against CPU {list(cpu)}"]
        return [d for k in cpu for d in _differences(cpu[k], gpu[k], f"{path}[{k!r}]")]
    if isinstance(cpu, (float, np.floating)) and not isinstance(gpu, bool):
        return [] if np.isclose(gpu, cpu, rtol=RTOL, atol=ATOL) else [f"{path}: {gpu!r} against CPU {cpu!r}"]
    return [] if cpu == gpu else [f"{path}: {gpu!r} against CPU {cpu!r}"]  # tokens, labels, counts


def _answers(model: bert_core.BertScopeModel, call) -> object:
    """What `call(model)` returns, or the type of the BertScopeError it raises (a head the model lacks)."""
    try:
        return call(model)
    except bert_core.BertScopeError as exc:
        return type(exc)


def _assert_same_on_gpu(directory, calls: dict) -> None:
    on_cpu = bert_core.load_pretrained(directory)
    on_gpu = bert_core.load_pretrained(directory, device=GPU)
    assert next(on_gpu.network.parameters()).device.type == "cuda"
    found = []
    for name, call in calls.items():
        found += _differences(_answers(on_cpu, call), _answers(on_gpu, call), name)
    assert not found, "\n".join(found)


def _masked(m: bert_core.BertScopeModel) -> str:
    return MASKED.replace("[MASK]", m.tokenizer.mask_token)  # RoBERTa's <mask>


def _encoder_calls(model_layers: int, model_heads: int) -> dict:
    head_mask = np.ones((model_layers, model_heads), dtype=np.float32)
    head_mask[0, 1] = 0.0
    return {
        "analyze": lambda m: m.analyze(TEXT),
        "analyze(pair)": lambda m: m.analyze(*PAIR),
        "analyze(head_mask)": lambda m: m.analyze(TEXT, head_mask=head_mask),
        # Rows of different lengths: the padded batch's attention mask is built on the model's device.
        "analyze_batch": lambda m: m.analyze_batch([TEXT, PAIR, "a dog."]),
        "vectors_batch": lambda m: m.vectors_batch([TEXT, PAIR, "a dog."], max_batch_tokens=24),
        "attention_details": lambda m: [m.attention_details(*PAIR, layer=k) for k in range(model_layers)],
        "value_weighted_attention": lambda m: m.value_weighted_attention(*PAIR),
        "position_embedding_table": lambda m: m.position_embedding_table(),
        "segment_embedding_table": lambda m: m.segment_embedding_table(),
        "predict_masks": lambda m: m.predict_masks(MASKED, top_k=5),
        "predict_at": lambda m: m.predict_at(m.encode(TEXT).input_ids, [2, 5], labels=[7, 9], top_k=3),
        "head_importance": lambda m: m.head_importance(_masked(m), max_batch_tokens=40),
        "pseudo_log_likelihood": lambda m: m.pseudo_log_likelihood(TEXT, max_batch_tokens=40),
        "logit_lens": lambda m: m.logit_lens(_masked(m)),
        "next_sentence": lambda m: m.next_sentence(*PAIR),
        "sentence_order": lambda m: m.sentence_order(*PAIR),
        "replaced_tokens": lambda m: m.replaced_tokens(TEXT),
        "attribute(mlm)": lambda m: m.attribute(_masked(m), steps=8),
    }


def test_bert_answers_on_the_gpu_as_on_the_cpu(tmp_path):
    directory = make_checkpoint(tmp_path / "bert", "pretraining")
    _assert_same_on_gpu(directory, _encoder_calls(2, 4))


@pytest.mark.parametrize(
    "arch, kind",
    [
        ("roberta", "mlm"),
        ("distilbert", "mlm"),
        ("albert", "pretraining"),
        ("electra", "mlm"),  # the generator
        ("electra", "pretraining"),  # the discriminator
    ],
)
def test_every_family_answers_on_the_gpu_as_on_the_cpu(tmp_path, arch, kind):
    directory = make_variant(tmp_path / arch, arch, kind)
    _assert_same_on_gpu(directory, _encoder_calls(2, 4))


@pytest.mark.parametrize("arch", list(FAMILY_PREFIX))
@pytest.mark.parametrize("task", list(TASK_CLASSES))
def test_task_heads_and_their_explanations_answer_on_the_gpu_as_on_the_cpu(tmp_path, arch, task):
    labels = {"classify": ["neg", "pos"], "tag": ["O", "B-LOC", "I-LOC"]}.get(task)
    directory = make_task_checkpoint(tmp_path / f"{arch}-{task}", arch, task, labels)
    calls = {
        "classify": {
            "classify": lambda m: m.classify(TEXT),
            "attribute(ig)": lambda m: m.attribute(TEXT, steps=16),
            "attribute(gradient x input)": lambda m: m.attribute(*PAIR, method="gradient_x_input"),
        },
        "tag": {
            "tag": lambda m: m.tag(TEXT),
            "entities": lambda m: m.entities(TEXT),
            "attribute": lambda m: m.attribute(TEXT, steps=8),
        },
        "qa": {
            # A passage longer than the window: the overlapping windows run as one batch on the device.
            "answer": lambda m: m.answer("where did the cat sit?", " ".join([TEXT] * 12), top_k=3, stride=16),
            "attribute": lambda m: m.attribute("where did the cat sit?", TEXT, target="end", steps=8),
        },
        "choice": {"choose": lambda m: m.choose("the cat sat on the", ["bank.", "river.", "money."])},
    }[task]
    _assert_same_on_gpu(directory, calls)
