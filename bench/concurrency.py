"""Concurrency: 8 and 20 threads calling analyze() on different texts at once.

Every threaded result must equal the serial result for the same text, bit for bit; throughput (analyses per
second) is reported against the serial loop. The model is shared; nothing in the core keeps per-call state.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import _common as c
import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, nargs="+", default=[8, 20])
    p.add_argument("--texts", type=int, default=40)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    n = 20 if args.quick else args.texts
    c.set_threads(2)
    import bert_core

    m = bert_core.load_pretrained(c.bert_base_checkpoint())
    texts = [c.text_of_tokens(args.tokens - (i % 5) * 7, seed=i) for i in range(n)]
    m.analyze(texts[0])
    t0 = time.perf_counter()
    serial = [m.analyze(t) for t in texts]
    serial_s = time.perf_counter() - t0
    rows = []
    for workers in args.threads:
        order = list(range(n))[::-1]  # a different order from the serial run
        t0 = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            results = dict(zip(order, pool.map(lambda i: m.analyze(texts[i]), order), strict=True))
        elapsed = time.perf_counter() - t0
        same = all(
            np.array_equal(results[i].attentions, serial[i].attentions)
            and np.array_equal(results[i].hidden_states, serial[i].hidden_states)
            and results[i].tokens == serial[i].tokens
            for i in range(n)
        )
        rows.append([f"{workers} threads", workers, n / elapsed, elapsed, "yes" if same else "NO"])
    # the serial loop once more, after the threaded runs, so a burst of load from elsewhere hits both sides
    t0 = time.perf_counter()
    again = [m.analyze(t) for t in texts]
    serial_s = min(serial_s, time.perf_counter() - t0)
    assert all(np.array_equal(a.attentions, b.attentions) for a, b in zip(again, serial, strict=True))
    for row in rows:
        row[3] = serial_s / row[3]
    rows.insert(0, ["serial (best of 2)", 1, n / serial_s, 1.0, "-"])
    print()
    print(
        f"{n} analyze() calls of {args.tokens - 28}-{args.tokens} tokens, bert-base, torch intra-op threads = 2"
    )
    print(c.machine() + "; " + c.load_average())
    print(c.table(["run", "threads", "analyses/s", "throughput vs serial", "identical to serial"], rows))
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
