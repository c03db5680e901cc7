# ruff: noqa: B023  (closures are timed inside the loop iteration that defines them)
"""Masked-word prediction: the vocabulary projection only at the [MASK] positions vs full MLM logits.

  masks only: predict_masks() (forward, then transform + the vocabulary projection at the P [MASK] rows only,
              computed as (V, H) x (H, P) on CPU; the "F.linear" column is the same rows as (P, H) x (H, V))
  full:       the same forward, then the MLM head over all S rows ((S, H) x (H, V)), then top-k at the masks
Both give the same top-k; the table shows the head alone and the whole call.
"""

from __future__ import annotations

import argparse

import _common as c
import numpy as np
import torch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lengths", type=int, nargs="+", default=[32, 128, 512])
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    repeats = 4 if args.quick else args.repeats
    c.set_threads(args.threads)
    import bert_core

    m = bert_core.load_pretrained(c.bert_base_checkpoint())
    rows = []
    for n in args.lengths:
        words = c.filler_words(n - 2)
        for i in (1, len(words) // 2):
            words[i] = "[MASK]"
        text = " ".join(words)
        enc = m.encode(text)
        positions = [i for i, t in enumerate(enc.tokens) if t == "[MASK]"]
        out = m._run([enc], None)
        seq = out.last_hidden_state[0]
        index = torch.tensor(positions)

        def head_masks():
            with torch.inference_mode():
                return torch.topk(
                    torch.log_softmax(m.network.logits("mlm", seq.index_select(0, index)), -1), 5
                )

        def head_masks_plain():
            # The same rows through the untransposed projection F.linear(rows, table): what the reference runs.
            with torch.inference_mode():
                head = m.network.cls.predictions
                rows = head.transform(seq.index_select(0, index))
                logits = torch.nn.functional.linear(rows, head.decoder_weight, head.bias)
                return torch.topk(torch.log_softmax(logits, -1), 5)

        def head_full():
            with torch.inference_mode():
                logits = m.network.logits("mlm", seq)  # (S, V)
                return torch.topk(torch.log_softmax(logits, -1)[index], 5)

        def call_full():
            # Tokenises too, as predict_masks does, so the whole-call columns compare like with like.
            o = m._run([m.encode(text)], None)
            with torch.inference_mode():
                logits = m.network.logits("mlm", o.last_hidden_state[0])
                return torch.topk(torch.log_softmax(logits, -1)[index], 5)

        assert torch.equal(head_masks().indices, head_full().indices)
        np.testing.assert_allclose(head_masks().values, head_full().values, atol=1e-5)
        assert torch.equal(head_masks().indices, head_masks_plain().indices)
        t = c.alternate({"hm": head_masks, "hp": head_masks_plain, "hf": head_full}, repeats * 3)
        e = c.alternate({"cm": lambda: m.predict_masks(text), "cf": call_full}, repeats)
        rows.append(
            [
                n,
                len(positions),
                c.median(t["hm"]) * 1e3,
                c.median(t["hp"]) * 1e3,
                c.median(t["hf"]) * 1e3,
                c.paired_ratio(t["hm"], t["hf"]),
                c.median(e["cm"]) * 1e3,
                c.median(e["cf"]) * 1e3,
                c.paired_ratio(e["cm"], e["cf"]),
            ]
        )
        print(f"  {n} tokens done", flush=True)
    print()
    print(
        f"MLM head at [MASK] rows only vs full logits, bert-base (V = 30522), {args.threads} threads, "
        f"median of {repeats * 3} (head) / {repeats} (whole call) alternating rounds"
    )
    print(c.machine() + "; " + c.load_average())
    print(
        c.table(
            [
                "tokens",
                "masks",
                "head, masks ms",
                "same rows, F.linear ms",
                "head, full ms",
                "ratio",
                "predict_masks ms",
                "forward + full ms",
                "ratio",
            ],
            rows,
        )
    )
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
