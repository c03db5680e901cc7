"""`bertscope pretrain`: pre-train a small BERT on a text file and write a checkpoint directory.

    bertscope pretrain --corpus FILE --out DIR [--steps N] [--hidden-size H] [--layers L] ...
    bertscope pretrain resume --corpus FILE --out DIR
    bertscope pretrain make-corpus --out FILE [--documents N] [--seed S]

The corpus is one sentence per line, with a blank line between documents (next sentence prediction
draws its NotNext partners from other documents). The output directory is a Hugging Face checkpoint that
`bertscope --model DIR` and `bert_core.load_pretrained(DIR)` open; it is rewritten every
`--checkpoint-every` steps, so an interrupted run still leaves a usable model. Ctrl-C stops a run after the
step in progress and writes a checkpoint of it (a second Ctrl-C stops at once); `resume` goes on from the last
checkpoint to the weights the run would have ended with uninterrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn

from ..paths import in_path, out_dir, replace_problem, seed_number, writable_problem
from .train import (
    DEFAULT_WARMUP_STEPS,
    MASKING_MODES,
    PAIR_TASKS,
    SAVE_DTYPES,
    TRAINING_STATE_FILE,
    CheckpointWriteError,
    StepStats,
    TrainingConfig,
    checkpoint_step,
)

log = logging.getLogger(__name__)


def _parser() -> argparse.ArgumentParser:
    d = TrainingConfig()
    p = argparse.ArgumentParser(
        prog="bertscope pretrain",
        description="Pre-train a small BERT (masked LM + next sentence prediction) on your own text.",
        epilog="Generate BERTScope's own corpus with: bertscope pretrain make-corpus --out corpus.txt\n"
        "Go on with a run stopped early with: bertscope pretrain resume --corpus FILE --out DIR",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--corpus",
        required=True,
        type=in_path,
        help="text file: one sentence per line, blank line between documents",
    )
    p.add_argument(
        "--out", required=True, type=out_dir, help="directory to write the checkpoint to (created if missing)"
    )
    p.add_argument(
        "--vocab",
        type=in_path,
        help="use this vocab.txt instead of training a WordPiece vocabulary (typographic quotes, dashes and "
        "ellipses it lacks are read as ASCII, as with a trained one; the checkpoint then has a tokenizer.json)",
    )
    g = p.add_argument_group("model size")
    g.add_argument(
        "--vocab-size", type=int, default=d.vocab_size, help=f"WordPiece pieces to learn ({d.vocab_size})"
    )
    g.add_argument("--hidden-size", type=int, default=d.hidden_size, help=f"H ({d.hidden_size})")
    g.add_argument("--layers", type=int, default=d.num_hidden_layers, help=f"L ({d.num_hidden_layers})")
    g.add_argument(
        "--heads", type=int, default=d.num_attention_heads, help=f"attention heads ({d.num_attention_heads})"
    )
    g.add_argument("--intermediate-size", type=int, help="feed-forward width (default 4 x hidden size)")
    g.add_argument(
        "--max-positions",
        type=int,
        default=d.max_position_embeddings,
        help=f"longest sequence ({d.max_position_embeddings})",
    )
    g = p.add_argument_group("objectives")
    g.add_argument(
        "--pair-task",
        choices=PAIR_TASKS,
        default=d.pair_task,
        help=f"sentence-pair objective ({d.pair_task})",
    )
    g.add_argument(
        "--masking", choices=MASKING_MODES, default=d.masking, help=f"masking schedule ({d.masking})"
    )
    g.add_argument(
        "--static-duplicates",
        type=int,
        default=d.static_duplicates,
        help=f"static masking: copies per sequence ({d.static_duplicates})",
    )
    g.add_argument(
        "--mlm-probability", type=float, default=d.mlm_probability, help="share of tokens chosen (0.15)"
    )
    g.add_argument(
        "--max-segment-sentences",
        type=int,
        default=d.max_segment_sentences,
        help=f"sentences per segment A / B, at most ({d.max_segment_sentences})",
    )
    g = p.add_argument_group("optimisation")
    g.add_argument("--steps", type=int, default=d.steps, help=f"optimisation steps ({d.steps})")
    g.add_argument(
        "--batch-size", type=int, default=d.batch_size, help=f"sequences per step ({d.batch_size})"
    )
    g.add_argument(
        "--lr", type=float, default=d.learning_rate, help=f"peak learning rate ({d.learning_rate})"
    )
    g.add_argument(
        "--warmup",
        type=int,
        help=f"warm-up steps (default: a tenth of --steps, at most {DEFAULT_WARMUP_STEPS})",
    )
    g.add_argument(
        "--weight-decay", type=float, default=d.weight_decay, help=f"AdamW decay ({d.weight_decay})"
    )
    g.add_argument(
        "--max-grad-norm", type=float, default=d.max_grad_norm, help=f"clip to this norm ({d.max_grad_norm})"
    )
    g.add_argument("--bf16", action="store_true", help="bfloat16 autocast (faster on recent CPUs)")
    g.add_argument("--threads", type=int, help="CPU threads for torch (on a busy machine 1 is often fastest)")
    g = p.add_argument_group("output")
    g.add_argument("--seed", type=seed_number, default=d.seed, help=f"random seed ({d.seed})")
    g.add_argument(
        "--checkpoint-every",
        type=int,
        default=d.checkpoint_every,
        help=f"steps between checkpoints ({d.checkpoint_every}; 0: only at the end)",
    )
    g.add_argument(
        "--save-dtype",
        choices=tuple(SAVE_DTYPES),
        default=d.save_dtype,
        help=f"weights' storage type ({d.save_dtype})",
    )
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


class ProgressBar:
    """A one-line progress bar on a terminal; one line every `every` steps when stderr is a file.

    Reads `step`, `total_steps`, `loss`, `learning_rate` and `elapsed_s` off each step's stats; `detail`
    (stats -> text) adds what a lab reports beside the loss (pre-training's MLM and pair losses by default).
    """

    def __init__(self, stream=None, every: int = 50, detail: Callable[[Any], str] | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every = every
        self.detail = detail or _pretraining_detail
        self._average = 0.0  # an exponential moving average of the loss from 0, and the steps it has seen
        self._seen = 0

    @property
    def smoothed(self) -> float:
        """The recent steps' loss: single-batch losses jump around too much to read. Corrected for its start at
        0 (as Adam's moments are), so it weighs the steps seen alike at first; started at step 1's loss
        instead, that one step still made half of it after 34 steps."""
        return self._average / (1 - 0.98**self._seen) if self._seen else 0.0

    def __call__(self, s) -> None:
        self._average = 0.98 * self._average + 0.02 * s.loss
        self._seen += 1
        if not self.tty and s.step % self.every and s.step != s.total_steps:
            return
        done = s.step / s.total_steps
        width = 24
        bar = "#" * int(done * width) + "." * (width - int(done * width))
        eta = s.elapsed_s / s.step * (s.total_steps - s.step)
        line = (
            f"step {s.step}/{s.total_steps} [{bar}] recent loss {self.smoothed:.3f}{self.detail(s)}"
            f" lr {s.learning_rate:.1e} {_clock(s.elapsed_s)} elapsed, {_clock(eta)} left"
        )
        if self.tty:
            self.stream.write("\r" + line + ("\n" if s.step == s.total_steps else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _pretraining_detail(s: StepStats) -> str:
    pair = "" if s.pair_loss is None else f" pair {s.pair_loss:.3f} acc {s.pair_accuracy:.2f}"
    return f" (this step: mlm {s.mlm_loss:.3f}{pair})"


def refuse(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """Exit with status 2 and one line, as parser.error does but without the usage: a file or its data at fault
    (no such corpus, not UTF-8, a folder that holds other files) is no misuse of the flags, and 17 lines of
    usage stood above the one that said what was wrong."""
    parser.exit(2, f"{parser.prog}: error: {message}\n")


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return (
        f"{seconds // 60}:{seconds % 60:02d}"
        if seconds < 3600
        else f"{seconds // 3600}h{seconds // 60 % 60:02d}"
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "make-corpus":  # says itself what an interruption left
        from .corpus import main as corpus_main

        return corpus_main(argv[1:])
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before training started (imports, reading the corpus): nothing was written
        print("\ninterrupted before training started; nothing was written", file=sys.stderr)
        return 130


def _main(argv: list[str]) -> int:
    if argv and argv[0] == "resume":
        return _resume_main(argv[1:], argv)
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    problem = replace_problem(args.out, "pretraining.json", "pretrain", foreign=("finetuning.json",))
    problem = problem or writable_problem(args.out)
    if problem:
        refuse(parser, problem)
    if (args.out / TRAINING_STATE_FILE).is_file():
        # Replaced at this run's first checkpoint, or by a Ctrl-C meant to take this command back: hours of the
        # other run gone for a forgotten word.
        refuse(
            parser,
            f"--out {args.out} holds an unfinished run ({checkpoint_step(args.out)}): go on with it with `bertscope "
            f"pretrain resume --corpus FILE --out {args.out}`, or to start over there, delete "
            f"{args.out / TRAINING_STATE_FILE} first",
        )
    corpus = args.corpus
    if corpus.is_dir():
        refuse(parser, f"--corpus {corpus} is a directory: name the text file in it to train on")
    if not corpus.is_file():
        refuse(
            parser,
            f"--corpus {corpus}: no such file (make one with: bertscope pretrain make-corpus --out {corpus})",
        )
    try:
        config = TrainingConfig(
            vocab_size=args.vocab_size,
            hidden_size=args.hidden_size,
            num_hidden_layers=args.layers,
            num_attention_heads=args.heads,
            intermediate_size=4 * args.hidden_size
            if args.intermediate_size is None
            else args.intermediate_size,
            max_position_embeddings=args.max_positions,
            pair_task=args.pair_task,
            masking=args.masking,
            static_duplicates=args.static_duplicates,
            mlm_probability=args.mlm_probability,
            max_segment_sentences=args.max_segment_sentences,
            steps=args.steps,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            warmup_steps=args.warmup,
            weight_decay=args.weight_decay,
            max_grad_norm=args.max_grad_norm,
            bf16=args.bf16,
            seed=args.seed,
            checkpoint_every=args.checkpoint_every,
            save_dtype=args.save_dtype,
        )
        config.bert_config(
            args.vocab_size
        )  # size checks (e.g. hidden size divisible by heads) before any work
        if args.vocab is None:
            from .vocab import check_vocab_size

            check_vocab_size(args.vocab_size)  # before the corpus is read, not after
    except ValueError as exc:
        parser.error(in_flags(str(exc), _FLAGS))

    import torch

    from ..errors import ModelLoadError
    from ..tokenizer import WordPieceTokenizer
    from .corpus import read_documents
    from .train import train

    if args.threads:
        torch.set_num_threads(args.threads)
    tokenizer = None
    if args.vocab:
        try:
            tokenizer = WordPieceTokenizer.from_vocab(
                args.vocab, max_length=config.max_position_embeddings, ascii_twins=True
            )
        except ModelLoadError as exc:
            refuse(parser, f"--vocab: {exc}")
    try:
        documents = read_documents(corpus)
    except ValueError as exc:
        refuse(parser, str(exc))
    # Said here, before the vocabulary is trained, as the other input errors are: training itself says it too,
    # but only after that wait, and with exit status 1. NSP draws its negatives from another document; SOP
    # swaps two segments of one, and a corpus of one document was refused for it too.
    if config.pair_task == "nsp" and len(documents) < 2:
        refuse(
            parser,
            f"--pair-task nsp needs at least two documents in --corpus (documents are separated by blank lines; "
            f"{corpus} holds {len(documents)}); or train the MLM alone with --pair-task none",
        )
    # Both pair tasks take their first segment's end inside a document: NSP too, whose corpus of one-sentence
    # documents trained a vocabulary first, then failed with status 1
    if config.pair_task != "none" and not any(len(d) >= 2 for d in documents):
        refuse(
            parser,
            f"--pair-task {config.pair_task} needs a document of two sentences or more in --corpus ({corpus} has "
            "none: its documents are separated by blank lines); or train the MLM alone with --pair-task none",
        )
    if (args.out / "pretraining.json").is_file():  # said once every check has passed: before, "replacing" led
        # a refusal of --warmup or --layers that replaced nothing
        print(f"bertscope pretrain: replacing the earlier checkpoint in {args.out}", file=sys.stderr)
    info = {"corpus": corpus.name, "command": "bertscope pretrain " + shlex.join(argv)}
    return _run(
        lambda **kw: train(documents, config, out_dir=args.out, tokenizer=tokenizer, info=info, **kw),
        args,
        config.pair_task,
    )


def _resume_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bertscope pretrain resume",
        description="Go on with a `bertscope pretrain` run from its last checkpoint, to the step it was planned to "
        "end at, with the options it was started with: it ends with the weights it would have had uninterrupted.",
    )
    p.add_argument("--corpus", required=True, type=in_path, help="the text file the run was started on")
    p.add_argument("--out", required=True, type=out_dir, help="the run's checkpoint directory")
    p.add_argument("--threads", type=int, help="CPU threads for torch (on a busy machine 1 is often fastest)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _resume_main(argv: list[str], command: list[str]) -> int:
    parser = _resume_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    if args.corpus.is_dir():
        refuse(parser, f"--corpus {args.corpus} is a directory: name the text file the run was started with")
    if not args.corpus.is_file():
        refuse(parser, f"--corpus {args.corpus}: no such file")
    if problem := writable_problem(args.out):
        refuse(parser, problem)

    from .corpus import read_documents
    from .train import corpus_problem, load_training_state, resume

    try:
        state = load_training_state(args.out)
        documents = read_documents(args.corpus)
        problem = corpus_problem(documents, state, args.out)
    except ValueError as exc:
        refuse(parser, str(exc))
    if problem:
        refuse(parser, problem)
    pair_task = state["training_config"]["pair_task"]
    # resume() runs on the run's own thread count unless told otherwise: another sums in another order, and
    # the weights end a few bits apart from the uninterrupted run's.
    threads = state.get("threads")
    seen = state.get("threads_seen") or [threads]
    if len(seen) > 1:
        print(
            f"bertscope pretrain resume: parts of this run trained on {' and '.join(map(str, seen))} threads, so "
            "its weights already differ in their last bits from an uninterrupted run's; it goes on with "
            f"{args.threads or threads}",
            file=sys.stderr,
        )
    elif args.threads and threads and args.threads != threads:
        print(
            f"bertscope pretrain resume: the run trained on {threads} thread(s); on {args.threads} its weights "
            "will differ in their last bits from an uninterrupted run's",
            file=sys.stderr,
        )
    info = {"resumed_with": "bertscope pretrain " + shlex.join(command)}
    return _run(
        lambda **kw: resume(documents, args.out, info=info, state=state, threads=args.threads, **kw),
        args,
        pair_task,
        prog="bertscope pretrain resume",
    )


def _run(
    train: Callable[..., Any], args: argparse.Namespace, pair_task: str, prog: str = "bertscope pretrain"
) -> int:
    """Run `train(on_step=, stop=)` with a progress bar, the first Ctrl-C asking it to stop after the step in
    progress (a checkpoint of that step is written), a second one stopping at once; then say what came of it."""
    stop_requested = False
    last = {"step": 0, "total": None}  # the last step done, so a Ctrl-C after the last says what comes
    progress = None if args.quiet else ProgressBar()

    def on_step(stats: StepStats) -> None:
        last.update(step=stats.step, total=stats.total_steps)
        if progress is not None:
            progress(stats)

    def on_interrupt(signum, frame) -> None:
        nonlocal stop_requested
        # Before the first step (a vocabulary trained, the data built, a first evaluation: minutes) there is
        # nothing to keep: stopped at once, rather than a step trained and a run left for `resume` to find.
        if stop_requested or last["step"] == 0:
            raise KeyboardInterrupt
        stop_requested = True
        if last["step"] == last["total"]:
            said = "finishing: writing the final model (Ctrl-C again to stop at once, losing the steps since the last checkpoint)"
        else:
            said = "stopping after this step (Ctrl-C again to stop at once)"
        print(f"\n{said} ...", file=sys.stderr)

    started, written_since = time.monotonic(), time.time()
    # Only where Ctrl-C would stop the program anyway: Python lets only the main thread set a handler, and a
    # program started with SIGINT ignored (`cmd &` in a script) keeps ignoring it.
    handle = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )
    previous = signal.signal(signal.SIGINT, on_interrupt) if handle else None
    try:
        result = train(on_step=on_step, stop=lambda: stop_requested)
    except KeyboardInterrupt:
        print(f"\ninterrupted; {_saved(args, written_since)}", file=sys.stderr)
        return 130
    except CheckpointWriteError as exc:
        print(f"{prog}: error: {exc}; {_saved(args, written_since)}", file=sys.stderr)
        return 1
    except (
        FloatingPointError
    ) as exc:  # and what the folder holds: an earlier checkpoint of the run may be there
        print(f"{prog}: error: {in_flags(str(exc), _FLAGS)}; {_saved(args, written_since)}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"{prog}: error: {in_flags(str(exc), _FLAGS)}", file=sys.stderr)
        return 1
    finally:
        if handle:
            signal.signal(signal.SIGINT, previous)
    if result.stopped_at is not None:
        print(
            f"stopped at step {result.stopped_at}; checkpoint written to {os.fspath(args.out)}; go on with: "
            f"{_resume_command(args)}",
            file=sys.stderr,
        )
        return 130
    before, after = result.eval_before, result.eval_after
    print(
        f"done in {_clock(time.monotonic() - started)}: MLM loss {before['mlm_loss']:.3f} -> {after['mlm_loss']:.3f}"
        + (
            f", {pair_task.upper()} loss {before['pair_loss']:.3f} -> {after['pair_loss']:.3f}"
            f" (accuracy {after['pair_accuracy']:.0%})"
            if "pair_loss" in after
            else ""
        )
        # measured on sequences drawn from the corpus it trained on (no held-out text): how well it learned
        # them, not how it reads new text
        + f", on fixed sequences of the training corpus; model written to {os.fspath(args.out)}"
    )
    return 0


def _saved(args: argparse.Namespace, since: float) -> str:
    """What a run stopped early left: its last checkpoint (and the command that goes on from it), or nothing.
    Written by this run only: the directory may hold an earlier run's records, which are not this one's."""
    record = args.out / "pretraining.json"
    try:
        fresh = record.stat().st_mtime >= since - 1
    except OSError:
        fresh = False
    if (
        not fresh and (args.out / TRAINING_STATE_FILE).is_file()
    ):  # a resume stopped before its first checkpoint
        return (
            f"the checkpoint it resumed from ({checkpoint_step(args.out)}) is still in {args.out}; go on from it "
            f"with: {_resume_command(args)}"
        )
    if not fresh:
        return f"no checkpoint of this run was written to {args.out}"
    if not (args.out / TRAINING_STATE_FILE).is_file():
        return f"the last checkpoint ({checkpoint_step(args.out)}) is in {args.out}"
    return f"the last checkpoint ({checkpoint_step(args.out)}) is in {args.out}; go on from it with: {_resume_command(args)}"


def _resume_command(args: argparse.Namespace) -> str:
    return shlex.join(
        ["bertscope", "pretrain", "resume", "--corpus", os.fspath(args.corpus), "--out", os.fspath(args.out)]
    )


# The settings' names in TrainingConfig's and BertConfig's messages, as the options this command takes: a
# user who typed --layers 0 was told about "config key 'num_hidden_layers'".
_FLAGS = {
    "vocab_size": "--vocab-size",
    "hidden_size": "--hidden-size",
    "num_hidden_layers": "--layers",
    "num_attention_heads": "--heads",
    "intermediate_size": "--intermediate-size",
    "max_position_embeddings": "--max-positions",
    "pair_task": "--pair-task",
    "masking": "--masking",
    "static_duplicates": "--static-duplicates",
    "mlm_probability": "--mlm-probability",
    "max_segment_sentences": "--max-segment-sentences",
    "steps": "--steps",
    "batch_size": "--batch-size",
    "learning_rate": "--lr",
    "warmup_steps": "--warmup",
    "weight_decay": "--weight-decay",
    "max_grad_norm": "--max-grad-norm",
    "checkpoint_every": "--checkpoint-every",
    "save_dtype": "--save-dtype",
}


def in_flags(message: str, flags: dict[str, str]) -> str:
    """`message` with each setting of `flags` named as its option ("config key 'num_hidden_layers' = 0" ->
    "--layers 0"); the fine-tuning lab's command uses it too."""
    names = "|".join(flags)
    message = re.sub(rf"(?:config key )?'({names})' = ", lambda m: f"{flags[m.group(1)]} ", message)
    # A bare name only where a message begins with it ("steps must be at least 1"): elsewhere the same word
    # is prose ("the run (10 steps)").
    return re.sub(rf"^({names})\b", lambda m: flags[m.group(1)], message)


if __name__ == "__main__":
    raise SystemExit(main())
