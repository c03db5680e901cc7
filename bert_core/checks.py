"""Checks of arguments several passes share, each an InputError that names the argument and what it takes."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .errors import InputError


def check_seed(seed, name: str = "seed") -> int:
    """A random seed as numpy's generators take it: a whole number of 0 or more (a negative one ended in
    numpy's traceback, several frames down from the option that set it)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"{name} must be a whole number of 0 or more, got {seed!r}")
    return int(seed)


def check_whole(value, name: str, least: int = 1, most: int | None = None) -> int:
    """`value` as an int; InputError unless it is a whole number (numpy's too) from `least` (to `most`): an
    np.int64 read from an array was refused where a Python int passed."""
    whole = not isinstance(value, bool) and isinstance(value, (int, np.integer))
    if not whole or value < least or (most is not None and value > most):
        span = f"from {least} to {most}" if most is not None else f"of {least} or more"
        raise InputError(f"{name} must be a whole number {span}, got {value!r}")
    return int(value)


def check_batch_tokens(max_batch_tokens) -> int:
    """`max_batch_tokens` (the most B x S tokens one batch of a pass holds) as an int; InputError unless it is a
    whole number (numpy's too) of at least 1."""
    whole = not isinstance(max_batch_tokens, bool) and isinstance(max_batch_tokens, (int, np.integer))
    if not whole or max_batch_tokens < 1:
        raise InputError(f"max_batch_tokens must be a positive integer, got {max_batch_tokens!r}")
    return int(max_batch_tokens)


def head_mask_array(head_mask, shape: tuple[int, ...], dtype=np.float32) -> np.ndarray:
    """`head_mask` as a (layers, heads) array of `dtype` (a copy: a result must not change with the caller's
    array); InputError unless it is numbers from 0 to 1 of `shape`. NaN or inf scaled
    every later hidden state to NaN without a word; 2 or -1 scaled (or flipped) a head's output, which rollout
    then weighted so too: a mask keeps or switches off, with fractions between. Strings and ragged lists leaked
    numpy's own ValueError."""
    try:
        mask = np.array(head_mask, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise InputError(f"head_mask must be a (layers, heads) array of numbers: {exc}") from exc
    if mask.shape != tuple(shape):
        raise InputError(f"head_mask must have shape {tuple(shape)} (layers, heads), got {mask.shape}")
    if not np.isfinite(mask).all() or (mask.size and (mask.min() < 0 or mask.max() > 1)):
        raise InputError("head_mask must hold numbers from 0 to 1 (1 keeps a head, 0 switches it off)")
    return mask


def listed(values, name: str, instead: str) -> list:
    """`values` (a list, tuple, generator, ...) as a list, read once; InputError for one string, whose characters
    would each be taken for a text (`instead` says what to call for one), and for a value that is no sequence."""
    if isinstance(values, (str, bytes)):
        raise InputError(f"{name} must be a list, not one string: {instead}")
    if not isinstance(values, Iterable):
        raise InputError(f"{name} must be a list, got {type(values).__name__}")
    return list(values)


def counted(n: int, noun: str) -> str:
    """ "1 layer", "12 layers": a message's count with its noun ("1 training examples" read as a slip)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
