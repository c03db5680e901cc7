"""Concurrency: 8 and 20 threads calling analyze() on different texts at once.

Every threaded result must equal the serial result for the same text, bit for bit; throughput (analyses per
second) is reported against the serial loop. The model is shared; nothing in the core keeps per-call state.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ThreadPoolExecutor

import _common as c
import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, nargs="+", default=[8, 20])
    p.add_argument("--texts", type=int, default=40)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    n = 20 if args.quick else args.texts
    repeats = 3 if args.quick else args.repeats
    c.set_threads(2)
    import bert_core

    m = bert_core.load_pretrained(c.bert_base_checkpoint())
    texts = [c.text_of_tokens(args.tokens - (i % 5) * 7, seed=i) for i in range(n)]
    reference = [m.analyze(t) for t in texts]
    mismatches = dict.fromkeys(["serial", *(f"{w} threads" for w in args.threads)], 0)

    def check(name: str, results: dict[int, object]) -> None:
        for i in range(n):
            r, s = results[i], reference[i]
            if not (
                np.array_equal(r.attentions, s.attentions)
                and np.array_equal(r.hidden_states, s.hidden_states)
                and r.tokens == s.tokens
            ):
                mismatches[name] += 1

    def serial() -> None:
        check("serial", {i: m.analyze(texts[i]) for i in range(n)})

    def threaded(workers: int):
        def run() -> None:
            order = list(range(n))[::-1]  # a different order from the serial run
            with ThreadPoolExecutor(workers) as pool:
                check(
                    f"{workers} threads",
                    dict(zip(order, pool.map(lambda i: m.analyze(texts[i]), order), strict=True)),
                )

        return run

    # Every setting runs once per round, in alternating order, so load from elsewhere hits all of them alike.
    fns = {"serial": serial, **{f"{w} threads": threaded(w) for w in args.threads}}
    t = c.alternate(fns, repeats, warmup=1)
    rows = []
    for name, times in t.items():
        workers = 1 if name == "serial" else int(name.split()[0])
        ratio = 1.0 if name == "serial" else c.paired_ratio(t["serial"], times)
        same = "-" if name == "serial" else ("yes" if mismatches[name] == 0 else f"NO ({mismatches[name]})")
        rows.append([name, workers, n / c.median(times), ratio, same])
    print()
    print(
        f"{n} analyze() calls of {args.tokens - 28}-{args.tokens} tokens, bert-base, torch intra-op threads = 2; "
        f"{repeats} alternating rounds (medians); every result of every round compared with a first serial pass"
    )
    print(c.machine() + "; " + c.load_average())
    print(c.table(["run", "threads", "analyses/s", "throughput vs serial", "identical to serial"], rows))
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
