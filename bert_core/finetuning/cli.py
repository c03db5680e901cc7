"""`bertscope finetune`: train a task head on a checkpoint's encoder and write a checkpoint directory.

    bertscope finetune --task {classify,pair,tag,qa} --data FILE --from DIR --out DIR [--epochs N] ...
    bertscope finetune make-data --task {senses,roles,qa} --out FILE [--examples N] [--seed S]

The data file is CSV (with a header row) or JSON Lines; data.py lists each task's columns. The output
directory is a Hugging Face checkpoint that `bertscope --model DIR`, `bert_core.load_pretrained(DIR)` and
transformers' `AutoModelFor...` classes open; it is rewritten after every epoch. Problems with the input (a
bad row, labels the model's head does not have, an answer out of reach) end the command with exit status 2
and a message naming the line.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
import time
from pathlib import Path

from ..checks import counted
from ..errors import BertScopeError
from ..paths import (
    in_path,
    out_dir,
    out_file,
    replace_problem,
    seed_number,
    stopped_writing,
    writable_problem,
)
from ..pretraining.cli import ProgressBar, _clock, in_flags, refuse
from ..pretraining.train import SAVE_DTYPES, CheckpointWriteError
from .data import COLUMNS, TASKS
from .train import FinetuneConfig, StepStats

log = logging.getLogger(__name__)

SCORE_NAMES = {
    "loss": "held-out loss",
    "accuracy": "accuracy",
    "macro_f1": "macro-F1",
    "token_accuracy": "token accuracy",
    "entity_f1": "entity F1",
    "exact_match": "exact match",
    "f1": "F1",
}


def _parser() -> argparse.ArgumentParser:
    d = FinetuneConfig("classify")
    columns = "; ".join(f"{task}: {', '.join(COLUMNS[task])}" for task in TASKS)
    p = argparse.ArgumentParser(
        prog="bertscope finetune",
        description="Fine-tune a task head (classifier, sentence-pair classifier, tagger, question answering) "
        "on a checkpoint's encoder.",
        epilog=f"Data columns (CSV header or JSON keys) - {columns}. Tag rows give space-separated words and one "
        "tag per word; QA rows give answer_start as a character offset into the context. Make the project's "
        "own data with: bertscope finetune make-data --task {senses,roles,qa} --out FILE",
    )
    p.add_argument("--task", required=True, choices=TASKS, help="what the head learns")
    p.add_argument(
        "--data", required=True, type=in_path, help="CSV (header row) or JSON Lines (.jsonl) training data"
    )
    p.add_argument(
        "--from",
        dest="source",
        required=True,
        help="checkpoint directory (or hub id; bertscope also takes the bundled @demo, @demo-qa, ...) to start from",
    )
    p.add_argument(
        "--out", required=True, type=out_dir, help="directory to write the fine-tuned checkpoint to"
    )
    g = p.add_argument_group("training")
    g.add_argument("--epochs", type=int, default=d.epochs, help=f"passes over the data ({d.epochs})")
    g.add_argument(
        "--lr", type=float, default=d.learning_rate, help=f"peak learning rate ({d.learning_rate})"
    )
    g.add_argument("--batch-size", type=int, default=d.batch_size, help=f"examples per step ({d.batch_size})")
    g.add_argument(
        "--warmup",
        type=float,
        default=d.warmup,
        help=f"warm-up: a share of all steps below 1 (0.1 = the first tenth), else a number of steps ({d.warmup})",
    )
    g.add_argument(
        "--weight-decay", type=float, default=d.weight_decay, help=f"AdamW decay ({d.weight_decay})"
    )
    g.add_argument(
        "--seed", type=seed_number, default=d.seed, help=f"random seed: split, order, new head ({d.seed})"
    )
    g.add_argument(
        "--eval-fraction",
        type=float,
        default=d.eval_fraction,
        help=f"share of the examples held out and scored after each epoch ({d.eval_fraction})",
    )
    g.add_argument("--max-length", type=int, help="longest input in pieces, specials included (the model's)")
    g.add_argument("--new-head", action="store_true", help="train a new head even if the checkpoint has one")
    g.add_argument(
        "--skip-unreachable",
        action="store_true",
        help="qa: leave out (and count) examples whose answer (or question) takes more of the model's positions "
        "than there are, instead of stopping",
    )
    g.add_argument(
        "--threads", type=int, help="CPU threads for torch (on a busy machine 1 or 2 is often fastest)"
    )
    g = p.add_argument_group("output")
    g.add_argument(
        "--save-dtype",
        choices=tuple(SAVE_DTYPES),
        default=d.save_dtype,
        help=f"weights' storage type ({d.save_dtype})",
    )
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _make_data_parser() -> argparse.ArgumentParser:
    from .corpus_tasks import KINDS

    p = argparse.ArgumentParser(
        prog="bertscope finetune make-data",
        description="Write fine-tuning data drawn from BERTScope's own corpus generator: senses (which sense of "
        "an ambiguous word a sentence uses; task classify), roles (person / place / time / object tags; task "
        "tag), qa (who / where / when questions over short passages; task qa).",
    )
    p.add_argument("--task", required=True, choices=tuple(KINDS), help="which data set")
    p.add_argument("--out", required=True, type=out_file, help="file to write: .jsonl or .csv")
    p.add_argument("--examples", type=int, default=2000, help="rows to write (2000)")
    p.add_argument("--seed", type=seed_number, default=0, help="generator seed (0)")
    return p


def make_data_main(argv: list[str]) -> int:
    from .corpus_tasks import KINDS, make_data

    parser = _make_data_parser()
    args = parser.parse_args(argv)
    if args.examples < 1:
        parser.error("--examples must be at least 1")
    try:
        path = make_data(args.task, args.out, args.examples, args.seed)
    except (BertScopeError, ValueError) as exc:
        parser.error(str(exc))
    except (KeyboardInterrupt, OSError) as exc:
        return stopped_writing(parser.prog, args.out, exc)
    print(f"wrote {args.examples} {args.task} examples to {path} (train with --task {KINDS[args.task]})")
    return 0


def _scores(scores: dict[str, float]) -> str:
    return ", ".join(f"{SCORE_NAMES[k]} {v:.3f}" for k, v in scores.items() if k in SCORE_NAMES)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "make-data":
        return make_data_main(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        config = FinetuneConfig(
            args.task,
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            warmup=args.warmup,
            weight_decay=args.weight_decay,
            seed=args.seed,
            eval_fraction=args.eval_fraction,
            max_length=args.max_length,
            new_head=args.new_head,
            skip_unreachable=args.skip_unreachable,
            save_dtype=args.save_dtype,
        )
    except ValueError as exc:
        parser.error(in_flags(str(exc), _FLAGS))
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    source = Path(args.source).expanduser()
    if source.is_dir() and source.resolve() == args.out.resolve():
        refuse(
            parser, "--out is the checkpoint --from reads: write the fine-tuned model to another directory"
        )
    problem = replace_problem(args.out, "finetuning.json", "finetune") or writable_problem(args.out)
    if problem:
        refuse(parser, problem)
    earlier = _saved_epoch(args.out)
    if earlier is not None:  # said before the data is read, so as what will be (a bad file replaces nothing)
        print(
            f"bertscope finetune: the earlier checkpoint in {args.out} will be replaced once an epoch is written",
            file=sys.stderr,
        )

    import torch

    from .data import read_examples
    from .train import finetune

    if args.threads:
        torch.set_num_threads(args.threads)

    def epoch_line(epoch: int, scores: dict[str, float]) -> None:
        train = f"train loss {scores['train_loss']:.3f}, " if "train_loss" in scores else ""
        held_out = _scores(scores) or "nothing held out"
        print(f"epoch {epoch}/{config.epochs}: {train}{held_out}", file=sys.stderr, flush=True)

    def detail(s: StepStats) -> str:
        return f" epoch {s.epoch}/{s.epochs}"

    started = time.monotonic()
    info = {"data": Path(args.data).name, "command": "bertscope finetune " + shlex.join(argv)}
    try:
        examples = read_examples(args.data, args.task)
        result = finetune(
            examples,
            args.source,
            config,
            out_dir=args.out,
            on_step=None if args.quiet else ProgressBar(every=20, detail=detail),
            on_epoch=epoch_line,
            info=info,
        )
    except BertScopeError as exc:  # the data, the labels or the checkpoint: the user's to fix
        message = in_flags(str(exc), _FLAGS)  # "max_length 600 is more than ..." names --max-length
        # A row the model cannot take is found after reading, by its line: named with its file, as a row
        # the reader refused is.
        message = f"{args.data}, {message}" if message.startswith("line ") else message
        print(f"bertscope finetune: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted; {_what_was_kept(args.out, earlier, config.epochs)}", file=sys.stderr)
        return 130
    except (FloatingPointError, CheckpointWriteError) as exc:  # and what the folder holds: an earlier epoch's
        kept = _what_was_kept(args.out, earlier, config.epochs, unsaved=isinstance(exc, CheckpointWriteError))
        print(f"bertscope finetune: error: {exc}; {kept}", file=sys.stderr)
        return 1
    skipped = f" ({result.skipped} skipped: answer out of reach)" if result.skipped else ""
    held_out = (
        f"{_scores(result.scores)} on {counted(result.eval_examples, 'held-out example')}"
        if result.eval_examples
        else "nothing held out"
    )
    print(
        f"done in {_clock(time.monotonic() - started)}: {counted(result.train_examples, 'training example')}{skipped}; "
        f"{held_out}; model written to {os.fspath(args.out)}"
    )
    return 0


def _saved_epoch(out: Path) -> tuple[float, int] | None:
    """(modification time, epoch) of the checkpoint `out` holds, or None without one."""
    meta = out / "finetuning.json"
    try:
        return meta.stat().st_mtime, int(json.loads(meta.read_text(encoding="utf-8")).get("epoch", 0))
    except (OSError, ValueError, AttributeError):
        return None


def _what_was_kept(
    out: Path, earlier: tuple[float, int] | None, epochs: int, *, unsaved: bool = False
) -> str:
    """What an interrupted run left in `out`: a model is saved after each epoch, so one stopped in its first
    epoch wrote nothing (it once said "the last finished epoch (if any) is in OUT" of a folder never made).
    `unsaved`: an epoch finished but its checkpoint could not be written (it was said that none finished)."""
    now = _saved_epoch(out)
    if now is not None and now != earlier:
        last = "the last saved" if unsaved else "the last finished"
        return f"epoch {now[1]} of {epochs}, {last}, is saved in {out}"
    why = "" if unsaved else "no epoch finished, so "
    if earlier is not None:
        return f"{why}{out} still holds the earlier checkpoint"
    if not out.exists():
        return f"{why}nothing was saved (no {out} was made)"
    return f"{why}nothing was saved in {out}"


# FinetuneConfig's settings as this command's options, for its messages (pretraining.cli.in_flags).
_FLAGS = {
    "epochs": "--epochs",
    "batch_size": "--batch-size",
    "learning_rate": "--lr",
    "weight_decay": "--weight-decay",
    "warmup": "--warmup",
    "eval_fraction": "--eval-fraction",
    "max_length": "--max-length",
    "save_dtype": "--save-dtype",
}


if __name__ == "__main__":
    raise SystemExit(main())
