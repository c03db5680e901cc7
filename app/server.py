"""What one server shared by a room needs: forward passes admitted a few at a time, first come first served,
and every result of the model cached once for all sessions within a byte budget. Both live in
`st.cache_resource` singletons (shared by every session of the process, never at module level), and both are
plain thread-safe classes testable without Streamlit; `app.cache` draws the queue's place on the page.

Why admission: on 2 cores, 30 simultaneous forward passes each get 1/15th of a core and all finish late; run
one (or a few) at a time and the first answers come back at full speed while the rest wait their turn.
Why a byte budget: a 512-token bert-base analysis holds ~170 MB and an 8-token one ~1 MB, so an entry count
bounds nothing.

Each computation that really runs (not each session asking) is logged on the `bertscope.passes` logger; set
BERTSCOPE_LOG=info to see them on stderr (bench/sessions.py counts them).
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import dataclasses
import gc
import itertools
import logging
import os
import sys
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import numpy as np
import streamlit as st

from app.cpus import cores  # the forward limit's default, a name of this module so tests can set it

ENV_MAX_FORWARDS = (
    "BERTSCOPE_MAX_FORWARDS"  # forward passes run at once, server-wide (default: cores // 2, >= 1)
)
ENV_EXPRESS = (
    "BERTSCOPE_EXPRESS_FORWARDS"  # passes on short inputs that may run beside those (default 1; 0 = none)
)
ENV_CACHE_MB = "BERTSCOPE_CACHE_MB"  # bytes of cached results, server-wide (default 1500 MB: see below)
ENV_LOG = "BERTSCOPE_LOG"  # "info": one stderr line per computation that runs, with its wait and duration
# A 4 GB server with bert-base: ~0.5 GB of weights, ~0.3 GB of Python, torch and Streamlit, one 512-token
# analysis in flight (~0.2 GB) and headroom for the sessions themselves leave about 1.5 GB for the cache.
DEFAULT_CACHE_MB = 1500
WAIT_POLL_S = 1.0  # how often a waiting session is told its place again (each telling lets it be stopped)

log = logging.getLogger("bertscope.passes")


def _configure_log() -> None:
    level = os.environ.get(ENV_LOG, "").strip().upper()
    if level and not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s bertscope %(message)s"))
        log.addHandler(handler)
        log.setLevel(getattr(logging, level, logging.INFO))
        log.propagate = False


_configure_log()


def _env_int(name: str, default: int, lowest: int) -> int:
    try:
        return max(lowest, int(os.environ.get(name, "").strip() or default))
    except ValueError:
        return default


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


# -- admission ------------------------------------------------------------------------------------------


class Admission:
    """At most `limit` forward passes at once; the rest wait in a first-come, first-served line. Besides,
    `express` passes on short inputs (`slot(small=True)`) may run beside them in a lane of their own, so that
    a room following the lecturer's sentence is not queued behind the 512-token paragraphs some students
    paste: a short pass takes a fraction of a long one's time, so the long ones lose little.

    `slot(waiting)` calls `waiting(place)` on the waiting thread (place 1 = next in line) when it starts to wait
    and every WAIT_POLL_S after; whatever `waiting` raises (Streamlit's StopException when the session was
    stopped, closed or rerun) gives the place up. `slot(since=t)` (a time.monotonic() value) queues the request
    as if it had arrived at `t`: a session that takes over a computation whose own session went away keeps that
    session's place instead of going to the back of the line. A forward pass that runs out of memory inside the
    slot becomes a message for the page (bert_core.InputError), not an exception that ends the session's script.
    """

    def __init__(self, limit: int, express: int = 1) -> None:
        if limit < 1:
            raise ValueError(f"{ENV_MAX_FORWARDS} must be at least 1, not {limit}")
        self.limit = limit
        self.express = max(0, express)
        self._cond = threading.Condition()
        self._running = 0
        self._express_running = 0
        # Waiting tickets, (arrival time, draw number), kept sorted: the head is the next to run.
        self._line: list[tuple[float, int]] = []
        self._small: set[tuple[float, int]] = set()  # the tickets that may take the express lane
        self._tickets = itertools.count()

    @property
    def running(self) -> int:
        with self._cond:
            return self._running + self._express_running

    @property
    def queued(self) -> int:
        with self._cond:
            return len(self._line)

    def _place(self, ticket: tuple[float, int]) -> int:
        """A waiting ticket's place (1 = next): in the whole line, or among the short requests when it may take
        the express lane, whichever is nearer. Caller holds the lock."""
        overall = self._line.index(ticket) + 1
        if ticket not in self._small or not self.express:
            return overall
        return min(overall, [t for t in self._line if t in self._small].index(ticket) + 1)

    def place_of(self, since: float) -> int | None:
        """The place in line (1 = next) of the request queued as asked for at `since` (a computation's
        `_Flight.since`), as its own session is told it, or None once it runs or when it is not in line: what
        a session waiting on another session's computation of the same input is told."""
        with self._cond:
            ticket = next((t for t in self._line if t[0] == since), None)
            return None if ticket is None else self._place(ticket)

    def ahead(self) -> int:
        """How many a newcomer would wait behind: those in line, plus the running ones if every slot is taken."""
        with self._cond:
            return len(self._line) + (self._running if self._running >= self.limit else 0)

    @contextlib.contextmanager
    def slot(
        self, waiting: Callable[[int], None] | None = None, since: float | None = None, small: bool = False
    ) -> Iterator[None]:
        ticket = (time.monotonic() if since is None else since, next(self._tickets))
        lane = ""

        def first_small() -> tuple[float, int] | None:
            return next((t for t in self._line if t in self._small), None)

        def my_turn() -> bool:
            # caller holds the lock; sets `lane` to the one this ticket may take now
            nonlocal lane
            if small and self._express_running < self.express and first_small() == ticket:
                lane = "express"  # first, so that the main lane stays free for a long input
            elif self._running < self.limit and self._line[0] == ticket:
                lane = "main"
            return bool(lane)

        with self._cond:
            bisect.insort(self._line, ticket)
            if small:
                self._small.add(ticket)
            if self._line[-1] != ticket:  # queued ahead of some: they are told their new place now
                self._cond.notify_all()
            try:
                while not my_turn():
                    if waiting is not None:
                        told = self._place(ticket)
                        self._cond.release()  # told outside the lock: drawing on a page may block or raise
                        try:
                            waiting(told)
                        finally:
                            self._cond.acquire()
                        # A slot freed while the page was being told is taken now, not a poll interval later.
                        if my_turn():
                            break
                    # Any change in the line wakes this thread, so its place is told again as it moves up.
                    self._cond.wait(WAIT_POLL_S if waiting is not None else None)
            except BaseException:
                self._line.remove(ticket)
                self._small.discard(ticket)
                self._cond.notify_all()
                raise
            self._line.remove(ticket)
            self._small.discard(ticket)
            if lane == "express":
                self._express_running += 1
            else:
                self._running += 1
            self._cond.notify_all()  # the next in line may also fit when limit > 1, or in the other lane
        out_of_memory = False
        try:
            yield
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise
            out_of_memory = True
            # The failed pass's finished frames hold its tensors (GPU memory too), and the message raised
            # below would keep them: contextlib's __exit__ holds the error and its `traceback` argument, and
            # the message's traceback holds __exit__'s frame. From Python 3.12 this generator's frame also
            # points back at __exit__ (f_back), a cycle that outlives the message until a full collection.
            # Clearing the finished frames' locals frees the tensors now, while the page shows the message.
            traceback.clear_frames(exc.__traceback__)
            exc.__traceback__ = None
        finally:  # an exception, a stopped script or a dropped session all give the slot back
            with self._cond:
                if lane == "express":
                    self._express_running -= 1
                else:
                    self._running -= 1
                self._cond.notify_all()
        if out_of_memory:
            message = _out_of_memory()
            try:
                raise message
            finally:
                # Raised while the `with` still handles the original error, the message would chain to it
                # (__context__), and through its traceback keep the failed pass's frames and tensors alive;
                # this frame, in the message's traceback, must not hold the message either (a cycle).
                message.__context__ = None
                del message


def is_out_of_memory(exc: BaseException) -> bool:
    """A MemoryError, or torch's RuntimeError / torch.cuda.OutOfMemoryError, recognised without importing torch.
    On a GPU torch says "... out of memory ..."; its CPU allocator says "DefaultCPUAllocator: can't allocate
    memory: you tried to allocate N bytes" (torch 2.13), with no "out of" in it."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def _out_of_memory():
    import bert_core

    return bert_core.InputError(
        "the server ran out of memory computing this input (it is still running): try a shorter text, or ask "
        "again in a moment, when fewer long texts are being analysed"
    )


# -- results --------------------------------------------------------------------------------------------


def nbytes(value: Any, _seen: set[int] | None = None) -> int:
    """The bytes a result holds: its numpy arrays (dataclass fields, lists, tuples and dicts are walked), plus
    a little per object, so that a result of many small lists is not counted as free."""
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return int(value.nbytes) if value.base is None or id(value.base) not in seen else 0
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return 64 + sum(nbytes(getattr(value, f.name), seen) for f in dataclasses.fields(value))
    if isinstance(value, (list, tuple)):
        return sys.getsizeof(value) + sum(nbytes(v, seen) for v in value)
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(nbytes(k, seen) + nbytes(v, seen) for k, v in value.items())
    if isinstance(value, (str, bytes)):
        return sys.getsizeof(value)  # a str with one "→" in it takes two or four bytes a character
    return 32


def _detached(exc: Exception) -> Exception:
    """A copy of `exc` without its traceback, context or cause: kept in a flight, the original would hold the
    failed pass's frames (and their tensors) in a reference cycle through the flight itself."""
    try:
        twin = copy.copy(exc)
    except Exception:  # noqa: BLE001 - an exception type that cannot be rebuilt from its args
        twin = RuntimeError(f"{type(exc).__name__}: {exc}")
    twin.__traceback__ = twin.__context__ = twin.__cause__ = None
    return twin


class _Flight:
    """One computation in progress, which other requests for the same key wait on."""

    def __init__(self, since: float) -> None:
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.abandoned = False  # its session went away before or during the pass: a waiter takes it over
        self.since = since  # when the computation was first asked for: its place in the admission line


class ResultCache:
    """Results shared by every session, least recently used out first, within `budget` bytes: adding one
    evicts the oldest until the rest fit, so the total exceeds the budget by at most the newest result (one
    larger than the budget is kept alone).

    `get(key, compute)` runs `compute` once per key however many sessions ask at once; the others wait for it.
    If the session computing it is stopped (Streamlit's StopException, a BaseException, raised while it queued
    or drew), a waiting session takes the computation over, in the stopped one's place in the admission line,
    so the work is not lost for them nor sent to the back of the line. An error of the
    computation itself reaches every waiter and is not cached (the next request tries again).
    """

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._flights: dict[Hashable, _Flight] = {}
        self.total = 0  # bytes held
        self.computed = 0  # computations that ran to the end (a server-wide count of forward passes)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def peek(self, key: Hashable) -> tuple[bool, Any]:
        """(True, the cached value) or (False, None): a hit without starting anything (no wait, no slot)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True, self._items[key][0]
        return False, None

    def _store(self, key: Hashable, value: Any, size: int) -> None:
        # caller holds self._lock
        self._items[key] = (value, size)
        self.total += size
        while self.total > self.budget and len(self._items) > 1:
            _, (_, dropped) = self._items.popitem(last=False)
            self.total -= dropped

    def get(
        self,
        key: Hashable,
        compute: Callable[[], Any],
        *,
        admitted: Callable[[float], contextlib.AbstractContextManager] | None = None,
        waiting: Callable[[float], None] | None = None,
        sizeof: Callable[[Any], int] | None = None,
        model_pass: bool = True,
    ) -> Any:
        """The cached value of `key`, or `compute()`'s, run inside `admitted(since)` (the admission slot,
        queued as if asked for at `since`). `waiting(since)` is called every WAIT_POLL_S while another session
        computes the same key, with the time that computation was asked for (`Admission.place_of` finds it in
        the line while it is queued). `sizeof(value)` (default `nbytes`), plus the key's size, is what it counts against the budget. Only a
        `model_pass` is counted in `computed` and logged (a figure drawn from a result is not a pass)."""
        since = time.monotonic()
        while True:
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key][0]
                flight = self._flights.get(key)
                leader = flight is None
                if leader:
                    flight = self._flights[key] = _Flight(since)
            if leader:
                return self._lead(key, flight, compute, admitted, sizeof, model_pass)
            while not flight.done.wait(WAIT_POLL_S):
                if waiting is not None:
                    waiting(flight.since)
            if flight.abandoned:
                # Its session went away: this one computes it (or waits for whoever does), from its place.
                since = min(since, flight.since)
                continue
            if flight.error is not None:
                # Each waiter raises its own copy: one shared object would gather every waiter's traceback.
                raise _detached(flight.error)
            return flight.result

    def _lead(self, key: Hashable, flight: _Flight, compute, admitted, sizeof, model_pass) -> Any:
        queued = time.monotonic()
        try:
            with admitted(flight.since) if admitted is not None else contextlib.nullcontext():
                started = time.monotonic()
                value = compute()
            size = (sizeof or nbytes)(value) + nbytes(key)  # a key can hold a pasted text
            with self._lock:
                self._store(key, value, size)
                self.computed += model_pass
                count, held = self.computed, self.total
            flight.result = value
        except BaseException as exc:
            # An error of the computation (or of storing it) is every waiter's answer; a stop (a BaseException
            # that is not an Exception) leaves the work to a waiting session.
            if isinstance(exc, Exception):
                flight.error = _detached(exc)
            else:
                flight.abandoned = True
            raise
        finally:  # whatever happened, the waiters are released and the next request starts afresh
            with self._lock:
                del self._flights[key]
            flight.done.set()
        if not model_pass:
            return value
        log.info(
            "pass %d: %s (waited %.2f s, ran %.2f s; cache %.0f MB)",
            count, _describe(key), started - queued, time.monotonic() - started, held / 2**20,
        )  # fmt: skip
        return value


def _describe(key: Hashable) -> str:
    """The kind of computation and its model, never the user's text (the log may be read by others)."""
    if isinstance(key, tuple) and len(key) >= 2:
        return f"{key[0]} on {key[1]}"
    return type(key).__name__


# -- garbage ------------------------------------------------------------------------------------------


class Collector:
    """Full garbage collections, at most one every `every_s` seconds, after page runs.

    Why: a page script's namespace is a reference cycle (its functions point back at it) that holds the page's
    analysis, ~170 MB for a 512-token text on bert-base, so only a full collection frees it. Streamlit's own
    collection after every run (`runner.postScriptGC`, switched off by `bertscope`) scanned the whole heap
    each time, ~170 ms with the GIL held over the ~370,000 objects torch, Streamlit and plotly bring: half a
    crowded server's CPU. Here the first collection made while no other page is running (lazy imports done by
    then) freezes what is alive (`gc.freeze`), so later ones scan only what came after; and they are
    rate-limited, so a burst of runs pays for one. Not while another page runs: its namespace would be frozen
    with the rest and never freed, analysis and all, once that run ended. On a server that is never idle the
    heap stays unfrozen and each collection costs the full scan, still at most one every `every_s`.

    A run that ends too soon after a collection leaves its namespace for a catch-up collection `every_s` after
    that one (a timer), so the end of a burst is not kept until some later page run: those namespaces may hold
    analyses the cache has already let go of, memory past its budget. So does a run that ends by raising
    (st.stop, st.rerun): its traceback still holds its namespace while it collects.

    What is frozen is never collected, and the sessions open at the freeze are frozen with it: once their tabs
    close and Streamlit drops them, they would stay, CSV downloads and all (Streamlit releases a session's
    files when the session object is collected). So every `refreeze_every_s`, at a quiet moment, the heap is
    unfrozen, collected and frozen again: one full scan, ~170 ms, every ten minutes. A server with no quiet
    moment for `OVERDUE` times that long refreezes at a busy one: the pages running then stay until the next
    refreeze, a bounded cost, where waiting for quiet could keep the first freeze's sessions for the server's life.
    """

    OVERDUE = 3

    def __init__(self, every_s: float = 2.0, refreeze_every_s: float = 600.0) -> None:
        self.every_s = every_s
        self.refreeze_every_s = refreeze_every_s
        self._frozen_at = -float("inf")
        self._lock = threading.Lock()
        self._last = -float("inf")
        self._frozen = False
        self._running = 0  # page runs between before_run and after_run
        self._garbage = False  # a run ended since the last collection without one
        self._catch_up: threading.Timer | None = None  # the catch-up collection, while one is pending
        self.collections = 0  # full collections made (the log's and the tests' count)

    def before_run(self) -> None:
        with self._lock:
            self._running += 1

    def after_run(self) -> bool:
        """The end of a page run (each after its before_run): collect if the last collection is `every_s` old
        (True when this call collected)."""
        with self._lock:
            self._running = max(0, self._running - 1)
            now = time.monotonic()
            if now - self._last < self.every_s:
                self._garbage = True
                if self._catch_up is None:
                    self._later(now)
                return False
            # Nor while this run is ending with an exception (st.stop, st.rerun, st.switch_page raise one):
            # its traceback still holds the page's frame and namespace, which would be frozen with the rest, and
            # which this collection cannot free: a catch-up collection comes for them.
            raising = sys.exc_info()[1] is not None
            quiet = self._running == 0 and not raising
            age = now - self._frozen_at
            # Never while this run raises, overdue or not: its namespace would be frozen with the rest (below).
            overdue = self._frozen and not raising and age >= self.OVERDUE * self.refreeze_every_s
            if self._frozen and age >= self.refreeze_every_s and (quiet or overdue):
                gc.unfreeze()
                self._frozen = False
            self._collect(now)
            if not self._frozen and (quiet or overdue):
                gc.freeze()
                self._frozen, self._frozen_at = True, now
            if raising:
                self._garbage = True
                if self._catch_up is None:
                    self._later(now)
            return True

    def _later(self, now: float) -> None:
        # caller holds self._lock
        self._catch_up = threading.Timer(self._last + self.every_s - now, self._collect_late)
        self._catch_up.daemon = True
        self._catch_up.start()

    def _collect_late(self) -> None:
        """The catch-up collection, on the timer's thread (never a freeze, which only a run's end decides):
        unless a run has collected since, with no run left uncollected after it; again later if too soon."""
        with self._lock:
            self._catch_up = None
            now = time.monotonic()
            if not self._garbage:
                return
            if now - self._last < self.every_s:
                self._later(now)
                return
            self._collect(now)

    def _collect(self, now: float) -> None:
        # caller holds self._lock
        self._last, self._garbage = now, False
        self.collections += 1
        gc.collect()

    def close(self) -> None:
        """No catch-up collection from here on (the collector is being replaced)."""
        with self._lock:
            if self._catch_up is not None:
                self._catch_up.cancel()
                self._catch_up = None
            self._garbage = False


@st.cache_resource(show_spinner=False, on_release=Collector.close)
def collector() -> Collector:
    return Collector()


@st.cache_resource(show_spinner=False)
def admission() -> Admission:
    return Admission(_env_int(ENV_MAX_FORWARDS, max(1, cores() // 2), 1), express=_env_int(ENV_EXPRESS, 1, 0))


@st.cache_resource(show_spinner=False)
def results() -> ResultCache:
    return ResultCache(_env_int(ENV_CACHE_MB, DEFAULT_CACHE_MB, 1) * 1024 * 1024)
