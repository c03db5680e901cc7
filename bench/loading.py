"""Loading a bert-base-size checkpoint, and the memory it takes to serve it.

time: bert_core.load_pretrained(dir) vs transformers.BertForPreTraining.from_pretrained(dir) (+ tokenizer),
      alternating, the file already in the page cache after the first round.
peak RSS: a fresh process that loads bert-base, then analyze() at 512 tokens, analyze_batch() of six
      64-token texts, predict_masks(); the peak resident set (VmHWM) of that process. The reference process does the same work
      with transformers (a padded batch of six with every attention and hidden state, MLM logits at the
      [MASK]), so every column is like for like.
first load: the same two calls in a fresh process each time (after the imports), what a server's first
      student or a `bertscope` command waits for; --against REV also runs ours as of git revision REV (a
      temporary worktree), so a change is measured against its base in one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _common as c

FIRST = r"""
import json, sys, time
sys.path[:0] = [{root!r}]
import torch
torch.set_num_threads(2)
if {ours!r}:
    import bert_core
    t = time.perf_counter()
    bert_core.load_pretrained({path!r})
else:
    import transformers
    # transformers imports a model's code when its class is first named: that import is not timed, as ours is not
    tokenizer, model = transformers.BertTokenizer, transformers.BertForPreTraining
    t = time.perf_counter()
    tokenizer.from_pretrained({path!r})
    model.from_pretrained({path!r}, attn_implementation="eager")
print(json.dumps(time.perf_counter() - t))
"""

SERVE = r"""
import json, resource, sys
sys.path[:0] = [{bench!r}, {root!r}]
import _common as c
c.set_threads(2)
def rss():
    # VmHWM belongs to this process's own address space; ru_maxrss on Linux also carries the parent's
    # high-water mark across fork + exec, which would charge the benchmark's own models to the child.
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out = {{}}
if {ours!r}:
    import bert_core
    out["import"] = rss()
    m = bert_core.load_pretrained({path!r})
    out["loaded"] = rss()
    m.analyze(c.text_of_tokens(512))
    out["analyze 512"] = rss()
    m.analyze_batch([c.text_of_tokens(64, seed=s) for s in range(6)])
    out["batch of 6"] = rss()
    m.predict_masks("aaa [MASK] aab")
else:
    import torch, transformers
    out["import"] = rss()
    tok = transformers.BertTokenizer.from_pretrained({path!r})
    hf = transformers.BertForPreTraining.from_pretrained({path!r}, attn_implementation="eager").eval()
    out["loaded"] = rss()
    with torch.inference_mode():
        o = hf(**tok(c.text_of_tokens(512), return_tensors="pt"), output_attentions=True, output_hidden_states=True)
        torch.stack(o.attentions).numpy(); torch.stack(o.hidden_states).numpy()
    out["analyze 512"] = rss()
    with torch.inference_mode():
        enc = tok([c.text_of_tokens(64, seed=s) for s in range(6)], return_tensors="pt", padding=True)
        o = hf.bert(**enc, output_attentions=True, output_hidden_states=True)
        torch.stack(o.attentions).numpy(); torch.stack(o.hidden_states).numpy()
    out["batch of 6"] = rss()
    with torch.inference_mode():
        enc = tok("aaa [MASK] aab", return_tensors="pt")
        logits = hf(**enc).prediction_logits[0]
        at = (enc["input_ids"][0] == tok.mask_token_id).nonzero()[:, 0]
        torch.topk(torch.softmax(logits[at], -1), 5)
out["peak"] = rss()
print(json.dumps(out))
"""


def serve_rss(ours: bool, path: str) -> dict:
    code = SERVE.format(bench=str(c.ROOT / "bench"), root=str(c.ROOT), ours=ours, path=path)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def first_load(ours: bool, path: str, root: Path) -> float:
    """Seconds the first load takes in a fresh process whose code is the tree at `root`."""
    code = FIRST.format(root=str(root), ours=ours, path=path)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    return json.loads(res.stdout.strip().splitlines()[-1])


def first_loads(path: str, repeats: int, against: str | None) -> dict[str, list[float]]:
    """Fresh processes in turn, the order rotating each round: {"ours", "ref"[, "base"]} -> seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = {"ours": (True, c.ROOT), "ref": (False, c.ROOT)}
        if against:
            base = Path(tmp) / "base"
            subprocess.run(["git", "-C", str(c.ROOT), "worktree", "add", "--detach", "-q", str(base), against],
                           check=True)  # fmt: skip
            runs["base"] = (True, base)
        try:
            times: dict[str, list[float]] = {k: [] for k in runs}
            names = list(runs)
            for r in range(repeats):
                for k in names[r % len(names) :] + names[: r % len(names)]:
                    times[k].append(first_load(runs[k][0], path, runs[k][1]))
        finally:
            if against:
                subprocess.run(
                    ["git", "-C", str(c.ROOT), "worktree", "remove", "--force", str(base)], check=False
                )
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=10)  # the median of >= 10, as for every timing here
    p.add_argument("--quick", action="store_true")
    p.add_argument("--against", metavar="REV", help="also time the first load of ours as of git revision REV")
    args = p.parse_args()
    repeats = 3 if args.quick else args.repeats
    c.set_threads(2)
    import transformers
    from transformers.utils import logging as hf_logging

    import bert_core

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    path = c.bert_base_checkpoint()

    def ref():
        transformers.BertTokenizer.from_pretrained(path)
        return transformers.BertForPreTraining.from_pretrained(path, attn_implementation="eager").eval()

    t = c.alternate({"ours": lambda: bert_core.load_pretrained(path), "ref": ref}, repeats, warmup=1)
    # Time to a first result: ours reads and packs every weight up front, the reference maps the file and
    # reads pages on first use, so load time alone flatters the reference.
    import forward as fw

    text = c.text_of_tokens(8)

    def ref_first():
        hf = transformers.BertModel.from_pretrained(path, attn_implementation="eager").eval()
        fw.reference_fn(transformers.BertTokenizer.from_pretrained(path), hf, text)()

    first = c.alternate(
        {"ours": lambda: bert_core.load_pretrained(path).analyze(text), "ref": ref_first}, repeats, warmup=1
    )
    fresh = first_loads(str(path), repeats, args.against)
    ours_rss, ref_rss = serve_rss(True, str(path)), serve_rss(False, str(path))
    print()
    print("load_pretrained vs from_pretrained (bert-base, 440 MB safetensors, warm page cache)")
    print(c.machine() + "; " + c.load_average())
    print(
        c.table(
            ["", "ours ms", "reference ms", "ratio"],
            [
                [
                    name,
                    c.median(x["ours"]) * 1e3,
                    c.median(x["ref"]) * 1e3,
                    c.paired_ratio(x["ours"], x["ref"]),
                ]
                for name, x in (
                    ("load", t),
                    ("load + first analyze (8 tokens)", first),
                    ("first load in a fresh process", fresh),
                )
            ],
        )
    )
    if args.against:
        ratios = [a / b for a, b in zip(fresh["ours"], fresh["base"], strict=True)]
        print(
            f"first load in a fresh process, this tree / {args.against}: {statistics.median(ratios):.2f} "
            f"({c.median(fresh['ours']) * 1e3:.0f} against {c.median(fresh['base']) * 1e3:.0f} ms)"
        )
    print()
    print("peak resident memory of a fresh process, MB (goal for ours: <= 1200 MB)")
    keys = ["import", "loaded", "analyze 512", "batch of 6", "peak"]
    print(
        c.table(
            ["", *keys],
            [["bert_core", *(ours_rss[k] for k in keys)], ["transformers", *(ref_rss[k] for k in keys)]],
        )
    )
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
