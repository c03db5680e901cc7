"""Where the app's models come from and how they are kept: the model-source policy (the bundled demo model,
the default, hub ids, allowed directories, refusals), the process-wide model store, and the model a page uses.

The store is made once per process by `st.cache_resource`; nothing mutable lives at module level.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import logging
import os
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

import bert_core
from app import server

# (names here too: tests stand a tiny checkpoint in for the demo model by setting models.DEMO_MODEL_DIR)
from app.bundled import (  # noqa: E402
    DEMO_MODEL_DIR,
    DEMO_SOURCE,
    DEMO_TASKS,
    DEMO_TASKS_DIR,
    ENV_ALLOW_HUB,
    bundled_dir,
    hub_downloads_allowed,
)

DEFAULT_HUB_MODEL = "bert-base-uncased"
ENV_MODEL = "BERTSCOPE_MODEL"
# Settings for a shared server (read on every use, so a test or a restart can change them):
ENV_EXACT = "BERTSCOPE_EXACT"  # "1" = on the CPU, the reference's own matmuls: bit-identical to transformers
ENV_MODEL_ROOTS = "BERTSCOPE_MODEL_ROOTS"  # "/a:/b" = open local checkpoints only under these directories
KEY_HOLD = "_model_hold"  # session state: this session's Hold (the ActiveModel the sidebar loaded)


# -- model sources --------------------------------------------------------------------------------------


def demo_model_available() -> bool:
    return (DEMO_MODEL_DIR / "config.json").is_file()


def default_model_source() -> str:
    """`bertscope --model` / BERTSCOPE_MODEL when set, else bert-base-uncased."""
    return os.environ.get(ENV_MODEL, "").strip() or DEFAULT_HUB_MODEL


def source_path(source: str) -> str:
    """What `bert_core.load_pretrained` is given for a picker entry."""
    bundled = bundled_dir(source)
    return source if bundled is None else str(bundled)


def _directory(text: str) -> Path | None:
    """`text` as an existing directory (`~` expanded), or None; never raises for what a user may type."""
    try:
        path = Path(text).expanduser()
        return path if path.is_dir() else None
    except (OSError, ValueError, RuntimeError):  # a name too long, a NUL, `~nosuchuser`
        return None


def describe_source(source: str) -> str:
    if source == DEMO_SOURCE:
        return "bundled demo model (a small BERT shipped with BERTScope, not Google's bert-base)"
    if source in DEMO_TASKS:
        # for people: "fine-tuned here for qa" was the folder's name
        task = {"senses": "word senses", "roles": "tagging roles", "qa": "question answering"}[
            DEMO_TASKS[source]
        ]
        return f"the demo model fine-tuned here for {task} (bundled)"
    if _directory(source) is not None:
        return f"local directory {source}"
    if source.strip() in _DIRECTORY_KEYS:
        return f"local directory {source} (no longer on disk; its weights are still in memory)"
    return f"hub model {source}"


def describe_weights(source: str, info: bert_core.ModelInfo) -> str:
    """Where the weights came from, for a card under describe_source: the hub snapshot (the commit a cached hub
    id resolved to: two machines of one room can hold different ones), the files read (a directory holding
    both a safetensors file and a .bin looked the same as one holding either), and a type they were stored in
    other than float32 (transformers computes such a file as stored, so its numbers differ from these). Of a
    bundled model, only the type."""
    notes = [f"stored as {info.weights_dtype}, computed in float32"] if info.weights_dtype else []
    files = info.weights_files
    if source in (DEMO_SOURCE, *DEMO_TASKS) or not files:
        return "; ".join(notes)
    if len(files) > 1:
        read = f"weights from {len(files)} safetensors shards"
    elif files[0].endswith(".bin"):
        read = f"weights from {files[0]}"
        notes.insert(0, "read weights-only: no code in it runs")
    else:
        read = f"weights from {files[0]}"
    read += f" ({'; '.join(notes)})" if notes else ""
    where = Path(info.directory)
    if where.parent.name == "snapshots" and not _directory(source):
        return f"snapshot {where.name[:10]} · {read}"
    return read


# Each spelling of a source that named an existing directory -> that directory's key. A directory deleted or
# moved while pages use it is no hub id: without this, "models/x" or "/m/x/" lost its key with the directory,
# so the pages holding its weights asked for a fresh load and the room's own model lost its kept place.
_DIRECTORY_KEYS: dict[str, str] = {}
_MAX_DIRECTORY_KEYS = 10_000  # spellings a room may type; past it the oldest are forgotten


def model_key(source: str) -> str:
    """One cache key per checkpoint: local directories by absolute path (also once deleted), hub ids as typed."""
    spelled = source.strip()
    path = _directory(source_path(source))
    if path is not None:
        key = str(path.resolve())
        if _DIRECTORY_KEYS.get(spelled) != key:
            if len(_DIRECTORY_KEYS) >= _MAX_DIRECTORY_KEYS:
                _DIRECTORY_KEYS.pop(next(iter(_DIRECTORY_KEYS)), None)
            _DIRECTORY_KEYS[spelled] = key
        return key
    return _DIRECTORY_KEYS.get(spelled, spelled)


def loaded_key(source: str) -> str:
    """The key of a loaded model and of its cached results: the checkpoint, and the arithmetic it runs (exact
    mode loads other layers, so a process that switches BERTSCOPE_EXACT must not get the other model)."""
    return model_key(source) + (" [exact]" if exact_arithmetic() else "")


def exact_arithmetic() -> bool:
    return os.environ.get(ENV_EXACT, "").strip().lower() in ("1", "true", "yes", "on")


def model_roots() -> list[Path] | None:
    """The directories local checkpoints must be under (BERTSCOPE_MODEL_ROOTS), or None for anywhere (the
    variable unset or empty; `bertscope --shared` never leaves it so). A root that is not a usable path
    (`~nosuchuser`) allows nothing, so a mistyped setting narrows what opens rather than raising."""
    raw = os.environ.get(ENV_MODEL_ROOTS, "").strip()
    if not raw:
        return None
    roots = []
    for r in raw.split(os.pathsep):
        if r.strip():
            try:
                roots.append(Path(r.strip()).expanduser().resolve())
            except (OSError, ValueError, RuntimeError):
                continue
    return roots


def _unsafe_source(source: str) -> str | None:
    """Why a typed source can't be a model name at all (checked before any path is built from it)."""
    if any(ord(c) < 32 or c == "\x7f" for c in source):
        return "a model name can't contain control characters"
    if re.search(r"%[0-9a-fA-F]{2}", source):
        # The URL was decoded once already; a second layer (%2e%2e/) is a trick, never a directory's name.
        return "a model name can't contain URL-encoded characters (%xx)"
    return None


def is_local_source(source: str) -> bool:
    """A directory (existing, or typed as a path) rather than a hub id."""
    try:
        exists = Path(source.strip()).expanduser().exists()
    except (OSError, ValueError, RuntimeError):  # not a usable path, so not one that exists
        exists = False
    return exists or not bert_core.checkpoints.looks_like_hub_id(source.strip())


def refusal(source: str) -> str | None:
    """Why this server's settings forbid loading `source`, or None when it may be loaded.

    The bundled demo model and the model the server was started with are always allowed.
    """
    source = source.strip()
    if source == DEMO_SOURCE or source in DEMO_TASKS:
        return None
    unsafe = _unsafe_source(source)  # first: "@demo" and a NUL was quoted back, NUL and all
    if unsafe:
        return unsafe
    if source.startswith("@"):  # the bundled models' own names (`--model @nope` too); no hub id or path is so
        return (
            f"{source[:60]} is not one of the bundled models ({', '.join(bundled_models()) or 'none here'})"
        )
    started_with = os.environ.get(ENV_MODEL, "").strip()
    if source == started_with:
        return None
    if started_with and model_key(source) == model_key(started_with):  # "/m/x/" for --model /m/x
        return None
    if is_local_source(source):
        roots = model_roots()
        if roots is None:
            return None
        try:
            path = Path(source).expanduser().resolve()
        except (OSError, ValueError, RuntimeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            return f"{source[:80]!r} is not a usable path ({why})"

        def inside(p: Path) -> bool:
            return any(p == root or root in p.parents for root in roots)

        if inside(path):
            return _link_out(path, inside)
        if not roots:
            return (
                f"this server opens no local model directories ({ENV_MODEL_ROOTS} names no usable directory)"
            )
        if set(roots) == {DEMO_MODEL_DIR.parent.resolve()}:
            # --shared alone: the bundled models are all it opens, and the folder they are in (the install's
            # path) tells a student nothing they could use
            return (
                f"this server opens no local model directories besides the bundled models ({', '.join(BUNDLED_NAMES)}); "
                f"a lecturer names other model folders with bertscope --model-roots (or {ENV_MODEL_ROOTS})"
            )
        return (
            "this server opens local model directories only under "
            + ", ".join(str(r) for r in roots)
            + f" (bertscope --model-roots, or {ENV_MODEL_ROOTS}; --shared alone: the bundled models)"
        )
    if hub_downloads_allowed() or is_in_hub_cache(source):
        return None
    return (
        f"downloading models from the hub is switched off on this server (bertscope --shared, or "
        f"{ENV_ALLOW_HUB}=0) and {source[:80]} "
        "is not in the local cache; pick a cached model or a local directory"
    )


MAX_DIRECTORY_ENTRIES = 2_000  # a model directory holds a handful of files; see _link_out


def _link_out(directory: Path, inside: Callable[[Path], bool]) -> str | None:
    """Why a directory inside the roots still may not be opened: a file in it (config.json, vocab.txt, the
    weights) that is a link to somewhere outside them, which the loader would read and whose contents an
    error message could echo; or more than MAX_DIRECTORY_ENTRIES entries, which no model directory has."""
    # Every entry is looked at: the loader reads only plain names in the directory itself (shard names with a
    # "/" are refused), so no link it could follow is missed. One that holds thousands of entries is no model
    # directory, and is refused rather than scanned on every ask.
    try:
        if not directory.is_dir():
            return None
        if not os.path.lexists(directory / "config.json"):
            # No checkpoint: the loader reads nothing else there and says so. A root typed as a model was
            # refused for a link beside its checkpoint folders ("linked-model in this directory links …").
            return None
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= MAX_DIRECTORY_ENTRIES:
                    return (
                        f"this directory holds more than {MAX_DIRECTORY_ENTRIES:,} entries; a model directory "
                        "holds a few files (config.json, the weights, the vocabulary)"
                    )
                try:
                    if entry.is_symlink() and not inside(Path(entry.path).resolve()):
                        return (
                            f"{entry.name} in this directory links outside the directories this server opens "
                            "models from"
                        )
                except (OSError, RuntimeError):  # a loop of links
                    return f"{entry.name} in this directory is a link that cannot be followed"
    except OSError:
        return None  # the loader says what is wrong with an unreadable directory
    return None


def is_in_hub_cache(repo_id: str) -> bool:
    """Whether the cache holds all a load of `repo_id` reads (a config alone, left by a tokenizer's first run,
    made the default model look cached, and a fresh machine opened on an error instead of the demo model)."""
    return bert_core.checkpoints.complete_snapshot_in_cache(repo_id) is not None


@st.cache_data(ttl=120, show_spinner=False)
def cached_hub_models() -> list[str]:
    """Model repos the local Hugging Face cache holds whole (`is_in_hub_cache`) whose config names a family
    the core reads (or none: the core then says what it found). Any repo with a config.json was listed: GPT-2
    and T5, a half-downloaded snapshot, one cached only at a tag, and after a failed load all of them stood
    under "Models that can be loaded here"."""
    try:
        import huggingface_hub
        from huggingface_hub import constants

        # the cache the loads read (scan_cache_dir's own default is the one set when it was imported)
        info = huggingface_hub.scan_cache_dir(constants.HF_HUB_CACHE)
    except Exception:  # noqa: BLE001 - no cache directory yet, unreadable cache, ...
        return []
    names = []
    for repo in info.repos:
        if repo.repo_type != "model":
            continue
        snapshot = bert_core.checkpoints.complete_snapshot_in_cache(repo.repo_id)
        if snapshot is None:
            continue
        try:
            family = json.loads((snapshot / "config.json").read_text(encoding="utf-8")).get("model_type")
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            continue
        if family is None or family in bert_core.checkpoints.ARCHITECTURES:
            names.append(repo.repo_id)
    return sorted(names)


def bundled_models() -> list[str]:
    """The picker names of the models shipped in assets/ that are there: the demo model, its fine-tuned heads."""
    names = [DEMO_SOURCE] if demo_model_available() else []
    return names + [
        n for n, folder in DEMO_TASKS.items() if (DEMO_TASKS_DIR / folder / "config.json").is_file()
    ]


def _bundled_dirs() -> set[Path]:
    """The bundled models' directories, which lists name by their picker names (@demo, ...) only: a second
    name would offer the same model twice, and load a second copy."""
    return {DEMO_MODEL_DIR.resolve(), *(DEMO_TASKS_DIR.resolve() / f for f in DEMO_TASKS.values())}


_BUNDLED_KEYS = frozenset(str(d) for d in _bundled_dirs())
BUNDLED_NAMES = (DEMO_SOURCE, *DEMO_TASKS)

MAX_ROOT_MODELS = 100  # checkpoint directories listed from the model roots; more are still opened when typed


@st.cache_data(ttl=60, show_spinner=False)
def root_models() -> list[str]:
    """The checkpoint directories under the model roots (each root and its folders, one level down, with a
    config.json), for the picker: a lecturer's --model-roots /models listed nothing, so the room had to type
    paths. Only those `refusal` lets open."""
    found: list[str] = []
    bundled = _bundled_dirs()
    for root in model_roots() or []:
        try:
            folders = [root, *sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))]
        except OSError:
            continue
        for folder in folders[: MAX_ROOT_MODELS * 4]:
            if folder.resolve() in bundled:
                continue
            if (folder / "config.json").is_file() and refusal(str(folder)) is None:
                found.append(str(folder))
            if len(found) >= MAX_ROOT_MODELS:
                return found
    return found


def model_options(current: str | None = None) -> list[str]:
    """The picker's list: the default source first, then the demo model, cached hub models, the checkpoints under
    the model roots, the current one."""
    options = [default_model_source(), *bundled_models(), *cached_hub_models(), *root_models()]
    if current:
        options.append(current)
    return list(dict.fromkeys(o for o in options if o))


# -- the model store ------------------------------------------------------------------------------------


class StoreFull(bert_core.ModelLoadError):
    """Loading another model would hold more than the server's `capacity` of models in memory: the ones open
    pages use (`in_use`, as the sessions asked for them) are the alternatives. Not remembered as a failure of
    the checkpoint: it loads as soon as a page lets go of a model."""

    def __init__(self, message: str, in_use: list[str]) -> None:
        super().__init__(message)
        self.in_use = in_use


MAX_FAILURES = 256  # failed loads remembered at once, so as not to read them again on every rerun


def session_open(session_id: str) -> bool:
    """Whether a session's tab is connected now. Streamlit keeps a closed tab's session, its state included,
    for `server.disconnectedSessionTTL` and drops it only when a later disconnect happens to expire it."""
    from streamlit import runtime

    try:
        return runtime.exists() and runtime.get_instance().is_active_session(session_id)
    except AttributeError:  # not public API: without it, no session is seen connected (nothing let go of)
        return False


class Hold:
    """One session's hold on the models its pages use: `active` is the ActiveModel the sidebar loaded (None
    before, or once let go of), `second` the Compare page's second model while the session is on that page.
    Kept in session state and known to the store, which lets go of both once the tab has been closed for a
    while (`ModelStore.take_hold`)."""

    __slots__ = ("active", "second", "__weakref__")

    def __init__(self) -> None:
        self.active: ActiveModel | None = None
        self.second: ActiveModel | None = None

    def let_go(self) -> None:
        self.active = self.second = None

    @property
    def holding(self) -> bool:
        return self.active is not None or self.second is not None


class ModelStore:
    """Loaded models shared by every session of this process, at most `capacity` of them in memory.

    A model pushed out of the cache stays in memory while an open page still holds it (a session keeps its
    model across reruns), so those count too, but not the pages of tabs closed for a while (`take_hold`), nor,
    when a new model needs the room, those of closed tabs still within their grace: a new model is loaded only
    when fewer than `capacity` models are in memory, in use or loading, after the least recently used ones no
    page holds are let go; otherwise `StoreFull` names the ones in use. (An older copy of a rewritten directory that a page still holds is the
    exception: it is not counted, so that page keeps working while the new files load.) The bundled models
    (`free_keys`, a few MB each) are not counted either: one student's Compare page opening on @demo shut the
    lecturer's next example (@demo-qa) out of a server whose bound is there for models a hundred times larger.

    Hub failures are remembered for a short while so that an offline machine doesn't retry the network on
    every rerun; a broken local directory is remembered until it changes (its files' modification times), so
    it is not re-read on every slider move but is retried as soon as the user fixes it.
    """

    def __init__(
        self,
        capacity: int = 3,
        failure_ttl_s: float = 120.0,
        retry_held_s: float = 15.0,
        is_open: Callable[[str], bool] = session_open,
        closed_grace_s: float = 10.0,
        room_model: str | None = None,
        free_keys: Iterable[str] | None = None,
    ) -> None:
        self.capacity = capacity
        self._free = _BUNDLED_KEYS if free_keys is None else frozenset(free_keys)
        # The model the room opens on (the server's --model, a source), which always has a place: with two others
        # held by open tabs, the lecture's own link found no room for it, for as long as they stayed. The others
        # share the rest (with a capacity of 1, there is no rest: nothing is kept for it).
        self.room_model = room_model if capacity > 1 else None
        self._room_key = None if self.room_model is None else loaded_key(self.room_model)
        self.failure_ttl_s = failure_ttl_s
        self.retry_held_s = retry_held_s
        self._lock = threading.Lock()
        self._models: OrderedDict[str, bert_core.BertScopeModel] = OrderedDict()
        # Models pushed out of the LRU that some session still holds: asking for one again adopts it back
        # instead of loading a second copy of the same weights next to it.
        self._evicted: weakref.WeakValueDictionary[str, bert_core.BertScopeModel] = (
            weakref.WeakValueDictionary()
        )
        # key -> (when, reason, signature of the local directory or None for a hub id)
        self._failures: dict[str, tuple[float, str, tuple | None]] = {}
        self._key_locks: dict[str, list] = {}  # key -> [its load lock, sessions holding or waiting for it]
        # key -> the signature of its local directory when it was read, and how many times it has been read:
        # a directory rewritten while serving is read again, and its results are cached under a new key.
        self._read_as: dict[str, tuple | None] = {}
        self._generation: dict[str, int] = {}
        # key -> (when, reason, signature) of a rewritten directory's re-read that failed for a reason of the
        # moment. Sessions holding the old copy keep it without re-reading until the files change again or
        # `retry_held_s` passes (otherwise every rerun of theirs would re-read the checkpoint); sessions with
        # no copy are not held back by it, so one bad moment poisons nobody.
        self._held_retry: dict[str, tuple[float, str, tuple | None]] = {}
        # An older copy a session still holds gets a number of its own for its results' key, never reused (an
        # id() would be, once that copy is freed, and a later copy would find the first one's results).
        self._old_copies: weakref.WeakKeyDictionary[bert_core.BertScopeModel, int] = (
            weakref.WeakKeyDictionary()
        )
        self._old_numbers = itertools.count(1)
        self._loading: set[str] = set()  # keys being read right now, each a model's worth of memory
        self.collect_every_s = 5.0  # at most one full collection this often when the store is full
        self._collected = -float("inf")
        self._sources: dict[str, str] = {}  # key -> the source a session asked for it by ("@demo", a hub id)
        self._is_open = is_open
        self.closed_grace_s = closed_grace_s
        # session id -> its hold, for sessions seen connected, until Streamlit lets go of the session's state
        self._holds: weakref.WeakValueDictionary[str, Hold] = weakref.WeakValueDictionary()
        self._seen_open: dict[str, float] = {}  # session id -> when its tab was last seen connected
        self.sweep_every_s = 2.0
        self._watching = False  # a sweep timer is pending

    def take_hold(self, session_id: str | None, hold: Hold) -> None:
        """Register a session's hold (each run); the holds of sessions whose tab has been closed for
        `closed_grace_s` or more are let go of.

        Why: a closed tab's session lives on in Streamlit for minutes (or until another tab disconnects), and
        so would its model, counted as in use by an open page against `capacity`, or pinned for good should the
        session's objects have been frozen by the collector (app.server.Collector). The grace is for a tab that
        reconnects after a blip of its network: it keeps its copy (which matters when the directory has been
        deleted or rewritten since), unless another model needs the room (`load`). A hold let go of is still watched, so a closed session's run that ends
        after that and sets it again is let go of again; the store forgets it with the session's state. Holds
        of sessions never seen connected (a test's AppTest) are never let go of."""
        with self._lock:
            if session_id is not None and self._is_open(session_id):
                self._holds[session_id] = hold
            self._sweep()

    def _sweep(self) -> None:
        """Note which registered tabs are connected, and let go of those closed for the grace. Streamlit does not
        tell when a tab closed, so a timer looks every `sweep_every_s` while any hold is registered (runs look
        too): a tab's close is known to within that. Caller holds self._lock."""
        now = time.monotonic()
        seen = {}
        for other, its_hold in list(self._holds.items()):
            last = seen[other] = now if self._is_open(other) else self._seen_open.get(other, now)
            if now - last >= self.closed_grace_s:
                its_hold.let_go()
        self._seen_open = seen
        if seen and not self._watching:
            self._watching = True
            # A weak reference: a store replaced (its cache cleared) is not kept alive by its timer.
            timer = threading.Timer(self.sweep_every_s, ModelStore._watch, args=(weakref.ref(self),))
            timer.daemon = True
            timer.start()

    def _let_go_of_a_closed_tab(self) -> bool:
        """Let go of the hold of the tab closed longest, still within its grace; False when no closed tab holds
        a model. Caller holds self._lock."""
        closed = [
            (self._seen_open.get(sid, time.monotonic()), its_hold)
            for sid, its_hold in list(self._holds.items())
            if its_hold.holding and not self._is_open(sid)
        ]
        if not closed:
            return False
        min(closed, key=lambda pair: pair[0])[1].let_go()
        return True

    @staticmethod
    def _watch(store_ref: weakref.ref[ModelStore]) -> None:
        store = store_ref()
        if store is not None:
            with store._lock:
                store._watching = False
                store._sweep()

    def _counts(self, key: str) -> bool:
        """Whether `key` takes one of the `capacity` places (a bundled model does not)."""
        return model_key_of(key) not in self._free

    def _in_memory(self, besides: str, *, every: bool = False) -> list[str]:
        """The models in memory, in use or loading, but `besides`: those counted, or `every` one. Caller holds
        the lock."""
        return [
            k
            for k in dict.fromkeys([*self._models, *self._evicted.keys(), *self._loading])
            if k != besides and (every or self._counts(k))
        ]

    def _room_for(self, key: str) -> list[str]:
        """Make room for `key` by letting go of the least recently used models (each freed unless a page holds
        it); the keys still in memory besides `key` when that is not enough, else []. Any model but the room's
        finds one place fewer, and the room's model does not count against it (see `room_model`), unless that
        model failed to load: then keeping its place would only leave one unused. Caller holds the lock."""
        if not self._counts(key):
            return []
        room = self._room_key
        kept = self._keeps_place_for_room(key)
        limit = self.capacity - 1 if kept else self.capacity

        def in_the_way() -> list[str]:
            return [k for k in self._in_memory(key) if not (kept and k == room)]

        while len(in_the_way()) >= limit:
            oldest = next(
                (k for k in self._models if k != key and not (kept and k == room) and self._counts(k)), None
            )
            if oldest is None:
                break
            self._evicted[oldest] = self._models.pop(oldest)  # gone at once if only the store held it
        crowded = in_the_way()
        return crowded if len(crowded) >= limit else []

    def _keeps_place_for_room(self, key: str) -> bool:
        """Whether loading `key` leaves a place for the room's model: not when `key` is that model, nor while
        that model's last load failed (a place kept for it would only stay empty). Caller holds the lock."""
        room = self._room_key
        if room is None or key == room or not self._counts(room):
            return False  # (a bundled room model, @demo on a fresh --shared install, needs no place kept)
        room_key = model_key_of(room)
        return self._still_holds(self._failures.get(room_key), room_key) is None

    def _claim(self, key: str, source: str) -> list[str]:
        """Room for `key` taken (it counts as loading from now, in the same hold of the lock as the check, so two
        loads of different models cannot both pass it), or the keys in the way. Caller holds the lock."""
        crowded = self._room_for(key)
        if not crowded:
            self._loading.add(key)
            self._forget_names()
            self._sources.setdefault(key, source.strip())
        return crowded

    def _forget_names(self) -> None:
        # caller holds self._lock. Names are kept for the models in memory only, or every name typed would stay.
        in_memory = set(self._in_memory("", every=True))
        for gone in [k for k in self._sources if k not in in_memory]:
            del self._sources[gone]

    def in_use(self) -> list[str]:
        """The models in memory, as sessions asked for them, most recently used first."""
        with self._lock:
            keys = dict.fromkeys([*reversed(self._models), *self._evicted.keys()])
            return [self._sources.get(k, k) for k in keys]

    def loaded(self, key: str) -> bert_core.BertScopeModel | None:
        with self._lock:
            model = self._models.get(key)
            if model is None:
                model = self._evicted.pop(key, None)
                if model is not None:
                    self._remember(key, model)
            else:
                self._models.move_to_end(key)
            return model

    def _remember(self, key: str, model: bert_core.BertScopeModel) -> None:
        # caller holds self._lock
        self._models[key] = model
        self._models.move_to_end(key)
        while len(counted := [k for k in self._models if self._counts(k)]) > self.capacity:
            self._evicted[counted[0]] = self._models.pop(counted[0])

    def recent_failure(self, key: str) -> str | None:
        with self._lock:
            failure = self._failures.get(key)
        return self._still_holds(failure, key)

    def _still_holds(self, failure: tuple[float, str, tuple | None] | None, key: str) -> str | None:
        """The reason of a remembered failure while it still stands, else None."""
        if not failure:
            return None
        when, reason, signature = failure
        if signature is not None:
            return reason if directory_signature(key) == signature else None
        if directory_signature(key) is not None:
            # Missing when asked (a lecturer copying a model in, rm -rf then cp -r): the directory there now
            # is read, not refused to the room for the rest of the hub-failure wait.
            return None
        return reason if time.monotonic() - when < self.failure_ttl_s else None

    def forget_failure(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)
            self._held_retry.pop(key, None)

    def passing_failure(self, key: str) -> str | None:
        """Why the last re-read of a rewritten directory failed for a reason of the moment, while that still
        holds back the sessions keeping their old copy (same files, within `retry_held_s`)."""
        with self._lock:
            failure = self._held_retry.get(key)
        if not failure:
            return None
        when, reason, signature = failure
        if time.monotonic() - when >= self.retry_held_s or directory_signature(key) != signature:
            return None
        return reason

    def changed_on_disk(self, key: str) -> bool:
        """Whether the local directory a loaded model was read from has been rewritten since (a deleted one has
        not: its model keeps serving from memory)."""
        with self._lock:
            then = self._read_as.get(key)
        now = directory_signature(model_key_of(key))
        return then is not None and now is not None and now != then

    def result_key(self, key: str, model: bert_core.BertScopeModel) -> str:
        """The key the results of `model` are cached under: `key`, or `key #n` once its directory has been
        read n > 1 times (so a rewritten checkpoint's results never mix with the old one's)."""
        with self._lock:
            generation = self._generation.get(key, 1)
            current = self._models.get(key) or self._evicted.get(key)
        if current is not model:  # an older copy a session still holds
            with self._lock:
                number = self._old_copies.get(model)
                if number is None:
                    number = self._old_copies[model] = next(self._old_numbers)
            return f"{key} #old-{number}"
        return key if generation <= 1 else f"{key} #{generation}"

    def load(
        self,
        source: str,
        progress: Callable[[str], None] | None = None,
        held: bert_core.BertScopeModel | None = None,
    ) -> bert_core.BertScopeModel:
        """The model for `source`, loading it once; raises `bert_core.ModelLoadError` with a reason.

        A local directory rewritten while serving is read again. If the new files do not load, `held` (the copy
        the asking session already had) is returned so that session keeps working, while a session that had
        none is told what is wrong with the directory now."""
        key = model_key(source)
        cache_key = loaded_key(source)
        answer, _ = self._settled(key, cache_key, held)
        if answer is not None:
            return answer
        with self._only_load_of(cache_key):  # two sessions asking for the same model wait for one load
            # Again: the read this session waited for may have loaded the model, or failed (its verdict then
            # holds for these files too, rather than each waiting session reading them again).
            answer, model = self._settled(key, cache_key, held)
            if answer is not None:
                return answer
            if model is None:
                self._no_checkpoint_there(source, key)
            with self._lock:
                crowded = self._claim(cache_key, source)
                # The grace keeps a closed tab's copy for a tab that comes back after a network blip, but a model
                # that needs the room comes first: closed tabs let go, the longest closed first, until it fits. (A
                # reload with another ?model= closes a tab: its previous session held the old model for the
                # grace, and the reload was refused as if an open page used it.)
                while crowded and self._let_go_of_a_closed_tab():
                    crowded = self._claim(cache_key, source)
            if crowded and time.monotonic() - self._collected > self.collect_every_s:
                # A model let go of but kept alive only by a reference cycle is not in use. Rate-limited: a full
                # collection holds the GIL ~170 ms, and a session on a full store asks again on every rerun.
                self._collected = time.monotonic()
                gc.collect()
                with self._lock:
                    crowded = self._claim(cache_key, source)
            if crowded:
                names = [self._sources.get(k, k) for k in crowded]
                kept = ""
                with self._lock:
                    keeps = self._keeps_place_for_room(cache_key)
                if keeps:
                    # it always loads, so it is one of the alternatives too
                    kept = f", one place kept for the model the room opens on ({self.room_model})"
                    names = [self.room_model, *names]
                raise StoreFull(
                    f"this server keeps at most {self.capacity} "
                    f"{'model' if self.capacity == 1 else 'models'} in memory (--max-models or {ENV_MAX_MODELS}, which "
                    f"whoever starts it can raise){kept}, and "
                    f"open pages are using {', '.join(names[1:] if kept else names)}; pick "
                    f"{'it' if len(names) == 1 else 'one of them'}, or try again when fewer pages are open"
                    + (
                        ""
                        if self._free != _BUNDLED_KEYS
                        else f" (the bundled models, {', '.join(BUNDLED_NAMES)}, "
                        "always load: they are not counted)"
                    ),
                    names,
                )
            try:
                return self._read(source, key, cache_key, model, held, progress)
            finally:
                with self._lock:
                    self._loading.discard(cache_key)
                    self._forget_names()  # a failed read's

    @contextlib.contextmanager
    def _only_load_of(self, cache_key: str) -> Iterator[None]:
        """Held while `cache_key` is loaded. Its lock leaves the table once nobody holds or waits for it, or
        every name a student ever typed would keep one."""
        with self._lock:
            entry = self._key_locks.setdefault(cache_key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._lock:
                entry[1] -= 1
                if not entry[1]:
                    del self._key_locks[cache_key]

    def _remember_failure(self, key: str, failure: tuple[float, str, tuple | None]) -> None:
        # caller holds self._lock. The oldest are forgotten past MAX_FAILURES (names typed by a room of
        # students); a forgotten one costs one more read when asked for again.
        self._failures.pop(key, None)
        self._failures[key] = failure
        while len(self._failures) > MAX_FAILURES:
            del self._failures[next(iter(self._failures))]

    @staticmethod
    def _in_its_own_words(reason: str, source: str, key: str) -> str:
        """A failure is remembered for the checkpoint (its key) and told to every session that asks for it: with
        the path as its first asker spelled it (`/tmp/../etc`), another session read that student's words. The
        resolved path is written instead, standing alone (not as a piece of a longer name)."""
        spelled = source_path(source).strip()
        if spelled == key or not key.startswith(os.sep) or not spelled:
            return reason
        return re.sub(r"(?<![\w./~-])" + re.escape(spelled) + r"(?![\w./-])", lambda _: key, reason)

    def _no_checkpoint_there(self, source: str, key: str) -> None:
        """Raise (and remember, as a read would) when `source` names no checkpoint directory at all: told
        before room is made, or every mistyped path would let go of an unused cached model first. Hub ids and
        everything else are judged by the read itself."""
        path = source_path(source)
        if bert_core.checkpoints.looks_like_hub_id(path) and _directory(path) is None:
            return
        signature = directory_signature(key)
        try:
            bert_core.checkpoints.config_file(
                bert_core.checkpoints.resolve_source(path, local_files_only=True)
            )
        except bert_core.ModelLoadError as exc:
            reason = self._in_its_own_words(str(exc), source, key)
            with self._lock:
                self._remember_failure(key, (time.monotonic(), reason, signature))
            raise bert_core.ModelLoadError(reason) from exc

    def _settled(
        self, key: str, cache_key: str, held: bert_core.BertScopeModel | None
    ) -> tuple[bert_core.BertScopeModel | None, bert_core.BertScopeModel | None]:
        """(the model to give without reading, what is loaded under `cache_key` now): the loaded model while
        its files are unchanged, or `held` while its rewritten files fail; raises a remembered failure for a
        session holding no copy. (None, loaded) when the checkpoint must be read."""
        model = self.loaded(cache_key)
        if model is not None and not self.changed_on_disk(cache_key):
            return model, model
        failure = self.recent_failure(key)
        if failure:
            if held is not None and held is model:
                return held, model
            raise bert_core.ModelLoadError(failure)
        if held is not None and held is model and self.passing_failure(key):
            return held, model
        return None, model

    def _read(self, source, key, cache_key, model, held, progress) -> bert_core.BertScopeModel:
        """Read `source` from disk or the hub cache (the caller holds its key lock and a place in memory)."""
        stale = model
        signature = directory_signature(key)  # taken before reading, so an edit during the load counts
        try:
            model = bert_core.load_pretrained(
                source_path(source),
                progress=progress,
                local_files_only=not hub_downloads_allowed(),
                pack_weights=not exact_arithmetic(),
                device=os.environ.get("BERTSCOPE_DEVICE", "").strip() or None,
            )
        except bert_core.ModelLoadError as exc:
            # The loader's own verdict is about the checkpoint, so it holds for every session until the
            # directory changes (or the hub failure's time is up).
            reason = self._in_its_own_words(str(exc), source, key)
            if stale is not None:
                reason = f"its files changed on disk while the server ran and no longer load: {reason}"
            with self._lock:
                self._remember_failure(key, (time.monotonic(), reason, signature))
            if stale is not None and held is stale:
                return held
            raise bert_core.ModelLoadError(reason) from exc
        except Exception as exc:  # noqa: BLE001 - anything else the loader let through is a message
            # ...but its cause may be this moment (memory, a file being copied in), so it is told to this
            # session only and the next one tries again: one bad moment must not poison the model. Its traceback
            # goes to the server's log: the page's one line cannot tell a bad moment from a fault in the code.
            logging.getLogger("bertscope").exception("loading %s failed unexpectedly", source)
            if stale is not None:
                with self._lock:
                    self._held_retry[key] = (time.monotonic(), f"{type(exc).__name__}: {exc}", signature)
                if held is stale:
                    return held
            # Said as a forward pass that runs out says it, not in numpy's words.
            if server.is_out_of_memory(exc):
                raise bert_core.ModelLoadError(
                    f"the server ran out of memory loading {source} (it is still running): try again in a "
                    "moment, or a smaller model"
                ) from exc
            raise bert_core.ModelLoadError(f"cannot load {source}: {type(exc).__name__}: {exc}") from exc
        with self._lock:
            self._remember(cache_key, model)
            # The same files read again (evicted, then asked for) keep their results' key, so the cached
            # analyses of those weights stay in use; different files, or a hub id, start a new one.
            same_files = signature is not None and self._read_as.get(cache_key) == signature
            if not same_files:
                self._generation[cache_key] = self._generation.get(cache_key, 0) + 1
            self._read_as[cache_key] = signature
            self._failures.pop(key, None)
            self._held_retry.pop(key, None)
        return model


def model_key_of(cache_key: str) -> str:
    """The checkpoint part of a loaded model's key (loaded_key adds the arithmetic). Only a suffix loaded_key
    added is taken off: a directory may itself be named "... [exact]"."""
    return cache_key.removesuffix(" [exact]") if exact_arithmetic() else cache_key


def directory_signature(key: str) -> tuple | None:
    """What changes when a local checkpoint directory is edited: the modification times of the directory and
    of the files in it (config.json, weights, vocab). None when `key` is not an existing directory."""
    path = Path(key)
    try:
        if not path.is_dir():
            return None
        entries = sorted(os.scandir(path), key=lambda e: e.name)[:200]
        stamps = []
        for entry in entries:
            try:
                stamps.append((entry.name, entry.stat().st_mtime_ns, entry.stat().st_size))
            except OSError:  # a dangling link
                stamps.append((entry.name, None, None))
        return (path.stat().st_mtime_ns, tuple(stamps))
    except OSError:
        return None


ENV_MAX_MODELS = "BERTSCOPE_MAX_MODELS"  # models held in memory at once (a shared server's bound; default 3)


@st.cache_resource(show_spinner=False)
def model_store() -> ModelStore:
    try:
        capacity = max(1, int(os.environ.get(ENV_MAX_MODELS, "").strip() or 3))
    except ValueError:
        capacity = 3
    return ModelStore(capacity=capacity, room_model=room_model_source())


def room_model_source() -> str | None:
    """The model a link without ?model= opens on, as load_model gets it: the server's own, or the demo model
    where that is the default hub model and can't be had here (a shared server without it in the cache); None
    where it would be refused (outside the roots), since a place kept for it would stay empty."""
    source = default_model_source()
    if (
        source == DEFAULT_HUB_MODEL
        and demo_model_available()
        and not hub_downloads_allowed()
        and not is_in_hub_cache(source)
    ):
        return DEMO_SOURCE
    return None if refusal(source) else source


@dataclass(frozen=True)
class ActiveModel:
    """The model the pages use, and how it was chosen."""

    model: bert_core.BertScopeModel
    source: str  # what is actually loaded (DEMO_SOURCE after a fallback)
    key: str  # cache key of the analyses
    notice: str | None = None  # shown when this is not what the user asked for
    # why, where that is long (a hub error): shown folded under the notice, which it pushed past 11 lines in
    # the sidebar, taking Sentence A off a 1024 x 768 projector's screen
    notice_why: str | None = None


class ModelUnavailable(Exception):
    """The chosen model can't be loaded; `reason` says why, for an inline message."""

    def __init__(self, source: str, reason: str, in_use: list[str] | None = None) -> None:
        super().__init__(reason)
        self.source = source
        self.reason = reason
        self.in_use = in_use or []  # a full store: the models open pages use, the ones that load now


def _without_home(message: str) -> str:
    """A loader's message with the server's home directory written `~`: on a shared server the students see
    it, and where the lecturer's account keeps its Hugging Face cache is not theirs to know. The directory
    itself too ("no config.json in /home/lecturer"), not only paths under it."""
    home = str(Path.home()).rstrip(os.sep)
    if not home:
        return message
    # where a name ends: "/root/x", "/root:", "in /root." (not "/rooted")
    return re.sub(r"(?<![\w./~-])" + re.escape(home) + r"(?=$|[\s'\"/\\)(,;:]|\.(?:$|\s))", "~", message)


def load_model(
    source: str, progress: Callable[[str], None] | None = None, held: ActiveModel | None = None
) -> ActiveModel:
    """Load `source`; when it is the default hub model and can't be had, fall back to the demo model.

    `held` is what this session had on its previous run: if the directory was rewritten while serving and no
    longer loads, the session keeps that copy (with a notice) instead of losing its page."""
    store = model_store()
    try:
        refused = refusal(source)
        if refused:
            raise bert_core.ModelLoadError(refused)
        had = held.model if held is not None and held.source == source else None
        model = store.load(source, progress, held=had)
        if (
            had is not None
            and model is had
            and held is not None
            and store.changed_on_disk(loaded_key(source))
        ):
            key = model_key(source)
            reason = _without_home(
                store.recent_failure(key) or store.passing_failure(key) or "they no longer load"
            )
            return ActiveModel(
                model, source, held.key, f"{source}: {reason}. This page keeps the copy it already had."
            )
        return ActiveModel(model, source, store.result_key(loaded_key(source), model))
    except bert_core.ModelLoadError as exc:
        reason = _without_home(str(exc))
        fallback_ok = (
            source == DEFAULT_HUB_MODEL
            and source == default_model_source()
            and demo_model_available()
            and not is_in_hub_cache(source)
        )
        if not fallback_ok:
            raise ModelUnavailable(source, reason, getattr(exc, "in_use", None)) from exc
    try:
        demo = store.load(DEMO_SOURCE, progress)
    except bert_core.ModelLoadError as exc:
        raise ModelUnavailable(
            source, f"{reason}; the bundled demo model failed too: {_without_home(str(exc))}"
        ) from exc
    notice = (
        f"{source} can't be loaded here. Showing the bundled demo model instead: a small BERT shipped with "
        "BERTScope, not Google's bert-base."
    )
    # The same key as @demo picked directly: after its directory is rewritten, the new weights' results.
    demo_key = loaded_key(DEMO_SOURCE)
    return ActiveModel(demo, DEMO_SOURCE, store.result_key(demo_key, demo), notice, reason)


def retry_model(key: str) -> None:
    """The "Try again" button's callback (a module function: app.inputs, widget callbacks); the store of now,
    not the one the button was drawn with, which a cleared cache has replaced."""
    model_store().forget_failure(key)


def meant_name(previous: str | None, typed: str) -> str | None:
    """The model a name that failed to load most likely meant, where that model loads here; else None.

    First the name a user typed whole where Streamlit's box kept only its end: the box empties a name being
    typed once it equals the current model's (ui.TYPED_NAME_HELP), so "@demo-qa" typed over @demo arrived as
    "-qa", which failed as a model of its own in front of a room: the current model's name and the rest, where
    that is a model that loads here (bundled, cached, or a directory). Then a slip of the keys in a name the
    picker lists ("bert-base-uncsed" with bert-base-uncased cached, "@Demo-QA", "@dmeo"): offline, the hub
    cannot say which it meant, and the room saw only "not found"."""
    if not typed:
        return None
    if previous and not typed.startswith(previous):
        whole = previous + typed
        loads = whole in bundled_models() or whole in cached_hub_models() or _directory(whole) is not None
        # never a directory outside a shared server's roots: offered, it told the room which paths exist there
        if loads and refusal(whole) is None:
            return whole
    # (root_models lists only directories `refusal` lets open)
    listed = [*bundled_models(), *cached_hub_models(), *root_models()]
    if typed in listed:
        return None  # a listed model that failed is no slip
    folded = typed.casefold()
    slips = [name for name in listed if _one_slip(folded, name.casefold())]
    return slips[0] if len(slips) == 1 else None


def _one_slip(typed: str, name: str) -> bool:
    """Whether `typed` is `name` with one key slipped: the same but for case, or one letter left out, added,
    changed, or swapped with its neighbour. Not a closeness ratio (difflib): bert-base-cased and
    bert-base-uncased, or bert-large-uncased and bert-base-uncased, are as close by ratio as a typo is, and are
    other models."""
    if typed == name:
        return True
    if abs(len(typed) - len(name)) > 1:
        return False
    i = next(
        (k for k, (a, b) in enumerate(zip(typed, name, strict=False)) if a != b), min(len(typed), len(name))
    )
    if len(typed) != len(name):
        shorter, longer = sorted((typed, name), key=len)
        return shorter[i:] == longer[i + 1 :]
    changed = typed[i + 1 :] == name[i + 1 :]
    swapped = typed[i : i + 2] == name[i : i + 2][::-1] and typed[i + 2 :] == name[i + 2 :]
    return changed or swapped


def loadable_alternatives(failed: str) -> list[str]:
    """Sources that are likely to load right now (on disk or in the cache), for the error message."""
    out = []
    if demo_model_available():
        out.append(DEMO_SOURCE)
    out += cached_hub_models()
    env = os.environ.get(ENV_MODEL, "").strip()
    directory = _directory(env) if env else None
    if directory is not None and directory.resolve() not in _bundled_dirs():
        out.append(env)
    return [o for o in dict.fromkeys(out) if o != failed]


def session_hold() -> Hold:
    """This session's hold on its model, made on its first run and registered with the store on each."""
    hold = st.session_state.get(KEY_HOLD)
    if hold is None:
        hold = st.session_state[KEY_HOLD] = Hold()
    try:  # not public API either: without it, holds are kept as before (never let go of)
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        ctx = get_script_run_ctx()
    except ImportError:
        ctx = None
    model_store().take_hold(getattr(ctx, "session_id", None), hold)
    return hold


def load_second(source: str) -> ActiveModel:
    """The Compare page's second model, held by this session like the sidebar's (`Hold.second`): counted as in
    use by an open page, so that another session's load cannot push it out of a full store between two runs
    of the page (the page then could not load it again), until the session leaves the page."""
    hold = session_hold()
    if hold.second is not None and loaded_key(hold.second.source) != loaded_key(source):
        # let go of first, as the sidebar does, or a full store would count it against this
        hold.second = None
    try:
        hold.second = load_model(source, held=hold.second)
    except ModelUnavailable:
        hold.second = None
        raise
    return hold.second


def leave_second() -> None:
    """The session left the Compare page: its second model is no longer in use by it."""
    hold = st.session_state.get(KEY_HOLD)
    if hold is not None:
        hold.second = None


def active_model() -> ActiveModel | None:
    """The model the sidebar loaded for this run (None when it couldn't be loaded)."""
    hold = st.session_state.get(KEY_HOLD)
    return hold.active if hold is not None else None


def short_names(sources: list[str]) -> list[str]:
    """Short names that tell `sources` apart, for chart titles: a path or hub id by as many of its last parts as
    tell them apart ("checkpoint-500" twice is "runA/checkpoint-500"), cut in the middle past 28 characters
    ("distilbert-ba…-sst-2-english"), or, where that cut took the part that differs, around it
    ("…ert-base-uncased-finetune…" and "…ert-base-cased-finetuned-…"): whole names ran past a chart's title."""
    parts = [s.rstrip("/").split("/") for s in sources]
    for k in range(1, max(len(p) for p in parts) + 1):
        names = ["/".join(p[-k:]) for p in parts]
        if len(set(names)) == len(set(sources)):
            break
    cut = [n if len(n) <= 28 else n[:13] + "…" + n[-14:] for n in names]
    if len(set(cut)) == len(set(names)):
        return cut
    # the cut took the part that differs ("-base-uncased-" against "-base-cased-"): from a little before it,
    # the end of the shorter where one name begins the other
    differs = next(
        (i for i, chars in enumerate(zip(*names, strict=False)) if len(set(chars)) > 1), min(map(len, names))
    )
    start = max(0, differs - 8)
    around = [
        n
        if len(n) <= 28
        else ("…" if start else "") + n[start : start + 26] + ("…" if start + 26 < len(n) else "")
        for n in names
    ]
    # three or more can still part past that window: whole names then, long titles over two that read alike
    return around if len(set(around)) == len(set(names)) else names
