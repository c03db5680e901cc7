"""Paths the command-line labs read and write, checked before any work: `argparse` types.

Why before: a run writes its checkpoint after training (minutes to hours); an output path that is a file, or a
directory nobody may write to, was found only then, in a traceback, the training lost.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from .checks import check_seed


def seed_number(value: str) -> int:
    """argparse type for --seed: a whole number of 0 or more, named with the option by argparse."""
    try:
        return check_seed(int(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of 0 or more, got {value!r}") from None


def in_path(value: str) -> Path:
    """A file to read: `~` expanded, as a shell does only at the start of a word (`--data=~/x` keeps it)."""
    return Path(value).expanduser()


def out_dir(value: str) -> Path:
    """A directory to write a checkpoint into (made if missing): refused now if it is a file. Whether it can be
    written is `writable_problem`'s to say, once the lab's other checks have passed (its probe touches the
    directory, which a server holding a model there would read as the model's files changing)."""
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value} is a file, not a directory")
    return path


def writable_problem(path: Path) -> str | None:
    """Why a run cannot write into directory `path`, found by trying, since permission bits say nothing for
    root or a read-only mount; None when it can."""
    try:
        _try_writing_in(path, str(path))
    except argparse.ArgumentTypeError as exc:
        return f"--out: {exc}"
    return None


def out_file(value: str) -> Path:
    """A file to write (its directory made if missing): refused now if it is a directory or cannot be written."""
    path = Path(value).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{value} is a directory, not a file")
    _try_writing_in(path.parent, value)
    return path


def _try_writing_in(directory: Path, value: str) -> None:
    """Make `directory` (and missing parents), write and delete a scratch file there, and remove again what
    this made: the run itself makes them when it writes, and a refused run leaves nothing behind."""
    made: list[Path] = []
    probe = directory
    while not probe.exists():
        made.append(probe)
        probe = probe.parent
    try:
        if not probe.is_dir():
            raise argparse.ArgumentTypeError(f"cannot write {value}: {probe} is a file")
        directory.mkdir(parents=True, exist_ok=True)
        handle, scratch = tempfile.mkstemp(dir=directory, prefix=".bertscope-write-test-")
        os.close(handle)
        os.unlink(scratch)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot write {value}: {exc.strerror or exc}") from exc
    finally:
        for path in made:  # deepest first
            try:
                path.rmdir()
            except OSError:
                pass


def replace_problem(out: Path, record: str, lab: str, foreign: tuple[str, ...] = ()) -> str | None:
    """Why a run must not write into `out`, or None: it is new or empty, or holds an earlier checkpoint of this
    lab (its `record` file, e.g. pretraining.json, and none of the `foreign` records of another lab: a
    fine-tuned checkpoint keeps a copy of its base's pretraining.json), which re-running the command is meant
    to replace. A directory of other files (notes, another model) is not silently written over. Hidden files
    (.DS_Store) and a save cut short (.partial-*) do not count."""
    if not out.is_dir():
        return None
    present = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    if any(name in present for name in foreign):
        return f"--out {out} holds a checkpoint of another lab ({', '.join(foreign)}): choose a new or empty directory"
    if not present or record in present:
        return None
    shown = ", ".join(present[:3]) + (", ..." if len(present) > 3 else "")
    return (
        f"--out {out} already holds files no earlier `bertscope {lab}` run wrote ({shown}): choose a new or "
        "empty directory"
    )


def stopped_writing(command: str, path: Path, exc: BaseException) -> int:
    """Say in one line why a file-writing command stopped (Ctrl-C, a full disk) and that `path` is as it was
    (`written_whole` never touched it); the exit status: 130 for Ctrl-C, as a shell gives it, else 1."""
    had = "was left as it was" if path.exists() else "was not written"
    if isinstance(exc, KeyboardInterrupt):
        print(f"\n{command}: interrupted; {path} {had}", file=sys.stderr)
        return 130
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    print(f"{command}: error: cannot write {path} ({why}); it {had}", file=sys.stderr)
    return 1


@contextlib.contextmanager
def written_whole(path: Path, *, newline: str | None = None) -> Iterator[TextIO]:
    """A text file to write `path` through: written beside it under a temporary name and moved over it only
    once whole, so a write stopped part way (Ctrl-C, a full disk) leaves `path` as it was. make-corpus wrote in
    place, and a run stopped after 7 s replaced a corpus of 1,835 lines with 4,593 lines of a cut-short one,
    which a later `pretrain --corpus` read without a word. The file keeps what writing in place kept: a
    symlink's target is written (not the link replaced), and the mode of the file it replaces (else the one the
    umask gives a new file; mkstemp's own is private)."""
    path = path.resolve()
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", newline=newline, dir=path.parent, prefix=f".{path.name}.", delete=False
    )
    try:
        with handle:
            yield handle
        os.chmod(handle.name, mode)
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def not_utf8(path: Path, exc: UnicodeDecodeError) -> str:
    """What a file that is not UTF-8 text is told: where, and how to convert it. Python's own "'utf-8' codec can't
    decode byte 0xe9 in position 3" named no line and no way out (a spreadsheet's CSV is often Windows-1252)."""
    line = exc.object[: exc.start].count(b"\n") + 1
    byte = exc.object[exc.start : exc.start + 1].hex()
    return (
        f"{path} is not UTF-8 text (byte 0x{byte} on line {line}): save it as UTF-8, e.g. "
        f"iconv -f windows-1252 -t utf-8 {path.name} > utf8-{path.name}"
    )
