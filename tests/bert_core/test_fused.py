"""The fused attention kernel: the same probabilities and context as torch's arithmetic (≤ 1e-5), exact zeros
for padding keys, the same bits at every thread count, used by the packed path, and a clean fallback whenever
it cannot be built or does not apply."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import bert_core
from bert_core.modeling import bert as bert_module
from bert_core.modeling import fused
from bert_core.modeling.packed import packing_available
from tests.conftest import analyze_concurrently, make_checkpoint

NEG = torch.finfo(torch.float32).min


# CI sets this (.ci/run): there the kernel tests must run, and a machine that cannot run them fails instead of
# skipping them silently.
REQUIRED = os.environ.get("BERTSCOPE_REQUIRE_FUSED_KERNEL") == "1"


def _machine_could_run_it() -> bool:
    return fused.best_isa() is not None and fused.find_compiler() is not None


needs_kernel = pytest.mark.skipif(
    not REQUIRED and not (_machine_could_run_it() and fused.enabled_by_environment()),
    reason="the kernel needs Linux, AVX-512F or AVX2 + FMA and a C compiler, and must not be switched off "
    "(BERTSCOPE_FUSED_ATTENTION=0); elsewhere the library path is the only path",
)
# every build of the kernel this CPU can run: the AVX2 one is what laptops without AVX-512 get
ISAS = fused.available_isas() or ["none"]
_builds: dict[str, object] = {}


@pytest.fixture(params=ISAS)
def build(request, monkeypatch):
    """The loaded kernel of one instruction set (built even where the user switched the kernel off)."""
    if not REQUIRED and (request.param == "none" or not _machine_could_run_it()):
        pytest.skip("this machine has no C compiler or no CPU the kernel is built for")
    if request.param not in _builds:
        monkeypatch.delenv("BERTSCOPE_FUSED_ATTENTION", raising=False)
        fn, why, _ = fused._load(None if request.param == "none" else request.param)
        assert fn is not None, why
        _builds[request.param] = fn
    return _builds[request.param]


@pytest.fixture
def spy(monkeypatch):
    """Every fused.attention call's answer (True: the kernel ran) while the test runs."""
    answers: list[bool] = []
    real = fused.attention

    def record(*args):
        answers.append(real(*args))
        return answers[-1]

    monkeypatch.setattr(fused, "attention", record)
    return answers


@pytest.fixture
def norm_spy(monkeypatch):
    """Every fused.layer_norm call's answer (True: the kernel ran) while the test runs."""
    answers: list[bool] = []
    real = fused.layer_norm

    def record(*args, **kwargs):
        answers.append(real(*args, **kwargs))
        return answers[-1]

    monkeypatch.setattr(fused, "layer_norm", record)
    return answers


def _reference(q, k, v, mask, heads):
    """torch's arithmetic in float64: probabilities (N, S, S) and context (S, H)."""
    s, h = q.shape
    d = h // heads
    qh, kh, vh = (x.double().view(s, heads, d).transpose(0, 1) for x in (q, k, v))
    scores = qh @ kh.transpose(1, 2) * d**-0.5
    if mask is not None:
        scores = scores + mask.double()
    probs = torch.softmax(scores, dim=-1)
    return probs, (probs @ vh).transpose(0, 1).reshape(s, h)


def _run(fn, q, k, v, mask, heads, threads=None):
    s, h = q.shape
    probs = torch.full((heads, s, s), float("nan"))
    context = torch.full((s, h), float("nan"))
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        used = fused.attention(q, k, v, mask, probs, context, heads, (h // heads) ** -0.5, build=fn)
    finally:
        torch.set_num_threads(previous)
    return used, probs, context


@needs_kernel
def test_the_widest_build_the_cpu_has_is_the_one_in_use():
    # On CI's machine this must hold: a silent fallback would leave the kernel untested and the speed lost.
    assert fused.status() == f"in use ({fused._ISA_NAMES[fused.best_isa()]})"
    assert fused.kernel() is not None


@needs_kernel
@pytest.mark.parametrize("head_size", [16, 32, 48, 64])
@pytest.mark.parametrize("length", [1, 2, 7, 12, 13, 16, 17, 31, 33, 40, 100, 129])
def test_matches_torch_with_and_without_padding(build, head_size, length):
    heads = 3
    g = torch.Generator().manual_seed(length * 100 + head_size)
    q, k, v = (torch.randn(length, heads * head_size, generator=g) * 1.5 for _ in range(3))
    mask = torch.zeros(length)
    padded = max(1, length - length // 3)
    mask[padded:] = NEG
    for m in (None, mask):
        used, probs, context = _run(build, q, k, v, m, heads)
        assert used
        want_probs, want_context = _reference(q, k, v, m, heads)
        assert (probs.double() - want_probs).abs().max() <= 1e-6
        assert (context.double() - want_context).abs().max() <= 1e-5
        if m is not None:
            # padding keys get exactly zero weight, as in the reference (exp underflows to 0)
            assert bool((probs[..., padded:] == 0).all())
            torch.testing.assert_close(probs.sum(-1), torch.ones(heads, length), rtol=0, atol=1e-6)


@needs_kernel
def test_bert_base_shape_at_512_tokens_and_strided_rows(build):
    g = torch.Generator().manual_seed(1)
    s, heads, d = 512, 12, 64
    # rows of a wider (S, 3H) buffer: the kernel reads the given row stride, not a copy
    qkv = torch.randn(s, 3 * heads * d, generator=g)
    q, k, v = qkv.split(heads * d, dim=1)
    used, probs, context = _run(build, q, k, v, None, heads)
    assert used
    want_probs, want_context = _reference(q, k, v, None, heads)
    assert (probs.double() - want_probs).abs().max() <= 1e-6
    assert (context.double() - want_context).abs().max() <= 1e-5


@needs_kernel
def test_same_bits_at_one_and_two_threads(build):
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(77, 4 * 48, generator=g) for _ in range(3))
    mask = torch.zeros(77)
    mask[60:] = NEG
    _, p1, c1 = _run(build, q, k, v, mask, 4, threads=1)
    _, p2, c2 = _run(build, q, k, v, mask, 4, threads=2)
    assert torch.equal(p1, p2) and torch.equal(c1, c2)


def test_a_nan_score_spoils_its_rows_as_in_the_reference(build):
    # A NaN weight in a checkpoint must show as NaN, not as a quietly renormalised attention row.
    g = torch.Generator().manual_seed(4)
    for position in (0, 5, 39):
        q, k, v = (torch.randn(40, 2 * 16, generator=g) for _ in range(3))
        k[position, 0] = float("nan")
        _, probs, context = _run(build, q, k, v, None, 2)
        want, _ = _reference(q, k, v, None, 2)
        assert torch.equal(probs.isnan(), want.isnan()), position
        assert bool(probs[0].isnan().all()) and not bool(probs[1].isnan().any())


@needs_kernel
@pytest.mark.parametrize("length", [5, 64, 333])
def test_exp_keeps_relative_accuracy_over_a_wide_range_of_weights(build, length, request):
    # Small integers make every fp32 score exact (D = 64, scale 1/8), so what is compared is the kernel's own
    # exp and normalisation, for weights from 1 down to fp32's underflow. Rounding the exponent costs a little
    # per unit of gap below the row's largest score; near the top, a few ulp at most. (A polynomial coefficient
    # off by 0.2 % fails both bounds.)
    g = torch.Generator().manual_seed(length)
    q, k, v = (torch.randint(-8, 9, (length, 2 * 64), generator=g).float() for _ in range(3))
    _, probs, context = _run(build, q, k, v, None, 2)
    want, want_context = _reference(q, k, v, None, 2)
    scores = torch.stack(
        [q[:, h * 64 : (h + 1) * 64].double() @ k[:, h * 64 : (h + 1) * 64].double().T for h in (0, 1)]
    )
    gap = (scores.amax(-1, keepdim=True) - scores) / 8  # in nats
    assert float(gap.max()) > 90  # the range reaches fp32's underflow
    got = probs.double()
    normal = want > 1e-36
    relative = ((got - want).abs() / want)[normal]
    assert bool((relative <= 4e-7 + 1.6e-7 * gap[normal]).all()), float(relative.max())
    assert bool((got[~normal] <= 2e-36).all())
    # Where exp(-gap) falls below fp32's normal range, the AVX2 build's exp flushes to zero and the AVX-512 one
    # keeps subnormal weights.
    deep = gap > 87.4  # exp(-87.4) < 2^-126
    subnormal = (want > 1e-43) & (want < 1.1e-38)
    if length == 333:
        assert int((deep & subnormal).sum()) > 100
    if request.node.callspec.params["build"] == "avx512":
        assert bool((got[subnormal] > 0).all())
        assert bool(((got - want).abs()[subnormal] <= 4e-45 + 0.01 * want[subnormal]).all())
    else:
        assert bool((got[deep] == 0).all())
    assert (context.double() - want_context).abs().max() <= 1e-5


@needs_kernel
def test_a_row_whose_keys_are_all_padding_gets_equal_weights_as_in_the_reference(build):
    g = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(20, 2 * 32, generator=g) for _ in range(3))
    mask = torch.full((20,), NEG)
    _, probs, context = _run(build, q, k, v, mask, 2)
    # torch in fp32, as transformers computes it: score + most-negative rounds to the same value for every key
    scores = torch.stack([q[:, h * 32 : (h + 1) * 32] @ k[:, h * 32 : (h + 1) * 32].T for h in (0, 1)])
    want = torch.softmax(scores * 32**-0.5 + mask, dim=-1)
    torch.testing.assert_close(want, torch.full((2, 20, 20), 1 / 20), rtol=0, atol=1e-7)
    torch.testing.assert_close(probs, want, rtol=0, atol=1e-7)
    torch.testing.assert_close(context, v.mean(0).expand(20, -1), rtol=0, atol=1e-5)


def test_layouts_it_does_not_cover_are_declined_untouched(build):
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(9, 2 * 40, generator=g) for _ in range(3))  # head size 40: no register tile for it
    used, probs, context = _run(build, q, k, v, None, 2)
    assert not used
    assert bool(probs.isnan().all()) and bool(context.isnan().all())
    q64 = torch.randn(9, 128, dtype=torch.float64)  # not fp32
    probs = torch.empty(2, 9, 9, dtype=torch.float64)
    assert not fused.attention(q64, q64, q64, None, probs, torch.empty_like(q64), 2, 0.125, build=build)


@needs_kernel
@pytest.mark.parametrize("width", [1, 7, 16, 37, 768, 1024])
def test_layer_norm_matches_torch_strided_and_in_place(build, width):
    g = torch.Generator().manual_seed(width)
    # rows 5 floats wider than the data, an offset mean and a spread as after a residual add
    x = (torch.randn(9, width + 5, generator=g) * 3 + 5)[:, :width]
    weight, bias = torch.randn(width, generator=g), torch.randn(width, generator=g)
    want = torch.nn.functional.layer_norm(x, (width,), weight, bias, 1e-12)
    out = torch.full((9, width), float("nan"))
    assert fused.layer_norm(x, weight, bias, 1e-12, out, build=build)
    torch.testing.assert_close(out, want, rtol=0, atol=2e-6)
    inplace = x.clone()
    assert fused.layer_norm(inplace, weight, bias, 1e-12, inplace, build=build)
    assert torch.equal(inplace, out)
    # one thread or two: the same bits (rows are independent)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        single = torch.empty(9, width)
        assert fused.layer_norm(x, weight, bias, 1e-12, single, build=build)
    finally:
        torch.set_num_threads(previous)
    assert torch.equal(single, out)


@needs_kernel
@pytest.mark.parametrize("width", [7, 768])
def test_layer_norm_adds_the_residual_as_the_reference_rounds_it(build, width):
    g = torch.Generator().manual_seed(width + 1)
    x = torch.randn(6, width, generator=g) * 3
    residual = (torch.randn(6, width + 2, generator=g) + 1)[:, :width]  # strided rows
    weight, bias = torch.randn(width, generator=g), torch.randn(width, generator=g)
    summed = x + residual  # the reference: the projection plus the residual, rounded, then the norm
    out = torch.empty(6, width)
    assert fused.layer_norm(x, weight, bias, 1e-12, out, residual, build=build)
    without = torch.empty(6, width)
    assert fused.layer_norm(summed, weight, bias, 1e-12, without, build=build)
    assert torch.equal(out, without)  # adding while reading rounds exactly as adding first
    torch.testing.assert_close(
        out, torch.nn.functional.layer_norm(summed, (width,), weight, bias, 1e-12), rtol=0, atol=2e-6
    )
    inplace = residual.clone()
    assert fused.layer_norm(x, weight, bias, 1e-12, inplace, inplace, build=build)  # out is the residual
    assert torch.equal(inplace, out)
    assert not fused.layer_norm(x, weight, bias, 1e-12, out, residual[:3], build=build)  # wrong shape


@needs_kernel
def test_layer_norm_of_a_constant_row_is_its_bias_as_in_torch(build):
    # variance 0: only eps keeps the division finite, as in torch
    x = torch.full((2, 24), 3.25)
    weight, bias = torch.randn(24), torch.randn(24)
    out = torch.empty(2, 24)
    assert fused.layer_norm(x, weight, bias, 1e-12, out, build=build)
    torch.testing.assert_close(out, torch.nn.functional.layer_norm(x, (24,), weight, bias, 1e-12))
    torch.testing.assert_close(out, bias.expand(2, 24), rtol=0, atol=0)


@needs_kernel
def test_layer_norm_declines_layouts_it_does_not_cover_untouched(build):
    x, weight, bias = torch.randn(4, 8), torch.randn(8), torch.randn(8)
    out = torch.full((4, 8), float("nan"))
    for args in (
        (x.double(), weight.double(), bias.double(), out.double()),  # not fp32
        (x.t().contiguous().t(), weight, bias, out),  # columns not contiguous
        (x, weight[:4], bias, out),  # weight of the wrong width
        (x, weight, bias, out[:2]),  # out of the wrong shape
        (x[None], weight, bias, out[None]),  # not 2-D
    ):
        assert not fused.layer_norm(*args[:3], 1e-12, args[3], build=build)
    assert bool(out.isnan().all())


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("BERTSCOPE_FUSED_ATTENTION", "0")
    fn, why, isa = fused._load()
    assert fn is None and "BERTSCOPE_FUSED_ATTENTION" in why and isa == ""


@needs_kernel
def test_a_compiler_that_fails_means_the_library_path_and_a_reason(monkeypatch, tmp_path):
    cache = tmp_path / "cache"
    fake = tmp_path / "fake-cc"
    # answers --version like a compiler, then fails the build itself
    fake.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && { echo "fake-cc 1.0"; exit 0; }\necho "no, not today" >&2\nexit 1\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("BERTSCOPE_CACHE_DIR", str(cache))
    monkeypatch.setenv("CC", str(fake))
    fn, why, _ = fused._load()
    assert fn is None and why.startswith("could not be built") and "no, not today" in why
    assert cache.is_dir() and list(cache.iterdir()) == []  # the half-built temporary file is gone


@needs_kernel
def test_a_compiler_that_writes_nothing_leaves_nothing_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("BERTSCOPE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "true")  # exits 0, writes no library
    fn, why, _ = fused._load()
    assert fn is None and "wrote no shared library" in why
    assert list(tmp_path.iterdir()) == []


def test_without_a_home_the_cache_goes_to_a_private_temporary_folder(monkeypatch):
    for name in ("BERTSCOPE_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(fused.Path, "home", staticmethod(no_home))
    assert fused.cache_dir() == fused.Path(fused.tempfile.gettempdir()) / f"bertscope-{fused.os.getuid()}"


def test_setting_up_can_fail_in_any_way_without_stopping_a_model(monkeypatch):
    def broken():
        raise RuntimeError("anything at all")

    # every check before the build passes, whatever machine runs this test
    monkeypatch.delenv("BERTSCOPE_FUSED_ATTENTION", raising=False)
    monkeypatch.setattr(fused.platform, "system", lambda: "Linux")
    monkeypatch.setattr(fused.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(fused, "_cpu_flags", lambda: frozenset({"avx2", "fma"}))
    monkeypatch.setattr(fused.torch.__config__, "parallel_info", lambda: "ATen parallel backend: OpenMP")
    monkeypatch.setattr(fused, "find_compiler", lambda: "cc")
    monkeypatch.setattr(fused.subprocess, "run", lambda *a, **k: SimpleNamespace(stdout="cc 1.0\n"))
    monkeypatch.setattr(fused, "cache_dir", broken)
    fn, why, isa = fused._load()
    assert fn is None and "anything at all" in why and isa == ""


@needs_kernel
def test_a_cache_folder_others_can_write_is_refused(monkeypatch, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("BERTSCOPE_CACHE_DIR", str(shared))
    fn, why, _ = fused._load()
    assert fn is None and "only this user can write" in why
    assert list(shared.iterdir()) == []


@needs_kernel
def test_builds_into_the_cache_once(monkeypatch, tmp_path):
    monkeypatch.setenv("BERTSCOPE_CACHE_DIR", str(tmp_path))
    compiler = "cc" if fused.shutil.which("cc") else "gcc"
    first = fused._build(compiler, fused.best_isa())
    stamp = first.stat().st_mtime_ns
    second = fused._build(compiler, fused.best_isa())
    assert first == second and second.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [first.name]


@needs_kernel
def test_builds_unused_for_30_days_are_forgotten_recent_ones_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("BERTSCOPE_CACHE_DIR", str(tmp_path))
    old, recent = tmp_path / "fused_attention-avx2-0000000000000000.so", tmp_path / "fused_attention-0123.so"
    for path in (old, recent):
        path.write_bytes(b"\x7fELF not really")
    month = 31 * 24 * 3600
    fused.os.utime(old, (fused.time.time() - month, fused.time.time() - month))
    fn, why, _ = fused._load()
    assert fn is not None, why
    names = {p.name for p in tmp_path.iterdir()}
    assert (
        old.name not in names and recent.name in names and len(names) == 2
    )  # the new build and the recent one


@pytest.mark.skipif(not packing_available(), reason="this torch build has no oneDNN")
@needs_kernel
def test_packed_model_runs_the_kernels_and_agrees_with_the_library_path(tmp_path, monkeypatch, spy, norm_spy):
    checkpoint = make_checkpoint(
        tmp_path, "pretraining", seed=8, hidden_size=96, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64,
    )  # fmt: skip
    model = bert_core.load_pretrained(checkpoint)
    texts = ["the bank by the river", "we deposited cash at the bank today , and then we left"]
    fast = model.analyze_batch(texts)
    assert spy == [True] * (2 * 2)  # two layers x two sequences (the batch is padded: masks in use)
    assert norm_spy == [True] * (2 * 2)  # two LayerNorms a layer, each over the whole batch
    # as where the kernels cannot be built: attention by the library, residuals added in the matmuls
    monkeypatch.setattr(fused, "_loaded", (None, "switched off for this test", ""))
    library = model.analyze_batch(texts)
    assert spy[4:] == [False] * 2 and norm_spy[4:] == [False] * 4
    for a, b in zip(fast, library, strict=True):
        np.testing.assert_allclose(a.attentions, b.attentions, rtol=0, atol=1e-6)
        np.testing.assert_allclose(a.hidden_states, b.hidden_states, rtol=0, atol=1e-5)


@pytest.mark.skipif(not packing_available(), reason="this torch build has no oneDNN")
def test_every_build_keeps_a_padded_batch_within_1e5_of_transformers(
    build, tmp_path, monkeypatch, spy, norm_spy
):

    checkpoint = make_checkpoint(
        tmp_path,
        "pretraining",
        seed=9,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=96,
    )  # fmt: skip  (head size 64, as bert-base)
    monkeypatch.setattr(fused, "_loaded", (build, "in use (this test's build)", "this test's build"))
    model = bert_core.load_pretrained(checkpoint)
    texts = ["the bank by the river", "we deposited cash at the bank today , and then we left the bank"]
    results = model.analyze_batch(texts)
    assert spy == [True] * (2 * 2)  # the kernels, not the library path, made these results
    assert norm_spy == [True] * (2 * 2)
    _assert_matches_transformers(checkpoint, texts, results)


@pytest.mark.skipif(not packing_available(), reason="this torch build has no oneDNN")
def test_without_the_kernels_the_packed_path_stays_within_1e5_of_transformers(
    tmp_path, monkeypatch, spy, norm_spy
):
    # What users without a compiler (or off Linux x86-64) get: CI has the kernels, so this is its only check.
    checkpoint = make_checkpoint(
        tmp_path, "pretraining", seed=10, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=96,
    )  # fmt: skip
    monkeypatch.setattr(fused, "_loaded", (None, "switched off for this test", ""))
    model = bert_core.load_pretrained(checkpoint)
    assert model.network.is_packed and model.info.attention_kernel == ""
    texts = ["the bank by the river", "we deposited cash at the bank today , and then we left the bank"]
    results = model.analyze_batch(texts)
    assert (
        spy == [False] * 2 and norm_spy == [False] * 4
    )  # attention: declined at the first row of each layer
    _assert_matches_transformers(checkpoint, texts, results)


@pytest.mark.skipif(not packing_available(), reason="this torch build has no oneDNN")
@needs_kernel
def test_concurrent_calls_through_the_kernels_equal_serial_calls(tmp_path, spy, norm_spy):
    checkpoint = make_checkpoint(
        tmp_path,
        "pretraining",
        seed=11,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
    )  # fmt: skip  (head size 32: the attention kernel serves it)
    model = bert_core.load_pretrained(checkpoint)
    texts = [f"the {w} sat on the bank of the river" * (1 + i % 3) for i, w in enumerate("abcdefgh")]
    serial = {t: model.analyze(t) for t in texts}
    assert spy and all(spy) and norm_spy and all(norm_spy)
    results = analyze_concurrently(model, texts)
    assert all(spy) and all(norm_spy)
    for text in texts:
        np.testing.assert_array_equal(results[text].attentions, serial[text].attentions)
        np.testing.assert_array_equal(results[text].hidden_states, serial[text].hidden_states)


def _assert_matches_transformers(checkpoint, texts, results) -> None:
    import transformers

    hf = transformers.BertModel.from_pretrained(checkpoint, attn_implementation="eager").eval()
    longest = max(len(r.input_ids) for r in results)
    ids = torch.zeros(len(texts), longest, dtype=torch.long)
    keep = torch.zeros(len(texts), longest, dtype=torch.long)
    for row, r in enumerate(results):
        ids[row, : len(r.input_ids)] = torch.tensor(r.input_ids)
        keep[row, : len(r.input_ids)] = 1
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=keep, output_attentions=True, output_hidden_states=True)
    for row, r in enumerate(results):
        s = len(r.input_ids)
        want_att = torch.stack([a[row, :, :s, :s] for a in ref.attentions]).numpy()
        want_hid = torch.stack([h[row, :s] for h in ref.hidden_states]).numpy()
        np.testing.assert_allclose(r.attentions, want_att, rtol=0, atol=1e-5)
        np.testing.assert_allclose(r.hidden_states, want_hid, rtol=0, atol=1e-5)


def test_exact_mode_never_calls_it(tiny_checkpoint, monkeypatch):
    model = bert_core.load_pretrained(tiny_checkpoint, pack_weights=False)
    for name in ("attention", "layer_norm"):
        monkeypatch.setattr(
            fused, name, lambda *a, **k: pytest.fail("exact mode must keep the reference's calls")
        )
    model.analyze("the bank by the river")
    assert bert_module.fused is fused


@pytest.mark.skipif(not packing_available(), reason="this torch build has no oneDNN")
@needs_kernel
def test_model_info_names_the_kernel_only_where_it_serves_the_model(tmp_path):
    checkpoint = make_checkpoint(
        tmp_path / "d16", "pretraining", hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32,
    )  # fmt: skip
    fast = bert_core.load_pretrained(checkpoint)
    exact = bert_core.load_pretrained(checkpoint, pack_weights=False)
    assert fast.info.attention_kernel == fused._ISA_NAMES[fused.best_isa()]
    assert fast.info.attention_kernel_status == f"in use ({fast.info.attention_kernel})"
    assert exact.info.attention_kernel == ""
    assert exact.info.attention_kernel_status == "not used in exact mode"
    odd = make_checkpoint(
        tmp_path / "d20",
        "pretraining",
        hidden_size=40,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    )  # head size 20: no register tile for it, so the library path serves it
    odd_info = bert_core.load_pretrained(odd).info
    assert (
        odd_info.attention_kernel == "" and odd_info.attention_kernel_status == "not built for head size 20"
    )
