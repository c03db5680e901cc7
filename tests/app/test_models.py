"""app.models: remembered load failures, the shared-server settings, the model store and the model card."""

from __future__ import annotations

import os
import time
import types

import pytest
import torch

import bert_core
from app import bundled, models
from tests.conftest import make_checkpoint


@pytest.fixture
def load_calls(monkeypatch):
    """The sources bert_core.load_pretrained is called with, in order (the real loader still runs)."""
    calls = []
    real = bert_core.load_pretrained

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(bert_core, "load_pretrained", counting)
    return calls


def wait_until(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_broken_directory_is_not_reread_until_it_changes(tmp_path, load_calls):
    calls = load_calls
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    store = models.ModelStore()
    for _ in range(3):  # three reruns (slider moves) of the page
        with pytest.raises(bert_core.ModelLoadError):
            store.load(str(broken))
    assert len(calls) == 1
    make_checkpoint(broken, "model")  # the user fixes the directory
    assert store.load(str(broken)).info.num_layers == 2
    assert len(calls) == 2


def test_sessions_asking_at_once_for_a_broken_directory_share_one_read(tmp_path, load_calls, monkeypatch):
    """Five sessions open a page on a truncated checkpoint at the same moment: the first read's verdict is
    every waiting session's, not five reads of the same bad files one after another."""
    import threading
    import time

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    real = bert_core.load_pretrained

    def slow(*args, **kwargs):  # a large checkpoint: the others arrive while it is being read
        time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(bert_core, "load_pretrained", slow)
    store = models.ModelStore()
    errors = []

    def session():
        try:
            store.load(str(broken))
        except bert_core.ModelLoadError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=session) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(errors) == 5 and len(set(errors)) == 1
    assert len(load_calls) == 1


def test_hub_downloads_can_be_switched_off(make_app, monkeypatch, empty_hub_cache):
    calls = []
    monkeypatch.setattr(bert_core, "load_pretrained", lambda *a, **k: calls.append(a) or None)
    monkeypatch.setenv("BERTSCOPE_ALLOW_HUB", "0")
    at = make_app(model="someone/bert-tiny")
    errors = " ".join(e.value for e in at.sidebar.error).replace("\\", "")
    assert "BERTSCOPE_ALLOW_HUB=0" in errors and "not in the local cache" in errors
    assert calls == []  # refused before any download was tried
    assert models.refusal("someone/bert-tiny")
    long_name = "someone/" + "b" * 5000  # shaped like a hub id: echoed in part, not whole
    assert len(models.refusal(long_name) or "") < 400
    monkeypatch.setenv("BERTSCOPE_ALLOW_HUB", "1")
    assert models.refusal("someone/bert-tiny") is None


def test_model_roots_restrict_local_directories(make_app, monkeypatch, tmp_path):
    allowed = make_checkpoint(tmp_path / "allowed" / "m", "model")
    outside = make_checkpoint(tmp_path / "elsewhere" / "m", "model")
    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", f"{tmp_path / 'allowed'}:{tmp_path / 'other'}")
    at = make_app(model=str(outside))
    errors = " ".join(e.value for e in at.sidebar.error).replace("\\", "")
    assert "only under" in errors and "BERTSCOPE_MODEL_ROOTS" in errors
    assert models.refusal(str(tmp_path / "allowed" / ".." / "elsewhere" / "m"))  # no escape through ..
    assert models.refusal("/etc")
    at = make_app(model=str(allowed))
    assert not at.sidebar.error
    assert models.refusal(models.DEMO_SOURCE) is None


@pytest.mark.parametrize("exact", [False, True])
def test_sidebar_says_which_arithmetic_and_exact_mode_loads_unpacked(make_app, app_env, monkeypatch, exact):
    monkeypatch.delenv("BERTSCOPE_DEVICE", raising=False)  # packing is the CPU's
    if exact:
        monkeypatch.setenv("BERTSCOPE_EXACT", "1")
    else:
        monkeypatch.delenv("BERTSCOPE_EXACT", raising=False)
    at = make_app()
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert ("arithmetic: exact" in captions) == exact
    assert ("arithmetic: fast" in captions) == (not exact)
    info = models.ModelStore().load(str(app_env)).info
    assert info.packed_weights == (not exact)
    assert "fused" not in captions and "kernel" not in captions
    # the card names the architecture and the checkpoint's prediction heads as ModelInfo lists them
    assert info.architecture == "bert" and info.heads == ("mlm", "nsp")
    assert "BERT · 2 layers" in captions and "prediction heads: MLM ✓ · NSP ✓ · pooler ✓" in captions


def test_a_model_still_in_use_is_adopted_back_not_loaded_twice(tmp_path, load_calls):
    calls = load_calls
    a, b, c = (make_checkpoint(tmp_path / name, "model") for name in "abc")
    store = models.ModelStore(capacity=2)
    held = store.load(str(a))  # a session keeps using model a ...
    store.load(str(b))  # ... another used b and moved on
    store.load(str(c))  # c needs room: b, which nobody holds, is let go; a stays in memory for its page
    assert len(calls) == 3
    assert store.load(str(a)) is held and len(calls) == 3  # adopted back, not a second copy
    assert set(store.in_use()) == {str(a), str(c)}


def test_max_models_bounds_the_models_in_memory_including_those_pages_hold(tmp_path, load_calls):
    """BERTSCOPE_MAX_MODELS is what is in memory, not what the cache lists: a model pushed out of the cache
    but still held by an open page counts, so a new model waits until a page lets go of one."""
    import gc

    calls = load_calls
    a, b = make_checkpoint(tmp_path / "a", "model"), make_checkpoint(tmp_path / "b", "model")
    store = models.ModelStore(capacity=1)
    held = store.load(str(a))  # a page holds model a
    with pytest.raises(models.StoreFull) as full:
        store.load(str(b))
    assert full.value.in_use == [str(a)] and "at most 1 model in memory" in str(full.value)
    assert "try again when fewer pages are open" in str(full.value)
    assert isinstance(full.value, bert_core.ModelLoadError) and len(calls) == 1
    assert store.recent_failure(models.model_key(str(b))) is None  # not b's fault: not remembered against it
    assert store.load(str(a)) is held
    del held  # the page moved on
    gc.collect()
    assert store.load(str(b)).info.num_layers == 2 and len(calls) == 2
    assert store.in_use() == [str(b)]


def test_the_rooms_model_always_has_a_place_however_many_tabs_hold_others(tmp_path, load_calls):
    """Two open tabs on two other models left the server's own model no room (BERTSCOPE_MAX_MODELS=2): the
    lecture's link said "no model is loaded" to everyone after them, for as long as those tabs stayed open."""
    room, b, c = (make_checkpoint(tmp_path / name, "model") for name in ("room", "b", "c"))
    before = models.ModelStore(capacity=2)  # no place kept: one tab on b, one on c, and the room is shut out
    held = [before.load(str(b)), before.load(str(c))]
    with pytest.raises(models.StoreFull):
        before.load(str(room))
    store = models.ModelStore(capacity=2, room_model=str(room))
    held_b = store.load(str(b))  # one tab on b ...
    with pytest.raises(models.StoreFull) as full:  # ... another model waits for b's tab instead
        store.load(str(c))
    assert "one place kept for the model the room opens on" in str(full.value)
    assert full.value.in_use == [str(room), str(b)]  # the room's model is one that loads now
    held_room = store.load(str(room))  # and the room's model loads beside b
    with pytest.raises(models.StoreFull) as full:
        store.load(str(c))
    assert full.value.in_use == [str(room), str(b)]
    assert store.load(str(b)) is held_b and store.load(str(room)) is held_room and len(held) == 2


def test_bundled_models_take_no_place_so_one_tab_on_them_shuts_nobody_out(tmp_path, load_calls):
    """One student's Compare page opened on @demo (its default second model), and the lecturer's next example,
    @demo-qa, was refused as the store was full: a bound meant for bert-base-size models counted 5 MB ones."""
    room, demo, qa, b, c = (make_checkpoint(tmp_path / n, "model") for n in ("room", "demo", "qa", "b", "c"))
    free = [models.model_key(str(demo)), models.model_key(str(qa))]
    store = models.ModelStore(capacity=2, room_model=str(room), free_keys=free)
    held = [store.load(str(room)), store.load(str(demo)), store.load(str(qa))]  # all three, at a bound of 2
    held.append(store.load(str(b)))  # and the one place besides the room's is still there for another
    with pytest.raises(models.StoreFull) as full:
        store.load(str(c))
    assert full.value.in_use == [str(room), str(b)]  # the bundled ones are no reason, nor named as one
    assert set(store.in_use()) == {str(room), str(demo), str(qa), str(b)}  # their names kept all the same
    # a bundled model is never the one let go of to make room, nor pushed out by others
    del held[3]
    import gc

    gc.collect()
    held.append(store.load(str(c)))  # b let go of, c in its place
    assert store.load(str(demo)) is held[1] and store.load(str(qa)) is held[2]
    assert models.model_key(models.DEMO_SOURCE) in models.ModelStore()._free
    # A bundled room model (@demo, on a fresh --shared install) keeps no place: with a bound of 2, two others
    free_room = models.ModelStore(capacity=2, room_model=str(demo), free_keys=free)
    kept = [free_room.load(str(demo)), free_room.load(str(b)), free_room.load(str(c))]
    with pytest.raises(models.StoreFull) as full:
        free_room.load(str(room))
    assert (
        "place kept" not in str(full.value)
        and sorted(full.value.in_use) == [str(b), str(c)]
        and len(kept) == 3
    )


def test_the_room_keeps_no_place_for_a_model_that_failed_or_at_a_capacity_of_one(tmp_path, load_calls):
    b, c = make_checkpoint(tmp_path / "b", "model"), make_checkpoint(tmp_path / "c", "model")
    broken = tmp_path / "broken"
    broken.mkdir()
    store = models.ModelStore(capacity=2, room_model=str(broken))
    with pytest.raises(bert_core.ModelLoadError):
        store.load(str(broken))
    held = [store.load(str(b)), store.load(str(c))]  # a place kept for it would only stay empty: none raised
    (broken / "note.txt").write_text("being fixed")  # its files changed: its failure no longer stands ...
    d = make_checkpoint(tmp_path / "d", "model")
    with pytest.raises(models.StoreFull, match="place kept"):  # ... so its place is kept again
        store.load(str(d))
    single = models.ModelStore(capacity=1, room_model=str(b))
    held.append(single.load(str(c)))  # with one place, it is whoever loads first


def test_the_store_lets_go_of_the_hold_of_a_tab_closed_for_a_while_only(tmp_path, load_calls):
    """A closed tab's session lives on in Streamlit for minutes; its hold on a model is let go of once it has
    been closed for the grace period, while open tabs, tabs back from a blip, and sessions never seen
    connected (AppTest's) keep theirs."""
    import gc
    import weakref

    a, b = make_checkpoint(tmp_path / "a", "model"), make_checkpoint(tmp_path / "b", "model")
    connected = {"student", "lecturer"}
    store = models.ModelStore(capacity=1, is_open=lambda sid: sid in connected, closed_grace_s=0.5)
    student, test_session = models.Hold(), models.Hold()
    store.take_hold("student", student)
    store.take_hold("a test's session", test_session)  # never connected
    student.active = models.ActiveModel(store.load(str(a)), str(a), "a")
    test_session.active = student.active
    with pytest.raises(models.StoreFull):
        store.load(str(b))
    store.take_hold("student", student)  # the student's next run: seen open now
    connected.discard("student")  # a blip of the student's network ...
    store.take_hold("lecturer", models.Hold())
    connected.add("student")  # ... and back within the grace: the page keeps its copy
    time.sleep(0.6)
    store.take_hold("lecturer", models.Hold())
    assert student.active is not None
    connected.discard("student")  # the tab closes
    store.take_hold("lecturer", models.Hold())
    assert student.active is not None  # not yet: it may be a blip
    time.sleep(0.6)
    store.take_hold("lecturer", models.Hold())
    assert student.active is None and test_session.active is not None
    gone = weakref.ref(test_session.active.model)
    test_session.active = None
    gc.collect()
    assert gone() is None  # nothing else kept the closed tab's model alive
    assert store.load(str(b)).info.num_layers == 2 and len(load_calls) == 2
    # A closed session's run that ends after its hold was let go of and sets it again is let go of again.
    student.active = models.ActiveModel(store.loaded(models.loaded_key(str(b))), str(b), "b")
    store.take_hold("lecturer", models.Hold())
    assert student.active is None
    del student
    gc.collect()
    store.take_hold("lecturer", models.Hold())
    assert "student" not in store._holds and "student" not in store._seen_open  # forgotten with its state


def test_a_model_that_needs_the_room_does_not_wait_out_a_closed_tabs_grace(tmp_path, load_calls):
    """A lecturer who edits the link's ?model= reloads the tab: its previous session, closed, held the old
    model for the grace, and the new one was refused for ~10 s as if an open page used the old one."""
    a, b = make_checkpoint(tmp_path / "a", "model"), make_checkpoint(tmp_path / "b", "model")
    connected = {"before reload"}
    store = models.ModelStore(capacity=1, is_open=lambda sid: sid in connected, closed_grace_s=60.0)
    before = models.Hold()
    store.take_hold("before reload", before)
    before.active = models.ActiveModel(store.load(str(a)), str(a), "a")
    with pytest.raises(models.StoreFull):  # an open tab's model is in use: refused
        store.load(str(b))
    connected.discard("before reload")  # the reload: that session's tab is closed ...
    connected.add("after reload")
    store.take_hold("after reload", models.Hold())
    assert before.active is not None  # ... within the grace, its copy kept while nothing needs the room
    assert store.load(str(b)).info.num_layers == 2 and before.active is None and len(load_calls) == 2


def test_closed_tabs_let_go_the_longest_closed_first_and_only_until_the_model_fits(tmp_path, load_calls):
    """A tab back from a network blip keeps its copy unless the room is needed, and then only the tabs closed
    longest let go, one at a time: not every tab whose Wi-Fi just blipped."""
    a, b, c = (make_checkpoint(tmp_path / n, "model") for n in "abc")
    connected = {"early", "late"}
    store = models.ModelStore(capacity=2, is_open=lambda sid: sid in connected, closed_grace_s=60.0)
    early, late = models.Hold(), models.Hold()
    for sid, hold, path in (("early", early, a), ("late", late, b)):
        store.take_hold(sid, hold)
        hold.active = models.ActiveModel(store.load(str(path)), str(path), sid)
    connected.discard("early")
    store.take_hold("late", late)  # a sweep: "early" seen closed from now
    time.sleep(0.05)
    connected.discard("late")  # closed later (a blip, say)
    store.take_hold("someone", models.Hold())
    assert store.load(str(c)).info.num_layers == 2  # room for one more: ...
    assert early.active is None and late.active is not None  # ... only the tab closed longest let go


def test_a_tabs_close_is_timed_from_when_it_closed_even_on_a_quiet_server(tmp_path):
    """Streamlit does not say when a tab closed: the store looks every `sweep_every_s` while it knows a hold.
    A blip after a quiet spell (no page runs for longer than the grace) keeps its copy, and a closed tab is let
    go of after the grace even if no page runs at all."""
    connected = {"student"}
    store = models.ModelStore(is_open=lambda sid: sid in connected, closed_grace_s=0.5)
    store.sweep_every_s = 0.05
    student = models.Hold()
    store.take_hold("student", student)
    student.active = models.ActiveModel(store.load(str(make_checkpoint(tmp_path / "a", "model"))), "a", "a")
    time.sleep(0.8)  # the class reads the page: no runs
    connected.discard("student")  # a blip, just as ...
    store.take_hold("lecturer", models.Hold())  # ... the lecturer's page runs
    assert student.active is not None
    wait_until(lambda: student.active is None, timeout=5)  # the tab stayed closed: let go of, with no run


def test_a_streamlit_that_cannot_tell_connected_sessions_lets_go_of_no_hold(monkeypatch):
    """Whether a tab is connected comes from Streamlit's runtime, which is not public API: if it can't be
    asked, no session counts as connected, so holds are kept as they were before tabs were watched."""
    from streamlit import runtime

    monkeypatch.setattr(runtime, "exists", lambda: True)
    monkeypatch.setattr(runtime, "get_instance", lambda: object())
    assert models.session_open("a session") is False


def test_names_typed_by_a_room_leave_nothing_behind_but_a_bounded_list_of_failures(tmp_path, monkeypatch):
    """Every distinct name a student types goes through the store; what it keeps per name must not grow
    without end on a server that runs all term."""
    monkeypatch.setattr(models, "MAX_FAILURES", 5)
    store = models.ModelStore(capacity=2)
    model = make_checkpoint(tmp_path / "real", "model")
    store.load(str(model))
    for n in range(8):
        broken = tmp_path / f"typo{n}"
        broken.mkdir()
        (broken / "config.json").write_text("{")
        with pytest.raises(bert_core.ModelLoadError):
            store.load(str(broken))
    assert len(store._failures) == 5 and str(tmp_path / "typo7") in store._failures  # the latest kept
    assert store._key_locks == {}  # no lock left behind once nobody waits
    assert list(store._sources) == [models.loaded_key(str(model))]  # named only while in memory
    with pytest.raises(bert_core.ModelLoadError):  # a remembered failure is still told without a read
        store.load(str(tmp_path / "typo7"))


def test_a_mistyped_path_does_not_push_a_cached_model_out(tmp_path, load_calls):
    """Room for a new model is made before it is read; a path with no checkpoint at all is told before that,
    so a student's typo does not cost the next user of an unused cached model a fresh read."""
    a = make_checkpoint(tmp_path / "a", "model")
    (tmp_path / "notes").mkdir()
    store = models.ModelStore(capacity=1)
    store.load(str(a))  # cached, held by no page
    for typo in (tmp_path / "nosuch", tmp_path / "notes", tmp_path / "a" / "config.json"):
        with pytest.raises(bert_core.ModelLoadError) as told:
            store.load(str(typo))
        # remembered, as a read's failure is
        assert store.recent_failure(models.model_key(str(typo))) == str(told.value)
    assert "no such directory" in store.recent_failure(models.model_key(str(tmp_path / "nosuch")))
    assert "no config.json" in store.recent_failure(models.model_key(str(tmp_path / "notes")))
    assert store.loaded(models.loaded_key(str(a))) is not None and len(load_calls) == 1


def test_a_full_store_is_a_message_with_the_models_in_use_as_alternatives(make_app, tmp_path, monkeypatch):
    import streamlit as st

    other = make_checkpoint(tmp_path / "other", "model")
    monkeypatch.setenv("BERTSCOPE_MAX_MODELS", "1")
    st.cache_resource.clear()
    first = make_app()  # a page on the default model
    assert not first.sidebar.error
    second = make_app(model=str(other))
    errors = " ".join(e.value for e in second.sidebar.error).replace("\\", "")
    assert "at most 1 model in memory" in errors and "BERTSCOPE_MAX_MODELS" in errors
    labels = [b.label.replace("\\", "") for b in second.button]
    default = os.environ["BERTSCOPE_MODEL"]
    assert f"Use {default}" in labels
    assert first.session_state[models.KEY_HOLD].active is not None  # the first page keeps its model
    st.cache_resource.clear()


def test_a_lone_page_switches_models_on_a_server_that_keeps_one(make_app, tmp_path, monkeypatch):
    """The page's own previous model is not "in use by an open page": switching lets go of it first, so a
    server with BERTSCOPE_MAX_MODELS=1 still lets its one user switch, and switch back."""
    import streamlit as st

    from app import inputs

    other = make_checkpoint(tmp_path / "other", "model")
    monkeypatch.setenv("BERTSCOPE_MAX_MODELS", "1")
    st.cache_resource.clear()
    at = make_app(model=str(other))  # a link to another model
    assert at.session_state[models.KEY_HOLD].active.source == str(other)
    for source in (models.default_model_source(), models.DEMO_SOURCE):  # then two switches in the model box
        at.selectbox(key=inputs.KEY_MODEL).set_value(source).run()
        assert not at.exception and not at.sidebar.error, [e.value for e in at.sidebar.error]
        assert at.session_state[models.KEY_HOLD].active.source == source
    st.cache_resource.clear()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_the_sidebar_says_a_model_on_the_gpu_is_not_the_cpus_exact_arithmetic(make_app, monkeypatch):
    monkeypatch.setenv("BERTSCOPE_DEVICE", "cuda")
    monkeypatch.setenv("BERTSCOPE_EXACT", "1")  # the CPU's setting: on the GPU nothing is bit-identical
    captions = " ".join(c.value for c in make_app().sidebar.caption)
    assert "arithmetic: float32 on cuda, not bit-identical" in captions and "exact" not in captions


def test_exact_mode_is_part_of_the_cache_key(tiny_checkpoint, monkeypatch):
    monkeypatch.delenv("BERTSCOPE_DEVICE", raising=False)  # packing is the CPU's
    store = models.ModelStore()
    monkeypatch.setenv("BERTSCOPE_EXACT", "1")
    exact = store.load(str(tiny_checkpoint))
    monkeypatch.setenv("BERTSCOPE_EXACT", "0")
    fast = store.load(str(tiny_checkpoint))
    assert not exact.info.packed_weights and fast.info.packed_weights
    assert models.loaded_key(str(tiny_checkpoint)) != models.model_key(str(tiny_checkpoint)) + " [exact]"
    monkeypatch.setenv("BERTSCOPE_EXACT", "1")
    assert store.load(str(tiny_checkpoint)) is exact


@pytest.mark.parametrize(
    "typed",
    [
        "{root}/../outside",  # traversal out of the root
        "{root}/link-out",  # a symlink inside the root pointing out of it
        "~/somewhere",  # the home directory
        "{root}/%2e%2e/outside",  # URL-encoded dots are a literal name, still outside once resolved
        "../../etc",
    ],
)
def test_a_shared_server_never_opens_a_directory_outside_its_roots(tmp_path, monkeypatch, typed):
    from app import models

    root = tmp_path / "models"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (root / "link-out").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "%2e%2e").symlink_to(tmp_path, target_is_directory=True)
    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", str(root))
    monkeypatch.setenv("BERTSCOPE_MODEL", "")
    reason = models.refusal(typed.format(root=root))
    assert reason is not None and ("only under" in reason or "URL-encoded" in reason)
    (root / "ok").mkdir()
    assert models.refusal(str(root / "ok")) is None


def test_a_server_that_opens_only_the_bundled_models_says_so_without_its_install_path(tmp_path, monkeypatch):
    """`bertscope --shared` alone: a student's path was refused as "only under /home/…/assets", the install's
    own folder, which told them nothing they could use."""
    from app import models

    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", str(models.DEMO_MODEL_DIR.parent))
    monkeypatch.setenv("BERTSCOPE_MODEL", "")
    reason = models.refusal(str(tmp_path))
    assert (
        reason is not None
        and "no local model directories besides the bundled models (@demo, @demo-senses" in reason
    )
    assert str(models.DEMO_MODEL_DIR.parent) not in reason and "--model-roots" in reason


@pytest.mark.parametrize("roots", ["", "{tmp}"])
def test_a_mistyped_bundled_name_is_called_so_and_the_bundled_ones_are_listed(tmp_path, monkeypatch, roots):
    """`@nope` (or a link's `model2=@demo-x`) is no path and no hub id: the message names the bundled models,
    on a shared server (roots set) and a personal one, instead of the roots or "no such directory"."""
    from app import models

    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", roots.format(tmp=tmp_path))
    monkeypatch.setenv("BERTSCOPE_MODEL", "")
    reason = models.refusal("@nope")
    assert reason is not None and "not one of the bundled models" in reason and "@demo" in reason
    assert "only under" not in reason
    assert models.refusal("@demo") is None
    monkeypatch.setenv("BERTSCOPE_MODEL", "@nope")  # `bertscope --model @nope`: the same message
    assert "not one of the bundled models" in (models.refusal("@nope") or "")


def test_a_file_in_an_allowed_directory_that_links_out_of_the_roots_is_refused(tmp_path, monkeypatch):
    """The directory is inside the roots, but its vocab.txt is a link to a file outside them: the loader
    would read it (and a message could echo it), so the directory is refused; links within the roots (the
    hub cache's own layout, blobs beside snapshots) are fine."""
    from app import models

    root = tmp_path / "models"
    (root / "m").mkdir(parents=True)
    (root / "blobs").mkdir()
    (root / "blobs" / "config").write_text("{}")
    (root / "m" / "config.json").symlink_to(root / "blobs" / "config")
    secret = tmp_path / "secret.txt"
    secret.write_text("not for students")
    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", str(root))
    monkeypatch.setenv("BERTSCOPE_MODEL", "")
    assert models.refusal(str(root / "m")) is None
    (root / "m" / "vocab.txt").symlink_to(secret)
    reason = models.refusal(str(root / "m"))
    assert reason is not None and "vocab.txt" in reason and "links outside" in reason
    assert "not for students" not in reason and str(tmp_path) not in reason
    (root / "m" / "vocab.txt").unlink()
    # A link anywhere in the listing counts, however many files come before it (listed last here, whatever the
    # file system's own order: a check that stopped at 500 entries let one through)
    for n in range(models.MAX_DIRECTORY_ENTRIES - 2):
        (root / "m" / f"junk{n:05}").touch()
    (root / "m" / "zzz-tokenizer.json").symlink_to(secret)
    real_scandir = os.scandir

    class LinksLast:
        def __init__(self, path):
            self._listing = real_scandir(path)
            self._entries = sorted(self._listing, key=lambda e: e.is_symlink())

        def __enter__(self):
            return iter(self._entries)

        def __exit__(self, *exc):
            self._listing.close()

    monkeypatch.setattr(os, "scandir", LinksLast)
    assert "zzz-tokenizer.json" in (models.refusal(str(root / "m")) or "")
    monkeypatch.setattr(os, "scandir", real_scandir)
    (root / "m" / "zzz-tokenizer.json").unlink()
    assert models.refusal(str(root / "m")) is None
    (root / "m" / "one-too-many").touch()
    (root / "m" / "and-another").touch()  # past the bound: refused, not scanned on every ask
    assert "more than" in (models.refusal(str(root / "m")) or "")
    # A folder with no checkpoint (the root itself, typed as a model) is not refused for a link beside its
    # checkpoint folders: the loader reads nothing there and says there is no config.json
    (root / "linked-model").symlink_to(tmp_path, target_is_directory=True)
    assert models.refusal(str(root)) is None
    with pytest.raises(bert_core.ModelLoadError, match="config.json"):
        models.ModelStore().load(str(root))


def test_the_picker_lists_the_checkpoints_under_the_model_roots(tmp_path, monkeypatch):
    """A lecturer's --model-roots /models listed nothing in the model box: the room had to type paths."""
    import streamlit as st

    root = tmp_path / "models"
    make_checkpoint(root / "tiny-bert", "model")
    (root / "notes").mkdir()  # no config.json: not a model
    make_checkpoint(root / ".hidden", "model")
    monkeypatch.setenv(
        "BERTSCOPE_MODEL_ROOTS", os.pathsep.join([str(root), str(models.DEMO_MODEL_DIR.parent)])
    )
    monkeypatch.setenv("BERTSCOPE_MODEL", "")
    st.cache_data.clear()
    try:
        listed = models.model_options()
    finally:
        st.cache_data.clear()
    assert str(root / "tiny-bert") in listed and not any("notes" in o or ".hidden" in o for o in listed)
    assert str(models.DEMO_MODEL_DIR) not in listed and "@demo" in listed  # by its name only


def test_an_unusable_root_narrows_what_opens_instead_of_raising(tmp_path, monkeypatch):
    from app import models

    monkeypatch.setenv("BERTSCOPE_MODEL", "")
    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", "~no-such-user-here/models")
    assert models.model_roots() == []
    assert "no usable directory" in models.refusal(str(tmp_path))
    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", f"~no-such-user-here/models{os.pathsep}{tmp_path}")
    assert models.refusal(str(tmp_path)) is None


def test_max_chars_and_max_models_come_from_the_shared_settings(monkeypatch):
    from app import inputs, models

    monkeypatch.setenv("BERTSCOPE_MAX_CHARS", "10")
    text, notes = inputs.prepare_text("a" * 25, "Sentence A")
    assert len(text) == 10 and "first 10" in notes[0]
    monkeypatch.setenv("BERTSCOPE_MAX_MODELS", "1")
    import streamlit as st

    st.cache_resource.clear()
    assert models.model_store().capacity == 1
    st.cache_resource.clear()


def test_a_model_directory_deleted_while_serving(tmp_path, tiny_checkpoint):
    """Sessions holding the model keep working (its weights are in memory); a new load reports the problem,
    and one session's failed load does not stop another from loading a model that is fine."""
    import shutil

    import bert_core
    from app.models import ModelStore

    served = tmp_path / "served"
    shutil.copytree(tiny_checkpoint, served)
    store = ModelStore()
    model = store.load(str(served))
    shutil.rmtree(served)
    assert model.analyze("the bank of the river").attentions.shape[0] == 2  # still serving
    assert store.load(str(served)) is model  # sessions asking again get the one in memory
    with pytest.raises(bert_core.ModelLoadError, match="no such directory|not a valid hub id"):
        ModelStore().load(str(served))  # a process starting afresh (or after eviction) says what is wrong
    other = ModelStore()
    with pytest.raises(bert_core.ModelLoadError):
        other.load(str(served))
    assert other.load(str(tiny_checkpoint)).analyze("the cat").tokens[0] == "[CLS]"


def test_a_deleted_directory_keeps_its_key_however_it_was_spelt(tmp_path, tiny_checkpoint, monkeypatch):
    """`--model models/x` or a tab-completed "/m/x/": the key was the resolved path only while the directory
    was there, so once it was deleted the pages holding its weights asked for a fresh load (and failed), and
    the room's own model lost its kept place."""
    import shutil

    from app.models import ModelStore

    served = tmp_path / "served"
    shutil.copytree(tiny_checkpoint, served)
    monkeypatch.chdir(tmp_path)
    spellings = ["served", "./served/", str(served) + "/"]
    keys = {models.model_key(s) for s in spellings}
    assert keys == {str(served.resolve())}
    store = ModelStore()
    model = store.load("served")
    shutil.rmtree(served)
    assert {models.model_key(s) for s in spellings} == keys  # still the directory's, not three hub ids
    for spelling in spellings:
        assert store.load(spelling) is model
    assert "no longer on disk" in models.describe_source(str(served) + "/")  # not "hub model ..."


def test_the_started_model_is_allowed_however_it_is_spelt(tmp_path, tiny_checkpoint, monkeypatch):
    import shutil

    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    shutil.copytree(tiny_checkpoint, outside / "m")
    monkeypatch.setenv(models.ENV_MODEL_ROOTS, str(root))
    monkeypatch.setenv(models.ENV_MODEL, str(outside / "m"))
    assert models.refusal(str(outside / "m") + "/") is None
    assert models.refusal(str(outside / "m" / ".." / "m")) is None
    assert models.refusal(str(outside)) is not None  # its parent is no exemption


def test_a_directory_missing_for_a_moment_loads_as_soon_as_it_is_there(tmp_path, tiny_checkpoint):
    """A student asks while the lecturer replaces a model (rm -rf, then cp -r): told it is missing, but the
    next ask after the copy loads it, without waiting out the two minutes a hub failure is remembered."""
    import shutil

    store = models.ModelStore()
    swap = tmp_path / "swap"
    with pytest.raises(bert_core.ModelLoadError, match="no such directory|not a valid hub id"):
        store.load(str(swap))
    with pytest.raises(bert_core.ModelLoadError):  # still missing: remembered, not looked for on every rerun
        store.load(str(swap))
    shutil.copytree(tiny_checkpoint, swap)
    assert store.load(str(swap)).analyze("the cat").tokens[0] == "[CLS]"


def test_a_passing_load_failure_is_not_remembered_against_the_model(
    tmp_path, tiny_checkpoint, monkeypatch, caplog
):
    """A load that failed for a reason of the moment (memory, a file being copied in) is told to that session
    only; the next one loads the model. The loader's own verdict on a checkpoint is remembered."""
    import bert_core
    from app import models

    real = bert_core.load_pretrained
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("not now")
        return real(*args, **kwargs)

    monkeypatch.setattr(bert_core, "load_pretrained", flaky)
    store = models.ModelStore()
    with (
        caplog.at_level("ERROR", logger="bertscope"),
        pytest.raises(bert_core.ModelLoadError, match="ran out of memory loading"),
    ):
        store.load(str(tiny_checkpoint))
    # The page's one line cannot tell a bad moment from a fault in the code: the server's log has the traceback.
    logged = [r for r in caplog.records if r.name == "bertscope" and r.exc_info]
    assert logged and "failed unexpectedly" in logged[0].getMessage() and logged[0].exc_info[0] is MemoryError
    assert store.load(str(tiny_checkpoint)).analyze("the cat").tokens[0] == "[CLS]"
    assert models.refusal("bad\x00name") and "control characters" in models.refusal("bad\x00name")
    assert "control characters" in models.refusal(
        "@demo\x00"
    )  # not quoted back as a bundled name, NUL and all


def test_a_model_directory_rewritten_while_serving(tmp_path, tiny_checkpoint, monkeypatch):
    """Rewritten with files that do not load: the session that had the model keeps its copy (with a notice),
    a new session is told what is wrong now. Rewritten with good files: they are read again, and their results
    are cached under a new key, never mixed with the old weights'."""
    import json
    import shutil

    import streamlit as st

    from app import models

    served = tmp_path / "served"
    shutil.copytree(tiny_checkpoint, served)
    st.cache_resource.clear()
    try:
        first = models.load_model(str(served))
        assert first.notice is None and first.model.analyze("the cat").tokens[0] == "[CLS]"

        config = served / "config.json"
        config.write_text("{ this is not json")
        kept = models.load_model(str(served), held=first)  # the session that had it
        assert kept.model is first.model and kept.key == first.key
        assert "changed on disk" in kept.notice and "keeps the copy" in kept.notice
        assert kept.model.analyze("the bank").tokens[0] == "[CLS]"
        with pytest.raises(models.ModelUnavailable, match="changed on disk"):
            models.load_model(str(served))  # a new session

        good = json.loads((tiny_checkpoint / "config.json").read_text())
        good["hidden_dropout_prob"] = 0.2  # different files, still a valid checkpoint
        config.write_text(json.dumps(good))
        fresh = models.load_model(str(served), held=first)
        assert fresh.notice is None and fresh.model is not first.model and fresh.key != first.key
        assert models.load_model(str(served)).model is fresh.model  # everyone gets the new one
    finally:
        st.cache_resource.clear()


def test_a_session_keeping_its_copy_does_not_reread_a_rewritten_directory_on_every_rerun(
    tmp_path, tiny_checkpoint, monkeypatch
):
    """The directory is rewritten and its re-read fails for a reason of the moment (not the loader's verdict):
    the session holding the old copy keeps it and is not made to re-read the checkpoint on each of its reruns
    until the files change again or the retry time is up; a session without a copy still tries every time."""
    import json
    import shutil

    import streamlit as st

    served = tmp_path / "served"
    shutil.copytree(tiny_checkpoint, served)
    real, calls, broken = bert_core.load_pretrained, [], [False]

    def loader(*args, **kwargs):
        calls.append(1)
        if broken[0]:
            raise OSError("a file is still being copied in")
        return real(*args, **kwargs)

    monkeypatch.setattr(bert_core, "load_pretrained", loader)
    st.cache_resource.clear()
    try:
        first = models.load_model(str(served))
        good = json.loads((tiny_checkpoint / "config.json").read_text())
        good["hidden_dropout_prob"] = 0.3
        (served / "config.json").write_text(json.dumps(good))
        broken[0] = True
        kept = models.load_model(str(served), held=first)
        assert kept.model is first.model and "still being copied" in kept.notice and len(calls) == 2
        for _ in range(3):  # the holder's reruns
            assert models.load_model(str(served), held=first).model is first.model
        assert len(calls) == 2
        with pytest.raises(models.ModelUnavailable, match="still being copied"):
            models.load_model(str(served))  # a new session is not held back: it tries, and is told
        assert len(calls) == 3
        models.model_store().retry_held_s = 0.0  # the retry time is up: the holder tries again
        assert models.load_model(str(served), held=first).model is first.model and len(calls) == 4
        models.model_store().retry_held_s = 60.0
        broken[0] = False
        good["hidden_dropout_prob"] = 0.2  # the copy is finished: new files, read at once
        (served / "config.json").write_text(json.dumps(good))
        fresh = models.load_model(str(served), held=first)
        assert fresh.notice is None and fresh.model is not first.model and len(calls) == 5
    finally:
        st.cache_resource.clear()


def test_the_same_files_read_again_keep_their_results_key(tmp_path, load_calls):
    """A model pushed out of memory and asked for again: its files have not changed, so the results cached for
    it stay valid and in use (a new key would orphan them); rewritten files get a new key."""
    import gc
    import json

    a, b = make_checkpoint(tmp_path / "a", "model"), make_checkpoint(tmp_path / "b", "model")
    store = models.ModelStore(capacity=1)
    key = models.loaded_key(str(a))
    model = store.load(str(a))
    before = store.result_key(key, model)
    del model
    store.load(str(b))
    gc.collect()  # nobody holds a's model: asking again reads the files again
    model = store.load(str(a))
    assert len(load_calls) == 3 and store.result_key(key, model) == before
    config = json.loads((a / "config.json").read_text())
    config["hidden_dropout_prob"] = 0.3
    (a / "config.json").write_text(json.dumps(config))
    model = store.load(str(a))
    assert len(load_calls) == 4 and store.result_key(key, model) != before


def test_the_sidebar_shows_the_loading_box_when_a_rewritten_directory_is_read_again(
    make_app, tmp_path, tiny_checkpoint
):
    import json
    import shutil

    served = tmp_path / "served"
    shutil.copytree(tiny_checkpoint, served)

    def loading_boxes(at) -> list[str]:
        return [box.label for box in at.sidebar.status]

    at = make_app(model=str(served))
    assert loading_boxes(at) == ["Model loaded"]  # the first load
    at.run()
    assert loading_boxes(at) == []  # nothing to load on a rerun
    config = json.loads((served / "config.json").read_text())
    config["hidden_dropout_prob"] = 0.3
    (served / "config.json").write_text(json.dumps(config))
    at.run()
    assert loading_boxes(at) == ["Model loaded"] and not at.exception  # read again, and it said so


@pytest.mark.parametrize(
    "typed",
    [
        "/srv/" + "x" * 300,  # a path part longer than the file system allows: OSError from every stat
        "~nosuchuser-bertscope/model",  # `~user` of no user: RuntimeError from expanduser
        "~x\x00/y",  # a NUL: ValueError from every path call
    ],
)
def test_a_model_name_no_path_call_can_take_is_an_error_message_not_a_crash(make_app, monkeypatch, typed):
    """The model box is bound to the URL: a name the file system refuses must give the sidebar's message (and
    a shared link with it must too), never a traceback with the server's paths."""
    assert models.model_key(typed) == typed.strip()
    assert models.describe_source(typed)
    with pytest.raises(models.ModelUnavailable):
        models.load_model(typed)
    with pytest.raises(bert_core.ModelLoadError):
        bert_core.load_pretrained(typed)
    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", "/srv/models")
    assert models.refusal(typed)
    at = make_app(model=typed)  # make_app asserts the run raised nothing
    assert at.sidebar.error


def test_the_demo_fallback_uses_the_rewritten_demo_models_results_key(
    tmp_path, tiny_checkpoint, monkeypatch, empty_hub_cache
):
    """bert-base-uncased can't be had, so the demo model runs instead. When the demo directory is rewritten
    (`bertscope pretrain --out assets/demo-model` saving a checkpoint), the fallback must use the new weights'
    results key, the same as @demo picked by name, or it would be served the old weights' cached analyses."""
    import json
    import shutil

    import streamlit as st

    demo = tmp_path / "demo"
    shutil.copytree(tiny_checkpoint, demo)
    monkeypatch.setattr(models, "DEMO_MODEL_DIR", demo)
    monkeypatch.setattr(bundled, "DEMO_MODEL_DIR", demo)  # where source_path reads @demo
    monkeypatch.delenv("BERTSCOPE_MODEL", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    st.cache_resource.clear()
    try:
        before = models.load_model(models.DEFAULT_HUB_MODEL)
        assert before.source == models.DEMO_SOURCE and before.notice
        assert before.key == models.load_model(models.DEMO_SOURCE).key
        config = json.loads((demo / "config.json").read_text())
        config["hidden_dropout_prob"] = 0.2  # new files, still a valid checkpoint
        (demo / "config.json").write_text(json.dumps(config))
        picked = models.load_model(models.DEMO_SOURCE)
        assert picked.key != before.key
        assert models.load_model(models.DEFAULT_HUB_MODEL).key == picked.key
    finally:
        st.cache_resource.clear()


def test_a_directory_named_like_the_exact_mode_key_is_watched_as_itself(
    tmp_path, tiny_checkpoint, monkeypatch
):
    import json
    import shutil

    monkeypatch.setenv("BERTSCOPE_EXACT", "0")
    odd = tmp_path / "m [exact]"
    shutil.copytree(tiny_checkpoint, odd)
    (tmp_path / "m").mkdir()  # a neighbour that the suffix, taken off, would name
    store = models.ModelStore()
    store.load(str(odd))
    key = models.loaded_key(str(odd))
    assert not store.changed_on_disk(key)  # it was just read: nothing changed
    config = json.loads((odd / "config.json").read_text())
    config["hidden_dropout_prob"] = 0.2
    (odd / "config.json").write_text(json.dumps(config))
    assert store.changed_on_disk(key)


def test_older_copies_never_share_a_results_key(tmp_path, tiny_checkpoint):
    """Each older copy a session still holds gets its own key; a later copy must not get a freed one's (whose
    cached results may still be in the cache), as an id() could once that copy is freed."""
    import gc

    store = models.ModelStore()
    current = store.load(str(tiny_checkpoint))
    key = models.loaded_key(str(tiny_checkpoint))
    seen = set()
    for _ in range(5):
        old = bert_core.load_pretrained(str(tiny_checkpoint))  # not the store's: an older copy
        tag = store.result_key(key, old)
        assert tag != store.result_key(key, current) and tag == store.result_key(key, old)
        seen.add(tag)
        del old
        gc.collect()
    assert len(seen) == 5


def test_load_messages_show_the_servers_home_as_a_tilde(monkeypatch):
    """A hub id that can't be had names the local Hugging Face cache: on a shared server the students read
    that message, and the lecturer's home directory is not theirs to see."""
    from pathlib import Path

    cache = Path.home() / ".cache" / "huggingface" / "hub"

    def unreachable(source, **kwargs):
        raise bert_core.ModelLoadError(f"cannot load {source!r}: not in the local cache ({cache})")

    monkeypatch.setattr(bert_core, "load_pretrained", unreachable)
    monkeypatch.setenv("BERTSCOPE_MODEL", "")
    with pytest.raises(models.ModelUnavailable) as caught:
        models.load_model("someone/not-cached")
    assert str(Path.home()) not in caught.value.reason
    assert "(~/.cache/huggingface/hub)" in caught.value.reason


def test_a_remembered_failure_is_told_in_the_resolved_path_not_another_sessions_spelling(
    tmp_path, monkeypatch
):
    """A student's `/tmp/../usr/../etc` was what the next student, asking for `/etc`, read in their message."""
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    spelled = f"{empty}/sub/../sub/.."
    store = models.ModelStore()
    with pytest.raises(bert_core.ModelLoadError) as first:
        store.load(spelled)
    with pytest.raises(bert_core.ModelLoadError) as second:
        store.load(str(empty))
    for told in (str(first.value), str(second.value)):
        assert "sub/.." not in told and str(empty.resolve()) in told, told


def test_messages_keep_a_path_as_typed_and_hide_the_home_directory_itself(monkeypatch, tmp_path):
    home = tmp_path / "lecturer"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert models._without_home(f"no config.json in {home}") == "no config.json in ~"
    assert models._without_home(f"no config.json in {home}.") == "no config.json in ~."
    assert models._without_home(f"{home}/models/x: bad") == "~/models/x: bad"
    assert models._without_home(f"{home}ed is another") == f"{home}ed is another"
    typed = "/no/such//dir/[x](http://y)"
    with pytest.raises(bert_core.ModelLoadError) as told:
        bert_core.load_pretrained(typed)
    assert typed in str(told.value)  # a Path folded "//" into "/"


def test_the_place_is_kept_for_the_model_the_room_really_opens_on(monkeypatch):
    """Under --shared without bert-base in the cache, the room opens on the demo model; the place was kept for
    bert-base, which never loads there, so every other model had one place and Compare failed for everyone."""
    monkeypatch.delenv("BERTSCOPE_MODEL", raising=False)
    monkeypatch.setenv("BERTSCOPE_ALLOW_HUB", "0")
    monkeypatch.setattr(models, "is_in_hub_cache", lambda repo_id: False)
    assert models.room_model_source() == models.DEMO_SOURCE
    monkeypatch.setattr(models, "is_in_hub_cache", lambda repo_id: True)
    assert models.room_model_source() == models.DEFAULT_HUB_MODEL
    monkeypatch.setenv("BERTSCOPE_MODEL", "@nope")  # refused to every session: no place for it
    assert models.refusal("@nope") and models.room_model_source() is None


def test_the_home_directory_is_hidden_only_where_it_is_the_home_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", "/home/lecturer")
    assert models._without_home("no config.json in /home/lecturer") == "no config.json in ~"
    assert models._without_home("in /srv/home/lecturer/models/x") == "in /srv/home/lecturer/models/x"


def test_a_model_name_typed_or_linked_with_spaces_is_kept_without_them(make_app):
    """The picker's help says to type a name with a leading space past Streamlit's box: the link then held
    "model=+%40demo-qa", and the box listed " @demo-qa" beside "@demo-qa". Both boxes keep the bare name
    from the run after the one that received it (a typed name's, or a link's first)."""
    from app import inputs

    second = "model2"  # Compare's box (app/views/compare.py, a page script: importing it would run it)
    at = make_app("views/compare.py", model=" @demo-qa ", **{second: " @demo "})
    assert at.session_state[models.KEY_HOLD].active.source.strip() == "@demo-qa"
    at.run()  # the next run, whatever the user did
    assert not at.exception
    assert at.session_state[inputs.KEY_MODEL] == "@demo-qa" and at.session_state[second] == "@demo"
    assert at.session_state[models.KEY_HOLD].active.source == "@demo-qa"
    for key in (inputs.KEY_MODEL, second):
        options = at.selectbox(key=key).options
        assert not [o for o in options if o != o.strip()], options


def test_a_model_path_typed_or_linked_in_quotes_is_read_without_them(make_app, tmp_path, monkeypatch):
    """A path copied with its quotes ("Copy as path", a shell's) was refused as outside the allowed roots."""
    from app import inputs

    one = make_checkpoint(tmp_path / "roots" / "one", "mlm")
    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", str(tmp_path / "roots"))
    at = make_app("views/compare.py", model=f"'{one}'", model2=f' "{one}" ')
    assert not at.error, [e.value for e in at.error]
    assert at.session_state[models.KEY_HOLD].active.source == str(one)
    at.run()
    assert at.session_state[inputs.KEY_MODEL] == str(one) and at.session_state["model2"] == str(one)
    assert inputs.unquoted("'it's'") == "it's" and inputs.unquoted("'half") == "'half"


def test_the_model_card_counts_one_layer_and_one_head_in_the_singular(make_app, tmp_path, monkeypatch):
    """A lab's 1-layer model read "1 layers"."""
    from app import ui

    one = make_checkpoint(tmp_path / "one", "mlm", num_hidden_layers=1, num_attention_heads=1)
    card = " ".join(c.value for c in make_app(model=str(one)).sidebar.caption)
    assert "1 layer ·" in card and "1 head ·" in card
    many = types.SimpleNamespace(num_layers=12, num_heads=12, layer_weight_sets=1)
    assert (
        ui.layers_text(many) == "12 layers sharing one set of weights" and ui.heads_text(many) == "12 heads"
    )


def test_short_names_tell_two_models_apart():
    """Compare's titles name their model: clipped to one length, two checkpoints of one run read alike."""
    assert models.short_names(["@demo", "assets/demo-model"]) == ["@demo", "demo-model"]
    assert models.short_names(["/runs/a/checkpoint-500", "/runs/b/checkpoint-500/"]) == [
        "a/checkpoint-500",
        "b/checkpoint-500",
    ]
    sst, squad = models.short_names(
        ["distilbert-base-uncased-finetuned-sst-2-english", "distilbert-base-uncased-distilled-squad"]
    )
    assert sst != squad and len(sst) <= 28 and sst.endswith("sst-2-english") and squad.endswith("squad")
    assert models.short_names(["@demo", "@demo"]) == ["@demo", "@demo"]  # one model on both sides
    cased = [
        "distilbert-base-uncased-finetuned-sst-2-english",
        "distilbert-base-cased-finetuned-sst-2-english",
    ]
    uncased_name, cased_name = models.short_names(cased)  # the middle cut took what differs: cut around it
    assert (
        "uncased" in uncased_name
        and "-cased" in cased_name
        and max(map(len, (uncased_name, cased_name))) <= 28
    )
    # names that differ only in length, or where they differ past the first place two of three part, stay apart
    for sources in (
        ["x" * 30, "x" * 31],
        ["a" * 20 + "b" * 30 + "c", "a" * 20 + "b" * 30 + "d", "a" * 20 + "z"],
    ):
        names = models.short_names(sources)
        assert len(set(names)) == len(sources), names


def test_the_picker_lists_only_cached_models_a_load_can_read(monkeypatch, tmp_path):
    """Any cached repo with a config.json was listed, GPT-2 and a half-downloaded snapshot among them, and after
    a failed load they all stood under "Models that can be loaded here"."""
    import json

    import huggingface_hub.constants

    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))

    def cached(repo_id: str, model_type: str | None, files: tuple[str, ...]) -> None:
        repo = cache / ("models--" + repo_id.replace("/", "--"))
        snapshot = repo / "snapshots" / ("1" * 40)
        snapshot.mkdir(parents=True)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("1" * 40)
        (snapshot / "config.json").write_text(json.dumps({"model_type": model_type} if model_type else {}))
        for name in files:
            (snapshot / name).write_text("x")

    whole = ("model.safetensors", "vocab.txt")
    cached("org/bert-tiny", "bert", whole)
    cached("org/no-type", None, whole)  # the core says what it finds
    cached("org/gpt2", "gpt2", ("model.safetensors", "vocab.json", "merges.txt"))
    cached("org/tokenizer-only", "bert", ("vocab.txt",))
    cached("org/roberta-no-merges", "roberta", ("model.safetensors", "vocab.json"))
    models.cached_hub_models.clear()  # (cached for two minutes)
    assert models.cached_hub_models() == ["org/bert-tiny", "org/no-type"]
    models.cached_hub_models.clear()


def test_the_card_names_the_hub_snapshot_and_the_weights_file_read(
    make_app, tmp_path, tiny_checkpoint, empty_hub_cache
):
    """Two machines of one room can hold different snapshots of one hub id, and a directory with both a
    safetensors file and a .bin looked the same as one with either: the card says which was read."""
    import shutil

    from tests.bert_core.test_loading import _populate_cache

    _populate_cache(empty_hub_cache, "someone/tiny-bert", tiny_checkpoint)
    at = make_app(model="someone/tiny-bert")
    captions = " ".join(c.value for c in at.sidebar.caption).replace("\\", "")
    assert "hub model someone/tiny-bert · snapshot 0123456789 · weights from model.safetensors" in captions

    pickled = tmp_path / "pickled"
    shutil.copytree(tiny_checkpoint, pickled)
    state = bert_core.checkpoints.read_state_dict(pickled)
    (pickled / "model.safetensors").unlink()
    torch.save(state, pickled / "pytorch_model.bin")
    at = make_app(model=str(pickled))
    captions = " ".join(c.value for c in at.sidebar.caption).replace("\\", "")
    assert f"local directory {pickled} · weights from pytorch_model.bin (read weights-only" in captions
    assert "snapshot" not in captions
    at = make_app(model="@demo")  # the bundled models' own files are no news
    assert "weights from" not in " ".join(c.value for c in at.sidebar.caption)
    # but a file stored as float16 is: transformers computes it as stored, and its numbers differ from these
    at = make_app(model="@demo-qa")
    said = " ".join(c.value for c in at.sidebar.caption).replace("\\", "")
    assert "fine-tuned here for question answering (bundled) · stored as float16, computed in float32" in said
    assert bert_core.load_pretrained(tiny_checkpoint).info.weights_dtype is None


def test_a_name_the_box_cut_to_its_end_is_offered_whole(make_app, monkeypatch):
    """Streamlit's box empties a name being typed once it equals the current model's: "@demo-qa" typed over
    @demo arrived as "-qa", which failed as a model of its own in front of a room."""
    listed = models.model_options
    # what the box sends, listed so that AppTest's box (which takes only listed names) can send it
    monkeypatch.setattr(models, "model_options", lambda current: [*listed(current), "-qa", "-nothing"])
    at = make_app(model="@demo")
    at.sidebar.selectbox(key="model").set_value("-qa").run()
    assert at.sidebar.error
    (meant,) = [b for b in at.sidebar.button if b.key == "use_meant_model"]
    assert meant.label.replace("\\", "") == "Did you mean @demo-qa?"
    meant.click().run()
    assert not at.sidebar.error and "fine-tuned here for question answering" in " ".join(
        c.value for c in at.sidebar.caption
    ).replace("\\", "")
    at.sidebar.selectbox(key="model").set_value("@demo").run()
    at.sidebar.selectbox(key="model").set_value("-nothing").run()  # no model of that name either way
    assert at.sidebar.error and not [b for b in at.sidebar.button if b.key == "use_meant_model"]


def test_a_slip_of_the_keys_in_a_name_that_loads_here_is_offered(make_app, monkeypatch):
    """Offline, "bert-base-uncsed" or "@dmeo" failed with "not found", and the room had to spot the typo."""
    listed = models.model_options
    monkeypatch.setattr(models, "model_options", lambda current: [*listed(current), "@dmeo", "@Demo-QA"])
    at = make_app(model="@demo-qa")
    for typed, meant in (("@dmeo", "@demo"), ("@Demo-QA", "@demo-qa")):
        at.sidebar.selectbox(key="model").set_value(typed).run()
        assert at.sidebar.error
        (button,) = [b for b in at.sidebar.button if b.key == "use_meant_model"]
        assert button.label.replace("\\", "") == f"Did you mean {meant}?"
    button.click().run()
    assert not at.sidebar.error and at.sidebar.selectbox(key="model").value == "@demo-qa"
    monkeypatch.setattr(models, "cached_hub_models", lambda: ["bert-base-uncased", "albert-base-v2"])
    assert models.meant_name(None, "bert-base-uncsed") == "bert-base-uncased"  # a letter left out
    assert models.meant_name(None, "bert-base-unacsed") == "bert-base-uncased"  # two swapped
    assert models.meant_name(None, "Bert-Base-Uncased") == "bert-base-uncased"
    # other models, however close their names: never offered as what was meant
    for other in ("bert-base-cased", "bert-large-uncased", "bert-base-uncased", "roberta-base", ""):
        assert models.meant_name(None, other) is None, other
    # two names one slip away: neither is offered
    monkeypatch.setattr(models, "cached_hub_models", lambda: ["albert-base-v1", "albert-base-v2"])
    assert models.meant_name(None, "albert-base-v3") is None


def test_a_checkpoint_a_lab_saved_on_the_way_is_said_to_be_unfinished(make_app, tmp_path, tiny_checkpoint):
    """A pre-training run stopped at step 107 of 400, or a fine-tune after epoch 1 of 3, was drawn on every page
    as if it were the run's result: only its JSON record said otherwise."""
    import json
    import shutil

    run = tmp_path / "run"
    shutil.copytree(tiny_checkpoint, run)
    record = {"step": 107, "final": False, "training_config": {"steps": 400}}
    (run / "pretraining.json").write_text(json.dumps(record))
    assert bert_core.load_pretrained(run).info.unfinished == "pre-training step 107 of 400"
    said = " ".join(c.value for c in make_app(model=str(run)).sidebar.caption).replace("\\", "")
    assert "An unfinished run: its lab saved this checkpoint at pre-training step 107 of 400" in said
    # a fine-tune's own record comes first: its encoder's pretraining.json is copied beside it
    (run / "finetuning.json").write_text(json.dumps({"epoch": 1, "final": False, "config": {"epochs": 3}}))
    assert bert_core.load_pretrained(run).info.unfinished == "fine-tuning epoch 1 of 3"
    # a record of another shape is no record, and never a load error ("config" a list read .get off it)
    for done in (
        {"epoch": 3, "final": True, "config": {"epochs": 3}},
        "not json",
        {"epoch": 1, "final": False, "config": [3]},
    ):
        (run / "finetuning.json").write_text(json.dumps(done) if isinstance(done, dict) else done)
        assert bert_core.load_pretrained(run).info.unfinished == "pre-training step 107 of 400"
    (run / "pretraining.json").write_text(json.dumps({**record, "step": 400, "final": True}))
    assert bert_core.load_pretrained(run).info.unfinished is None
    assert "unfinished" not in " ".join(c.value for c in make_app(model=str(run)).sidebar.caption)


def test_a_cut_name_is_never_completed_to_a_directory_outside_the_roots(tmp_path, monkeypatch):
    """Offered, it told a shared server's room which paths exist outside the allowed roots."""
    (tmp_path / "allowed" / "a").mkdir(parents=True)
    (tmp_path / "allowed" / "ab").mkdir()
    (tmp_path / "outside").mkdir()
    monkeypatch.setenv("BERTSCOPE_MODEL_ROOTS", str(tmp_path / "allowed"))
    previous = str(tmp_path / "allowed" / "a")
    assert models.meant_name(previous, "b") == previous + "b"
    assert models.meant_name(previous, "/../../outside") is None
    monkeypatch.delenv("BERTSCOPE_MODEL_ROOTS")
    assert models.meant_name(previous, "/../../outside") == previous + "/../../outside"
