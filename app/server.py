"""What one server shared by a room needs: forward passes admitted a few at a time, and analyses cached within
a byte budget. Both live in `st.cache_resource` singletons (shared by every session of the process, never at
module level), and both are plain thread-safe classes testable without Streamlit.

Why admission: on 2 cores, 30 simultaneous forward passes each get 1/15th of a core and all finish late; run
one (or a few) at a time and the first answers come back at full speed while the rest wait their turn.
Why a byte budget: a 512-token bert-base analysis holds ~170 MB and an 8-token one ~1 MB, so an entry count
bounds nothing.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import numpy as np
import streamlit as st

ENV_MAX_FORWARDS = (
    "BERTSCOPE_MAX_FORWARDS"  # forward passes run at once, server-wide (default: cores // 2, >= 1)
)
ENV_CACHE_MB = "BERTSCOPE_CACHE_MB"  # bytes of cached analyses, server-wide (default 1500 MB: see below)
# A 4 GB server with bert-base: ~0.5 GB of weights, ~0.3 GB of Python, torch and Streamlit, one 512-token
# analysis in flight (~0.2 GB) and headroom for the sessions themselves leave about 1.5 GB for the cache.
DEFAULT_CACHE_MB = 1500


def _env_int(name: str, default: int, lowest: int) -> int:
    try:
        return max(lowest, int(os.environ.get(name, "").strip() or default))
    except ValueError:
        return default


class Admission:
    """At most `limit` holders at once; the rest wait in arrival order, and can be told how many are ahead."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self._running = 0
        self._waiting = 0

    def ahead(self) -> int:
        """How many a newcomer would wait behind: those waiting, plus the running ones if every slot is taken."""
        with self._lock:
            return self._waiting + (self._running if self._running >= self.limit else 0)

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the slots for the block; a forward pass that runs out of memory becomes a message for
        the page (bert_core.InputError), not an exception that ends the session's script."""
        with self._lock:
            self._waiting += 1
        try:
            self._slots.acquire()
        finally:
            with self._lock:
                self._waiting -= 1
        with self._lock:
            self._running += 1
        try:
            yield
        except MemoryError as exc:
            raise _out_of_memory() from exc
        except RuntimeError as exc:
            if "out of memory" not in str(exc).lower():
                raise
            raise _out_of_memory() from exc
        finally:  # an exception, a stopped script or a dropped session all give the slot back
            with self._lock:
                self._running -= 1
            self._slots.release()


def _out_of_memory():
    import bert_core

    return bert_core.InputError(
        "the server ran out of memory computing this input; try a shorter text, or ask again when it is less busy"
    )


def nbytes(result: Any) -> int:
    """The bytes of the numpy arrays a result holds (its dataclass fields, recursively)."""
    import dataclasses

    if isinstance(result, np.ndarray):
        return int(result.nbytes)
    if dataclasses.is_dataclass(result):
        return sum(nbytes(getattr(result, f.name)) for f in dataclasses.fields(result))
    if isinstance(result, (list, tuple)):
        return sum(nbytes(x) for x in result)
    return 0


class BudgetCache:
    """A least-recently-used cache bounded by the bytes of its values: adding one evicts the oldest until the
    rest fit, so the total exceeds the budget by at most the newest value (one larger than the budget is kept
    alone). Concurrent requests for one key compute it once; the others wait for that result."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[Hashable, threading.Lock] = {}
        self.total = 0

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]
            key_lock = self._pending.setdefault(key, threading.Lock())
        with key_lock:  # one computes; the same key's other callers wait here, then find it cached
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key][0]
            try:
                value = compute()
            finally:
                with self._lock:
                    self._pending.pop(key, None)
            size = nbytes(value)
            with self._lock:
                self._items[key] = (value, size)
                self.total += size
                while self.total > self.budget and len(self._items) > 1:
                    _, (_, dropped) = self._items.popitem(last=False)
                    self.total -= dropped
            return value

    def __len__(self) -> int:
        return len(self._items)


@st.cache_resource(show_spinner=False)
def admission() -> Admission:
    return Admission(_env_int(ENV_MAX_FORWARDS, max(1, (os.cpu_count() or 2) // 2), 1))


@st.cache_resource(show_spinner=False)
def analyses() -> BudgetCache:
    return BudgetCache(_env_int(ENV_CACHE_MB, DEFAULT_CACHE_MB, 1) * 1024 * 1024)


def waiting_message(what: str) -> str:
    """The spinner text: what is being done, and the place in the queue when others are ahead."""
    ahead = admission().ahead()
    return what if ahead == 0 else f"Queued behind {ahead} other request(s) on this server, then: {what}"
