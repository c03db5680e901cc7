# ruff: noqa: B023  (closures are timed inside the loop iteration that defines them)
"""The fused kernels vs the library calls they replace, on bert-base's own shapes, in one run.

  attention: one layer's scores + softmax + context for one sequence (12 heads of 64), probabilities written
             into a kept (N, S, S) buffer: BertLayer.fused_attention (bert_core/modeling/fused_attention.c)
             vs BertLayer.library_attention (torch.baddbmm, softmax, bmm; what runs without the kernel)
  output:    one layer's output projection, residual and LayerNorm on (S, 768): the matmul without its residual,
             then the fused LayerNorm adding it, vs the library path (residual added by oneDNN inside the
             matmul, then F.layer_norm)
  forward:   the whole packed forward (every attention map and hidden state) with the kernels and without
             them (the library path: what runs where they cannot be built)
All alternate round by round; "max |diff|" compares the two paths' outputs (every attention map and hidden
state for the forward rows).
"""

from __future__ import annotations

import argparse
import contextlib

import _common as c
import torch


@contextlib.contextmanager
def library_only():
    """The packed path without the kernels, exactly as where they cannot be built (none loaded)."""
    from bert_core.modeling import fused

    real = fused._loaded
    fused._loaded = (None, "switched off by bench/attention.py", "")
    try:
        yield
    finally:
        fused._loaded = real


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lengths", type=int, nargs="+", default=[8, 32, 128, 512])
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true")
    p.add_argument(
        "--isa", choices=["avx512", "avx2"], help="time this build of the kernel (default: the widest)"
    )
    args = p.parse_args()
    repeats = 4 if args.quick else args.repeats
    c.set_threads(args.threads)
    import bert_core
    from bert_core.modeling import bert, fused

    if args.isa:
        fused._loaded = fused._load(args.isa)
    model = bert_core.load_pretrained(c.bert_base_checkpoint())
    if fused.kernel() is None:
        raise SystemExit(f"the fused attention kernel is not in use here: {fused.status()}")
    layer = model.network.bert.encoder.layer[0]
    n_heads = model.config.num_attention_heads
    rows = []
    for n in args.lengths:
        g = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(n, model.config.hidden_size, generator=g) for _ in range(3))
        probs = {name: torch.empty(1, n_heads, n, n) for name in ("fused", "library")}
        with torch.inference_mode():
            t = c.alternate(
                {
                    "fused": lambda: layer.fused_attention(q, k, v, (1, n), None, probs["fused"]),
                    "library": lambda: layer.library_attention(q, k, v, (1, n), None, None, probs["library"]),
                },
                repeats * 5,  # a fraction of a millisecond at short lengths: more rounds
            )
            ctx_f = layer.fused_attention(q, k, v, (1, n), None, probs["fused"])
            ctx_l = layer.library_attention(q, k, v, (1, n), None, None, probs["library"])
        diff = max(float((probs["fused"] - probs["library"]).abs().max()), float((ctx_f - ctx_l).abs().max()))
        row = ["attention, one layer", n, min(t["fused"]) * 1e3, min(t["library"]) * 1e3]
        rows.append(row + [c.paired_ratio(t["fused"], t["library"]), diff])
        rows[-1].insert(5, min(t["fused"]) / min(t["library"]))

        so = layer.attention.output
        context, hidden = torch.randn(n, model.config.hidden_size, generator=g), q

        def output_block():  # what BertLayer._after_attention does before the feed-forward block
            fast = fused.kernel() is not None
            attended = bert._project(so.dense, context, None if fast else hidden)
            return bert._layer_norm(
                so.LayerNorm, attended, True, out=attended, residual=hidden if fast else None
            )

        def library_block():
            with library_only():
                return output_block()

        with torch.inference_mode():
            t = c.alternate({"fused": output_block, "library": library_block}, repeats * 5)
            diff = float((output_block() - library_block()).abs().max())
        rows.append(
            ["output + residual + LN", n, min(t["fused"]) * 1e3, min(t["library"]) * 1e3]
            + [c.paired_ratio(t["fused"], t["library"]), min(t["fused"]) / min(t["library"]), diff]
        )

        enc = model.encode(c.text_of_tokens(n))

        def library_forward():
            with library_only():
                return model._run([enc], None)

        t = c.alternate({"fused": lambda: model._run([enc], None), "library": library_forward}, repeats)
        a, b = model._run([enc], None), library_forward()
        diff = max(
            float((a.attention_stack - b.attention_stack).abs().max()),
            float((a.hidden_stack - b.hidden_stack).abs().max()),
        )
        rows.append(
            ["forward, 12 layers", n, min(t["fused"]) * 1e3, min(t["library"]) * 1e3]
            + [c.paired_ratio(t["fused"], t["library"]), min(t["fused"]) / min(t["library"]), diff]
        )
        print(f"  {n} tokens done", flush=True)
    print()
    print(
        f"kernels: {fused.status()}; bert-base shapes (12 heads of 64); times are the best round, ratio paired"
    )
    print(c.machine() + "; " + c.load_average())
    print(
        c.table(
            ["what", "tokens", "fused ms", "library ms", "ratio (paired)", "ratio of bests", "max |diff|"],
            [
                [r[0], r[1], f"{r[2]:.3g}", f"{r[3]:.3g}", f"{r[4]:.3f}", f"{r[5]:.3f}", f"{r[6]:.1e}"]
                for r in rows
            ],
        )
    )
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
