# ruff: noqa: B023  (closures are timed inside the loop iteration that defines them)
"""The batched interpretability passes at bert-base size, against issue 15's goal of under 10 s each on 2 cores:

  PLL:        pseudo_log_likelihood() of a 30-piece sentence (30 rows, each with one piece masked)
  importance: head_importance() at one [MASK], every head switched off alone (one intact pass, then 144 rows
              that each start at the ablated head's layer)
Each pass alternates with one plain forward of the same text (no attention stack), the reference: "x forward"
is how many forwards the pass costs, which holds when other processes share the cores and wall times do not.
Also timed, for scale: attention_flow() at MAX_FLOW_TOKENS tokens (pure-Python max-flow, one core), rollout and
the other per-text passes.
"""

from __future__ import annotations

import argparse

import _common as c

GOAL_S = 10.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pieces", type=int, default=30, help="non-special pieces in the PLL sentence")
    p.add_argument("--importance-lengths", type=int, nargs="+", default=[32, 128])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    c.set_threads(args.threads)
    import bert_core

    m = bert_core.load_pretrained(c.bert_base_checkpoint())
    rows = []

    def timed(name: str, text: str, fn, goal: float | None = None) -> None:
        enc = m.encode(text)
        times = c.alternate(
            {"pass": fn, "forward": lambda: m._run([enc], None, keep_attentions=False)},
            args.repeats,
            warmup=1,
        )
        seconds = c.median(times["pass"])
        rows.append(
            [
                name,
                len(enc.tokens),
                seconds,
                c.median(times["forward"]) * 1e3,
                c.paired_ratio(times["pass"], times["forward"]),
                "" if goal is None else seconds / goal,
            ]
        )
        print(f"  {name} at {len(enc.tokens)} tokens: {seconds:.2f} s", flush=True)

    sentence = c.text_of_tokens(args.pieces + 2)
    assert len(m.encode(sentence).tokens) == args.pieces + 2
    timed("pseudo_log_likelihood", sentence, lambda: m.pseudo_log_likelihood(sentence), GOAL_S)
    for n in args.importance_lengths:
        words = c.filler_words(n - 2)
        words[len(words) // 2] = "[MASK]"
        text = " ".join(words)
        timed("head_importance", text, lambda: m.head_importance(text), GOAL_S)
    words = c.filler_words(args.pieces)
    words[len(words) // 2] = "[MASK]"
    masked = " ".join(words)
    timed("logit_lens", masked, lambda: m.logit_lens(masked))
    analysis = m.analyze(sentence)
    timed(
        "value_weighted_attention (given an analysis)", sentence, lambda: m.value_weighted_attention(analysis)
    )
    timed("attention_details (one layer)", sentence, lambda: m.attention_details(sentence, layer=6))
    short_text = c.text_of_tokens(bert_core.interpret.MAX_FLOW_TOKENS)
    short = m.analyze(short_text)
    timed("attention_flow (all layers)", short_text, lambda: bert_core.attention_flow(short.attentions))
    timed("attention_rollout (all layers)", short_text, lambda: bert_core.attention_rollout(short.attentions))

    print()
    print(
        f"Interpretability passes, bert-base (12 layers x 12 heads, random weights), {args.threads} threads, "
        f"median of {args.repeats} rounds after one warm-up, each round alternating the pass with one forward"
    )
    print(c.machine() + "; " + c.load_average())
    print(
        c.table(
            ["pass", "tokens", "seconds", "forward ms", "x forward", f"x goal ({GOAL_S:.0f} s)"],
            rows,
        )
    )
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
