# ruff: noqa: B023  (closures are timed inside the loop iteration that defines them)
"""Forward pass with every attention map and hidden state: bert_core.analyze() vs transformers.

Both sides start from the same text and end with numpy arrays, on the same base-size random weights of the
chosen family (--architecture; default bert-base):
  ours:      model.analyze(text)  (tokenise, forward, every intermediate to numpy)
  reference: the family's transformers tokenizer (the Rust `tokenizers` backend in v5) -> AutoModel
             (attn_implementation="eager", output_attentions=True, output_hidden_states=True) under
             torch.inference_mode() -> attentions (L, N, S, S) and hidden states (L + 1, S, H) as numpy.
The two are timed alternately, round by round, after warm-up; the ratio is the median of per-round ratios.
"""

from __future__ import annotations

import argparse

import _common as c  # noqa: E402  (bench/ is run as a folder of scripts)

GOALS = {8: 0.6, 32: 0.6, 128: 0.8, 512: 0.9}


def reference_fn(tok, hf, text):
    import inspect

    import numpy as np
    import torch

    accepted = set(inspect.signature(hf.forward).parameters)  # DistilBERT takes no token_type_ids

    def run():
        with torch.inference_mode():
            enc = tok(text, return_tensors="pt")
            enc = {k: v for k, v in enc.items() if k in accepted}
            out = hf(**enc, output_attentions=True, output_hidden_states=True)
            att = torch.stack(out.attentions)[:, 0].numpy()  # (L, N, S, S)
            hid = torch.stack(out.hidden_states)[:, 0].numpy()  # (L + 1, S, H)
        return np.asarray(att), np.asarray(hid)

    return run


def load_both(directory, *, exact: bool = False, architecture: str = "bert"):
    import transformers

    import bert_core

    transformers.logging.set_verbosity_error()  # the load report lists the unused cls.* weights
    transformers.logging.disable_progress_bar()
    ours = bert_core.load_pretrained(directory, pack_weights=not exact)
    return ours, c.reference_tokenizer(architecture, directory), c.reference_model(directory)


def check_same(ours, tok, hf, text) -> float:
    import numpy as np

    r = ours.analyze(text)
    att, hid = reference_fn(tok, hf, text)()
    return max(float(np.abs(r.attentions - att).max()), float(np.abs(r.hidden_states - hid).max()))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lengths", type=int, nargs="+", default=[8, 32, 128, 512])
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="5 repeats, for a smoke run")
    p.add_argument("--architecture", choices=c.ARCHITECTURES, default="bert")
    p.add_argument(
        "--exact",
        action="store_true",
        help="ours without pre-packed weights (the app's BERTSCOPE_EXACT=1 mode)",
    )
    args = p.parse_args()
    repeats = 5 if args.quick else args.repeats
    c.set_threads(args.threads)
    directory = c.base_checkpoint(args.architecture)
    ours, tok, hf = load_both(directory, exact=args.exact, architecture=args.architecture)

    rows = []
    for n in args.lengths:
        text = c.text_of_tokens(n, architecture=args.architecture)
        assert len(ours.encode(text).tokens) == n
        diff = check_same(ours, tok, hf, text)
        reps = repeats if n >= 512 else repeats * 2  # short inputs are cheap: more rounds, less noise
        t = c.alternate({"ours": lambda: ours.analyze(text), "ref": reference_fn(tok, hf, text)}, reps)
        r = c.paired_ratio(t["ours"], t["ref"])
        rows.append(
            [
                n,
                c.median(t["ours"]) * 1e3,
                c.median(t["ref"]) * 1e3,
                r,
                c.ratio_of_medians(t["ours"], t["ref"]),
                min(t["ours"]) / min(t["ref"]),
                f"<= {GOALS.get(n, '-')}",
                "yes" if n in GOALS and r <= GOALS[n] else "no",
                f"{diff:.1e}",
            ]
        )
        print(f"  {n} tokens done", flush=True)
    print()
    print(
        f"analyze() vs transformers, {args.architecture} base-size random weights, batch 1, {args.threads} threads, "
        f"{repeats * 2} rounds below 512 tokens, {repeats} at 512"
    )
    print("ratio (paired) = median over rounds of ours/reference within a round; the goal applies to it")
    print(
        "ours: " + ("exact mode (plain Linear weights, MKL)" if args.exact else "pre-packed oneDNN weights")
    )
    print(c.machine() + "; " + c.load_average())
    print(
        c.table(
            [
                "tokens",
                "ours ms",
                "reference ms",
                "ratio (paired)",
                "ratio of medians",
                "ratio of bests",
                "goal",
                "met",
                "max |diff|",
            ],
            rows,
        )
    )
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
