"""Loading a bert-base-size checkpoint, and the memory it takes to serve it.

time: bert_core.load_pretrained(dir) vs transformers.BertForPreTraining.from_pretrained(dir) (+ tokenizer),
      alternating, the file already in the page cache after the first round.
peak RSS: a fresh process that loads bert-base, then analyze() at 512 tokens, analyze_batch() of six
      64-token texts, predict_masks(); the peak resident set (VmHWM) of that process. The reference process does the same work
      with transformers (a padded batch of six with every attention and hidden state, MLM logits at the
      [MASK]), so every column is like for like.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import _common as c

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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=10)  # the median of >= 10, as for every timing here
    p.add_argument("--quick", action="store_true")
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
                for name, x in (("load", t), ("load + first analyze (8 tokens)", first))
            ],
        )
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
