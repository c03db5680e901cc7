"""The shared server's limits (app/server.py and its use in app/cache.py): forward passes admitted a few at a
time, first come first served, with each waiter told its place; every result cached once within a byte
budget; identical requests computed once; and the faults a shared server must survive — a session stopped
while it waits or computes, a computation that fails, a pass that runs out of memory."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time

import numpy as np
import pytest
import streamlit as st
import torch
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

import bert_core
from app import cache, cpus, models, server


@pytest.fixture
def fresh(monkeypatch):
    """Caches cleared (so server.admission()/results() read the settings a test sets) before and after."""
    st.cache_resource.clear()
    st.cache_data.clear()
    monkeypatch.setattr(server, "WAIT_POLL_S", 0.05)
    yield
    st.cache_resource.clear()
    st.cache_data.clear()


def wait_until(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.01)


def run_threads(targets):
    threads = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in threads:
        t.start()
    return threads


def holding(gate: server.Admission) -> tuple[list[threading.Thread], threading.Event]:
    """A thread holding the gate's one slot until the returned event is set."""
    release = threading.Event()

    def hold():
        with gate.slot():
            release.wait(10)

    threads = run_threads([hold])
    wait_until(lambda: gate.running == 1)
    return threads, release


def nothing_frozen() -> int:
    """Unfreeze the heap and return what the permanent generation holds with nothing frozen: 0 on Python 3.11
    and 3.13, but on 3.12 a full collection moves the interpreter's immortal objects there (a few hundred), so
    `gc.get_freeze_count()` is compared with this, not with 0."""
    import gc

    gc.unfreeze()
    gc.collect()
    return gc.get_freeze_count()


# -- admission ------------------------------------------------------------------------------------------


def test_admission_runs_at_most_its_limit_first_come_first_served_and_tells_each_its_place(monkeypatch):
    monkeypatch.setattr(server, "WAIT_POLL_S", 0.05)
    gate = server.Admission(1)
    order: list[int] = []
    places: dict[int, list[int]] = {n: [] for n in range(3)}
    running, peak = [0], [0]
    lock = threading.Lock()

    def waiter(n):
        def run():
            with gate.slot(lambda place: places[n].append(place)):
                with lock:
                    running[0] += 1
                    peak[0] = max(peak[0], running[0])
                    order.append(n)
                time.sleep(0.02)
                with lock:
                    running[0] -= 1

        return run

    threads, release = holding(gate)
    for n in range(3):  # one at a time, so that the line's order is known
        threads += run_threads([waiter(n)])
        wait_until(lambda n=n: gate.queued == n + 1)
    wait_until(lambda: all(places[n] for n in range(3)))
    assert [places[n][0] for n in range(3)] == [1, 2, 3]  # "1st in line", "2nd", "3rd"
    assert gate.ahead() == 4  # three in line and the one running
    release.set()
    for t in threads:
        t.join(10)
    assert order == [0, 1, 2] and peak[0] == 1
    assert places[2][-1] < 3  # the last one was told again as it moved up
    assert gate.running == 0 and gate.queued == 0 and gate.ahead() == 0


def test_a_slot_freed_while_the_next_in_line_is_being_told_is_taken_at_once(monkeypatch):
    # A long poll: were the wake-up lost while the page was being told, the waiter would sleep through it.
    monkeypatch.setattr(server, "WAIT_POLL_S", 5.0)
    gate = server.Admission(1)
    threads, release = holding(gate)
    told_at, admitted_at = [], []

    def told(place):
        if not told_at:
            release.set()  # the slot is freed (and its notify sent) while this waiter is off drawing its place
            wait_until(lambda: gate.running == 0)
        told_at.append(time.monotonic())

    def waiter():
        with gate.slot(told):
            admitted_at.append(time.monotonic())

    threads += run_threads([waiter])
    for t in threads:
        t.join(10)
    assert admitted_at and admitted_at[0] - told_at[0] < 1.0


def test_a_limit_of_two_runs_two_at_once():
    gate = server.Admission(2)
    inside, peak, lock = [0], [0], threading.Lock()

    def work():
        with gate.slot():
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            time.sleep(0.05)
            with lock:
                inside[0] -= 1

    for t in run_threads([work] * 6):
        t.join(10)
    assert peak[0] == 2


def test_a_waiter_that_is_stopped_gives_its_place_up(monkeypatch):
    """A closed tab: Streamlit raises StopException at the session's next page update, which is the place
    note redrawn while it waits."""
    monkeypatch.setattr(server, "WAIT_POLL_S", 0.05)
    gate = server.Admission(1)
    stopped = []

    def stop(place):
        raise StopException()

    def quitter():
        try:
            with gate.slot(stop):
                raise AssertionError("admitted after being stopped")
        except StopException:
            stopped.append(True)

    threads, release = holding(gate)
    for t in run_threads([quitter]):
        t.join(10)
    assert stopped == [True] and gate.queued == 0
    release.set()
    threads[0].join(10)
    assert gate.running == 0
    with gate.slot():  # and the slot is free for the next one
        assert gate.running == 1


def test_a_failed_or_abandoned_request_gives_its_slot_back_and_out_of_memory_is_a_message():
    gate = server.Admission(1)
    with pytest.raises(ValueError):
        with gate.slot():
            raise ValueError("the session went away")
    with pytest.raises(StopException):
        with gate.slot():
            raise StopException()
    with gate.slot():  # would block forever if the slot were still held
        pass
    with pytest.raises(bert_core.InputError, match="out of memory"):
        with gate.slot():
            raise RuntimeError("CUDA out of memory. Tried to allocate ...")
    with pytest.raises(bert_core.InputError, match="out of memory"):
        with gate.slot():
            raise MemoryError
    with pytest.raises(bert_core.InputError, match="out of memory"):  # torch's own CPU allocator's words
        with gate.slot():
            torch.empty(2**60, dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="shape"):  # other errors are not disguised as memory
        with gate.slot():
            raise RuntimeError("shape mismatch")
    assert gate.running == 0 and gate.ahead() == 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_pass_out_of_gpu_memory_is_a_message_and_leaves_the_gpus_memory_as_it_found_it(tmp_path):
    """The GPU replica (`--device cuda`): a real CUDA out-of-memory error, raised by torch's allocator."""
    import gc

    from tests.conftest import make_checkpoint

    sizes = dict(hidden_size=256, num_hidden_layers=4, intermediate_size=512, max_position_embeddings=512)
    model = bert_core.load_pretrained(make_checkpoint(tmp_path / "m", "mlm", **sizes), device="cuda")
    text = " ".join(["the bank of the river"] * 90)  # 452 pieces: 13 MB of attention maps alone
    gate = server.Admission(1)
    model.analyze("the bank")  # CUDA's lazy set-up (cuBLAS's workspace) is allocated once, at the first pass
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    held = torch.cuda.memory_allocated()
    total = torch.cuda.get_device_properties(0).total_memory
    gc.disable()  # freed at once, not by a collection that happens to run
    # The allocator refuses anything past what the model already holds plus 4 MB.
    torch.cuda.set_per_process_memory_fraction((torch.cuda.memory_reserved() + 4 * 2**20) / total)
    try:
        with pytest.raises(bert_core.InputError, match="out of memory") as message:
            with gate.slot():
                model.analyze(text)
        # While the page still shows the message, nothing of the failed pass is kept on the GPU.
        assert message.value is not None and torch.cuda.memory_allocated() == held
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        gc.enable()
    with gate.slot():  # the slot came back, and the same input runs once memory allows
        assert model.analyze(text).attentions.shape == (4, 4, 452, 452)
    assert gate.running == 0


def test_the_default_limit_is_one_pass_per_two_cores_and_the_env_var_sets_it(fresh, monkeypatch):
    monkeypatch.delenv(server.ENV_MAX_FORWARDS, raising=False)
    monkeypatch.setattr(server, "cores", lambda: 2)
    assert server.admission().limit == 1
    st.cache_resource.clear()
    monkeypatch.setattr(server, "cores", lambda: 16)
    assert server.admission().limit == 8
    st.cache_resource.clear()
    monkeypatch.setenv(server.ENV_MAX_FORWARDS, "3")
    assert server.admission().limit == 3


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"cpu.max": "200000 100000\n"}, 2),  # cgroup v2, docker run --cpus=2
        ({"cpu.max": "150000 100000\n"}, 2),  # 1.5 CPUs: rounded up
        ({"cpu.max": "max 100000\n"}, None),  # v2 without a quota
        ({"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3),  # cgroup v1
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({}, None),  # no cgroup files (not Linux, or not mounted)
    ],
)
def test_a_containers_cpu_quota_bounds_the_cores_the_server_sizes_itself_by(
    tmp_path, monkeypatch, files, expected
):
    """`docker run --cpus=2` on a 32-core host: the CPU set is still all 32, the quota is 2. The forward limit
    (cores // 2) and torch's threads follow the quota."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(cpus, "CGROUP", tmp_path)
    monkeypatch.setattr(cpus.os, "sched_getaffinity", lambda pid: set(range(32)))
    assert cpus.cores() == (expected or 32)


def test_bertscope_gives_torch_as_many_threads_as_the_quota_allows(tmp_path, monkeypatch):
    import sys

    from streamlit.web import cli as stcli

    from app import cli

    (tmp_path / "cpu.max").write_text("200000 100000\n")
    monkeypatch.setattr(cpus, "CGROUP", tmp_path)
    monkeypatch.setattr(cpus.os, "sched_getaffinity", lambda pid: set(range(32)))
    monkeypatch.setattr(stcli, "main", lambda: 0)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cli.main([])
    assert os.environ["OMP_NUM_THREADS"] == "2"
    monkeypatch.setenv("OMP_NUM_THREADS", "5")  # an operator's own setting wins
    cli.main([])
    assert os.environ["OMP_NUM_THREADS"] == "5"
    monkeypatch.delenv("OMP_NUM_THREADS")
    (tmp_path / "cpu.max").write_text("max 100000\n")  # no quota: torch's own choice stands
    cli.main([])
    assert "OMP_NUM_THREADS" not in os.environ


# -- the result cache -----------------------------------------------------------------------------------


def test_results_are_evicted_by_bytes_least_recent_first_and_the_budget_holds():
    mb = 1024 * 1024
    results = server.ResultCache(budget_bytes=3 * mb + 1024)  # room for three, keys counted too
    for n in range(5):
        results.get(n, lambda: np.zeros(mb, np.uint8))
        assert results.total <= 3 * mb + 1024  # within the budget
    assert 0 not in results and 4 in results
    results.get(2, lambda: pytest.fail("2 is cached"))  # a hit makes 2 the most recent...
    results.get(5, lambda: np.zeros(mb, np.uint8))
    assert 2 in results and 3 not in results  # ...so 3 went instead
    big = results.get("big", lambda: np.zeros(5 * mb, np.uint8))  # larger than the whole budget: kept alone
    assert len(results) == 1 and results.total < 5 * mb + 4096 and big.nbytes == 5 * mb
    results.get(("analysis", "x" * mb), lambda: 0)  # a key holding a pasted text counts too
    assert len(results) == 1 and results.total >= mb  # the 5 MB one made room for it


def test_nbytes_counts_the_arrays_of_an_analysis(tiny_model):
    analysis = tiny_model.analyze("the cat sat on the mat")
    assert server.nbytes(analysis) >= analysis.attentions.nbytes + analysis.hidden_states.nbytes > 0


def test_many_sessions_asking_at_once_for_one_input_compute_it_once(monkeypatch):
    monkeypatch.setattr(server, "WAIT_POLL_S", 0.01)
    results = server.ResultCache(budget_bytes=1 << 30)
    calls, got, waiting = [], [], set()
    started, finish = threading.Event(), threading.Event()

    def compute():
        calls.append(1)
        started.set()
        finish.wait(10)
        return np.arange(3)

    def ask():
        got.append(results.get("k", compute, waiting=lambda since: waiting.add(threading.get_ident())))

    threads = run_threads([ask for _ in range(8)])
    started.wait(10)
    wait_until(lambda: len(waiting) == 7)  # the others are waiting on the one computation now
    finish.set()
    for t in threads:
        t.join(10)
    assert len(calls) == 1 and len(got) == 8 and all(g is got[0] for g in got)
    assert results.computed == 1


def test_a_session_stopped_while_queued_leaves_its_computation_to_those_waiting_for_it(monkeypatch):
    monkeypatch.setattr(server, "WAIT_POLL_S", 0.05)
    results = server.ResultCache(budget_bytes=1 << 30)
    gate = server.Admission(1)
    calls, got, stopped = [], [], []
    closed = threading.Event()

    def stop(place):
        if closed.is_set():
            raise StopException()

    def first():  # queued behind the holder, then its browser tab is closed
        try:
            results.get(
                "k", lambda: calls.append("first") or 1, admitted=lambda since: gate.slot(stop, since)
            )
        except StopException:
            stopped.append(True)

    second_waits = threading.Event()

    def second():  # waits for the first one's result
        got.append(
            results.get(
                "k",
                lambda: calls.append("second") or 2,
                admitted=lambda since: gate.slot(None, since),
                waiting=lambda since: second_waits.set(),
            )
        )

    threads, release = holding(gate)
    threads += run_threads([first])
    wait_until(lambda: gate.queued == 1)
    threads += run_threads([second])
    assert second_waits.wait(10)  # the second is waiting for the first one's pass now
    closed.set()
    wait_until(lambda: stopped == [True])
    wait_until(lambda: gate.queued == 1)  # the second took the computation over, and queued for it
    release.set()
    for t in threads:
        t.join(10)
    assert calls == ["second"] and got == [2]
    assert gate.running == 0 and gate.queued == 0


def test_short_inputs_run_beside_a_long_one_in_the_express_lane_one_at_a_time(monkeypatch):
    """A long pass holds the one main slot and another long one waits for it; a short input does not queue
    behind them: it runs at once in the express lane. A second short one waits for that lane only (and is told
    it is next), and the long ones keep their order."""
    monkeypatch.setattr(server, "WAIT_POLL_S", 0.05)
    gate = server.Admission(1, express=1)
    order, places = [], {"long": [], "short 2": []}
    finish = {name: threading.Event() for name in ("short 1", "short 2")}

    def request(name, small):
        def run():
            with gate.slot(lambda place: places.setdefault(name, []).append(place), small=small):
                order.append(name)
                if name in finish:
                    finish[name].wait(10)

        return run

    threads, release = holding(gate)
    threads += run_threads([request("long", False)])
    wait_until(lambda: places["long"])
    threads += run_threads([request("short 1", True)])
    wait_until(lambda: order == ["short 1"])  # at once, past the long one waiting
    assert gate.running == 2 and gate.queued == 1
    threads += run_threads([request("short 2", True)])
    wait_until(lambda: places["short 2"])
    assert places["short 2"][0] == 1 and gate.running == 2  # next for the express lane, not third in line
    finish["short 1"].set()
    wait_until(lambda: order == ["short 1", "short 2"])
    assert "long" not in order  # still waiting for the main slot
    finish["short 2"].set()
    release.set()
    for t in threads:
        t.join(10)
    assert order == ["short 1", "short 2", "long"] and gate.running == 0 and gate.queued == 0


def test_a_short_input_takes_the_main_slot_when_the_express_lane_is_busy_and_none_without_a_lane():
    gate = server.Admission(1, express=1)
    inside = []
    with gate.slot(small=True):  # the express lane first, keeping the main slot for a long input
        assert gate.running == 1

        def second():  # the main slot is free and this one is first in line: it takes it
            with gate.slot(small=True):
                inside.append(gate.running)

        for t in run_threads([second]):
            t.join(5)
    assert inside == [2]
    closed = server.Admission(1, express=0)
    threads, release = holding(closed)
    got = []

    def short():
        with closed.slot(small=True):
            got.append(1)

    threads += run_threads([short])
    time.sleep(0.2)
    assert not got and closed.queued == 1  # no express lane: it waits its turn
    release.set()
    wait_until(lambda: got == [1])


def test_a_request_queued_with_an_earlier_arrival_goes_ahead_and_those_behind_are_told(monkeypatch):
    monkeypatch.setattr(server, "WAIT_POLL_S", 30.0)  # a long poll: the new place must be told on the insert
    gate = server.Admission(1)
    order, places = [], {"late": [], "early": []}

    def waiter(name, since=None):
        def run():
            with gate.slot(lambda place: places[name].append(place), since=since):
                order.append(name)

        return run

    threads, release = holding(gate)
    asked = time.monotonic()
    threads += run_threads([waiter("late")])
    wait_until(lambda: places["late"] == [1])
    threads += run_threads([waiter("early", since=asked - 1.0)])
    wait_until(lambda: places["early"] == [1] and places["late"] == [1, 2])
    release.set()
    for t in threads:
        t.join(10)
    assert order == ["early", "late"]


def test_a_session_taking_over_a_computation_keeps_the_stopped_sessions_place_in_line(monkeypatch):
    """The tab that asked first closes while queued; the session waiting on its result takes the computation
    over from the closed tab's place, ahead of a request that came after it, not at the back of the line."""
    monkeypatch.setattr(server, "WAIT_POLL_S", 0.05)
    results = server.ResultCache(budget_bytes=1 << 30)
    gate = server.Admission(1)
    ran, stopped = [], []
    closed = threading.Event()

    def stop(place):
        if closed.is_set():
            raise StopException()

    def admitted(on_wait=None):
        return lambda since: gate.slot(on_wait, since)

    def first():  # asks for "k", queues behind the holder, then its tab is closed
        try:
            results.get("k", lambda: ran.append("k by first"), admitted=admitted(stop))
        except StopException:
            stopped.append(True)

    threads, release = holding(gate)
    threads += run_threads([first])
    wait_until(lambda: gate.queued == 1)
    threads += run_threads([lambda: results.get("x", lambda: ran.append("x"), admitted=admitted())])
    wait_until(lambda: gate.queued == 2)  # another input, asked for after "k"
    second_waits = threading.Event()
    threads += run_threads(
        [
            lambda: results.get(
                "k",
                lambda: ran.append("k by second"),
                admitted=admitted(),
                waiting=lambda since: second_waits.set(),
            )
        ]
    )
    assert second_waits.wait(10)  # the second waits on the first one's pass now
    closed.set()
    wait_until(lambda: stopped == [True])
    wait_until(lambda: gate.queued == 2)  # the second queued for "k" in the first one's place
    release.set()
    for t in threads:
        t.join(10)
    assert ran == ["k by second", "x"]


def test_a_session_waiting_on_anothers_queued_computation_is_told_its_place(monkeypatch):
    """A student asks for the sentence another student's request is already queued for: the page says where
    that computation stands in the line (deploy.md promises a place), and that it runs once it does."""
    monkeypatch.setattr(server, "WAIT_POLL_S", 0.05)
    results = server.ResultCache(budget_bytes=1 << 30)
    gate = server.Admission(1)
    told = []

    def second():
        results.get(
            "k",
            lambda: pytest.fail("the second session computed it too"),
            admitted=lambda since: gate.slot(None, since),
            waiting=lambda since: told.append(cache._same_input(gate.place_of(since))),
        )

    threads, release = holding(gate)
    threads += run_threads(
        [lambda: results.get("k", lambda: 1, admitted=lambda since: gate.slot(None, since))]
    )
    wait_until(lambda: gate.queued == 1)
    threads += run_threads([second])
    wait_until(lambda: len(told) >= 2)
    assert "1st in line" in told[-1] and "this same input" in told[-1]
    release.set()
    for t in threads:
        t.join(10)
    assert gate.place_of(0.0) is None and results.get("k", lambda: 2) == 1


def test_a_session_stopped_mid_pass_leaves_the_result_to_the_others_and_the_slot_free(
    fresh, tiny_model, monkeypatch
):
    """The tab that started a long analysis closes while the pass runs: the pass finishes (torch does not
    look at Streamlit), its result is cached for the sessions waiting on the same input, and the slot is given
    back. Here the stop is delivered the way Streamlit delivers it: at the session's next page update."""
    monkeypatch.setenv(server.ENV_MAX_FORWARDS, "1")
    real = tiny_model.analyze
    calls, got, stopped = [], [], []
    inside = threading.Event()

    def slow(*args, **kwargs):
        calls.append(1)
        inside.set()
        time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(tiny_model, "analyze", slow)
    me = models.ActiveModel(tiny_model, "tiny", "tiny")

    def leaver():
        try:
            cache.analyze(me, "the bank of the river")
            raise StopException()  # the page update after the result: where a closed tab's script ends
        except StopException:
            stopped.append(True)

    threads = run_threads([leaver])
    inside.wait(10)
    threads += run_threads([lambda: got.append(cache.analyze(me, "the bank of the river")) for _ in range(3)])
    for t in threads:
        t.join(20)
    assert stopped == [True] and len(calls) == 1 and len(got) == 3
    assert server.admission().running == 0 and server.admission().queued == 0
    assert server.results().computed == 1


def test_an_error_reaches_every_waiter_and_is_not_cached(monkeypatch):
    monkeypatch.setattr(server, "WAIT_POLL_S", 0.01)
    results = server.ResultCache(budget_bytes=1 << 30)
    started, finish = threading.Event(), threading.Event()
    errors, waiting = [], set()

    def failing():
        started.set()
        finish.wait(10)
        raise bert_core.InputError("no")

    def ask():
        try:
            results.get("k", failing, waiting=lambda since: waiting.add(threading.get_ident()))
        except bert_core.InputError as exc:
            errors.append(exc)

    threads = run_threads([ask])
    started.wait(10)
    threads += run_threads([ask, ask])
    wait_until(lambda: len(waiting) == 2)  # both wait on the failing computation
    finish.set()
    for t in threads:
        t.join(10)
    assert len(errors) == 3
    assert results.get("k", lambda: 7) == 7  # tried again, not a remembered failure


def test_a_failed_pass_leaves_nothing_for_the_garbage_collector_to_free(monkeypatch):
    """The app turns Streamlit's collection after each run off, so a failed pass must not leave its frames
    (and their tensors) in a reference cycle: through the error kept for the waiters, or through the
    out-of-memory message's context."""
    import gc
    import weakref

    class Activations:
        pass

    alive = []

    def failing(kind):
        def compute():
            activations = Activations()  # stands for the pass's tensors, held by this frame
            alive.append(weakref.ref(activations))
            raise kind("the pass failed")

        return compute

    results, gate = server.ResultCache(budget_bytes=1 << 30), server.Admission(1)
    gc.disable()
    try:
        for kind, caught in [(ValueError, ValueError), (MemoryError, bert_core.InputError)]:
            try:
                results.get(kind.__name__, failing(kind), admitted=lambda since: gate.slot(None, since))
            except caught as exc:
                assert exc.__context__ is None or caught is ValueError
                if caught is not ValueError:  # the page shows the message: the failed pass is not kept by it
                    assert alive[-1]() is None, "the out-of-memory message keeps the failed pass's frame"
            assert alive[-1]() is None, f"a {kind.__name__} pass's frame is still alive"
    finally:
        gc.enable()


def test_a_result_that_cannot_be_stored_releases_its_waiters_and_is_tried_again(monkeypatch):
    results = server.ResultCache(budget_bytes=1 << 30)
    real = server.nbytes
    monkeypatch.setattr(server, "nbytes", lambda value: (_ for _ in ()).throw(MemoryError()))
    with pytest.raises(MemoryError):
        results.get("k", lambda: 1)
    monkeypatch.setattr(server, "nbytes", real)
    answer = []
    threads = run_threads([lambda: answer.append(results.get("k", lambda: 2))])
    threads[0].join(10)
    assert answer == [2]  # not a wait forever on the first request's flight


def test_each_pass_that_runs_is_logged_without_the_users_text(fresh, tiny_model, caplog):
    me = models.ActiveModel(tiny_model, "tiny", "tiny-key")
    with caplog.at_level(logging.INFO, logger="bertscope.passes"):
        server.log.propagate = True  # BERTSCOPE_LOG may have given it a handler of its own
        cache.analyze(me, "a secret sentence")
        cache.analyze(me, "a secret sentence")
        cache.predict_masks(me, "a secret [MASK]", None, 5)
    lines = [r.getMessage() for r in caplog.records if r.name == "bertscope.passes"]
    assert len(lines) == 2 and "analysis on tiny-key" in lines[0] and "masks on tiny-key" in lines[1]
    assert not any("secret" in line for line in lines)


# -- through app.cache ----------------------------------------------------------------------------------


def active(model):
    return models.ActiveModel(model, "tiny", "tiny")


def test_concurrent_identical_requests_run_one_forward_pass(fresh, tiny_model, monkeypatch):
    calls = []
    real = tiny_model.analyze

    def slow(*args, **kwargs):
        calls.append(args)
        time.sleep(0.2)  # long enough for every thread to arrive while it runs
        return real(*args, **kwargs)

    monkeypatch.setattr(tiny_model, "analyze", slow)
    got = []
    threads = run_threads(
        [lambda: got.append(cache.analyze(active(tiny_model), "the cat")) for _ in range(6)]
    )
    for t in threads:
        t.join(20)
    assert len(calls) == 1 and len(got) == 6 and all(g is got[0] for g in got)
    with pytest.raises(ValueError):  # shared by every session, so frozen
        got[0].attentions[0, 0, 0, 0, 0] = 1.0


def test_distinct_requests_queue_for_the_one_slot_and_a_waiter_sees_its_place(fresh, tiny_model, monkeypatch):
    monkeypatch.setenv(server.ENV_MAX_FORWARDS, "1")
    monkeypatch.setenv(server.ENV_EXPRESS, "0")  # short texts, all in the one line
    running, peak = [0], [0]
    lock = threading.Lock()
    real = tiny_model.analyze

    def counted(*args, **kwargs):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.1)
        try:
            return real(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    said, icons = [], set()

    class Note:  # stands in for st.empty(): records what the page would say
        def info(self, message, icon=None):
            said.append(message)
            icons.add(icon)

        def empty(self):
            said.append(None)

    monkeypatch.setattr(tiny_model, "analyze", counted)
    monkeypatch.setattr(st, "empty", Note)
    texts = ["the cat", "the dog", "a bank", "the river"]
    threads = []
    for n, t in enumerate(texts):  # one at a time into the line, so that places 1..3 are all taken
        threads += run_threads([lambda t=t: cache.analyze(active(tiny_model), t)])
        wait_until(lambda n=n: server.admission().running + server.admission().queued > n)
    for t in threads:
        t.join(20)
    assert peak[0] == 1
    assert any(m and m.startswith("Queued: 1st in line") for m in said)
    assert any(m and m.startswith("Queued: 3rd in line") for m in said)
    # the app's own icon font, not an emoji: "⏳" drew an empty box on a lab machine without an emoji font
    assert icons == {":material/hourglass_top:"}
    assert said[-1] is None  # the note is cleared once the result is there
    assert server.admission().running == 0 and server.admission().queued == 0
    assert len(server.results()) == 4


def test_every_kind_of_result_shares_the_one_byte_budget(fresh, tiny_model, monkeypatch):
    one = server.nbytes(tiny_model.analyze("the cat sat"))
    monkeypatch.setenv(server.ENV_CACHE_MB, "1")
    assert server.results().budget == 1024 * 1024
    me = active(tiny_model)
    for n in range(3 * 1024 * 1024 // one):
        cache.analyze(me, f"the cat sat {n}")
        cache.value_weighted(me, f"the cat sat {n}", None)
        cache.analyze_lines(me, [f"the cat sat {n}", "a bank"])
        assert server.results().total <= 1024 * 1024 + 2 * one


def test_an_out_of_memory_forward_is_an_inline_message_and_the_server_carries_on(make_app, monkeypatch):
    real = bert_core.BertScopeModel.analyze
    failing = {"on": True}

    def analyze(self, *args, **kwargs):
        if failing["on"]:
            # torch 2.13's own words on the CPU (torch.empty(2**60, dtype=torch.uint8)): no "out of memory"
            raise RuntimeError(
                "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you "
                "tried to allocate 1152921504606846976 bytes. Error code 12 (Cannot allocate memory)"
            )
        return real(self, *args, **kwargs)

    monkeypatch.setattr(bert_core.BertScopeModel, "analyze", analyze)
    at = make_app("views/attention.py", a="the bank of the river")
    assert not at.exception
    assert any("out of memory" in str(e.value) and "still running" in str(e.value) for e in at.error)
    failing["on"] = False  # memory is back: the same input is tried again, not a remembered failure
    at.run()
    assert not at.exception and not at.error and at.get("plotly_chart")


def test_the_lecturers_sentence_is_not_queued_behind_a_pasted_paragraph(fresh, tiny_model, monkeypatch):
    """A long paste holds the one slot; the short sentence the room is following is analysed at once beside it
    (the express lane), and its page never shows a place in the line."""
    monkeypatch.setenv(server.ENV_MAX_FORWARDS, "1")
    real = tiny_model.analyze
    inside, finish = threading.Event(), threading.Event()

    def slow_for_long_texts(text, *args, **kwargs):
        if len(text) > cache.EXPRESS_CHARS:
            inside.set()
            finish.wait(10)
        return real(text, *args, **kwargs)

    said = []

    class Note:
        def info(self, message, icon=None):
            said.append(message)

        def empty(self):
            pass

    monkeypatch.setattr(tiny_model, "analyze", slow_for_long_texts)
    monkeypatch.setattr(st, "empty", Note)
    paragraph = "the bank of the river " * 20
    threads = run_threads([lambda: cache.analyze(active(tiny_model), paragraph)])
    inside.wait(10)
    assert cache.analyze(active(tiny_model), "the man went to the bank").tokens[0] == "[CLS]"
    assert not said and server.admission().running == 1  # not queued; the paragraph still running
    finish.set()
    for t in threads:
        t.join(10)


@contextlib.contextmanager
def collector_alone(collector: server.Collector, *, freeze: bool = False):
    """Only `collector` collects while the block runs (Python's automatic collection off; with `freeze`, what
    was alive before frozen, so its collections scan only the test's objects); afterwards its catch-up timer is
    cancelled, automatic collection is back as it was and nothing stays frozen."""
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    if freeze:
        gc.freeze()
    try:
        yield
    finally:
        collector.close()
        if was_enabled:
            gc.enable()
        gc.unfreeze()


def test_the_collector_frees_a_pages_namespace_cycle_and_runs_at_most_every_few_seconds():
    """A page's namespace is a reference cycle holding its analysis: only a full collection frees it. The
    collector runs one after a page run, at most every `every_s`, and freezes what is alive at its first one
    so that later collections do not scan the whole imported heap again."""
    import gc
    import weakref

    unfrozen = nothing_frozen()
    collector = server.Collector(every_s=60.0)

    class Namespace(dict):  # weak-referenceable, like the big array a page's namespace holds
        pass

    def a_page_run():
        namespace = Namespace(result=np.zeros(1000))
        namespace["self"] = namespace  # the cycle: a page's functions point back at its globals
        return weakref.ref(namespace)

    with collector_alone(collector):  # only the collector may collect in this test
        collector.before_run()
        first = a_page_run()
        assert first() is not None  # garbage, but in a cycle: still there
        assert collector.after_run() is True and first() is None
        assert gc.get_freeze_count() > unfrozen + 1000  # what was alive then is out of later collections' way
        collector.before_run()
        second = a_page_run()
        assert collector.after_run() is False and second() is not None  # within every_s: no second collection
        collector.every_s = 0.0
        collector.before_run()
        assert collector.after_run() is True and second() is None


def test_the_end_of_a_burst_is_collected_without_waiting_for_another_page_run():
    """The last runs of a burst come too soon after a collection to make one; a catch-up collection frees
    their namespaces `every_s` later, once, and not at all when a run has collected everything since, nor
    once the collector is closed."""
    import weakref

    collector = server.Collector(every_s=1.0)

    class Namespace(dict):
        pass

    def a_page_run():
        collector.before_run()
        namespace = Namespace(result=np.zeros(1000))
        namespace["self"] = namespace
        ref = weakref.ref(namespace)
        del namespace
        return ref, collector.after_run()

    # Collections scan only this test's objects: quick, well within every_s on a slow machine.
    with collector_alone(collector, freeze=True):
        start = time.monotonic()
        assert a_page_run()[1] is True
        last, collected = a_page_run()  # the burst's last run: too soon to collect
        assert collected is False and last() is not None and collector.collections == 1
        wait_until(lambda: last() is None, timeout=10)
        assert collector.collections == 2 and time.monotonic() - start >= 1.0  # one catch-up, not sooner
        time.sleep(1.05)
        assert a_page_run()[1] is True and collector.collections == 3  # a run in its own time collects itself
        collector._collect_late()  # a catch-up that lost the race to that run's collection
        assert collector.collections == 3, "a catch-up ran with nothing left to collect"
        left, collected = a_page_run()
        assert collected is False
        collector.close()  # the server's collector is replaced (st.cache_resource cleared)
        time.sleep(1.2)
        assert collector.collections == 3 and left() is not None


def test_a_run_counts_as_running_for_the_collector_from_its_start_sidebar_included(make_app, monkeypatch):
    """The heap is frozen only while no run is under way: a session still in its sidebar (loading a model)
    is under way, or what it holds then would be frozen for good by another session's collection."""
    from app import models

    seen = []
    session_hold = models.session_hold

    def watched():
        seen.append(server.collector()._running)
        return session_hold()

    monkeypatch.setattr(models, "session_hold", watched)
    st.cache_resource.clear()
    make_app()
    assert seen == [1] and server.collector()._running == 0
    st.cache_resource.clear()


def test_the_collector_does_not_freeze_a_page_still_running_in_another_session():
    """Frozen objects are never collected: a page that is still running at the first collection (a room opening
    the link at once) must not be frozen, or its namespace and analysis would outlive its run for good."""
    import gc
    import weakref

    unfrozen = nothing_frozen()
    collector = server.Collector(every_s=0.0)

    class Namespace(dict):
        pass

    with collector_alone(collector):
        collector.before_run()  # session 1's page, still running
        running = Namespace(result=np.zeros(1000))
        running["self"] = running
        collector.before_run()  # session 2's page ends first
        assert collector.after_run() is True
        assert gc.get_freeze_count() == unfrozen  # session 1's page is alive: nothing frozen yet
        ended = weakref.ref(running)
        del running  # session 1's page ends: its namespace is garbage now
        assert collector.after_run() is True and ended() is None
        assert gc.get_freeze_count() > unfrozen + 1000  # no page running any more: the heap is frozen now


def test_the_collector_does_not_freeze_a_page_ending_with_st_stop():
    """st.stop() (and a rerun, a page switch) ends a page by raising: while it passes through the entry's
    `finally`, its traceback still holds the page's namespace, which a freeze then would keep for good."""
    import gc

    unfrozen = nothing_frozen()
    collector = server.Collector(every_s=0.0)

    class Namespace(dict):
        pass

    def page_that_stops():
        namespace = Namespace(result=np.zeros(1000))
        namespace["self"] = namespace
        raise KeyboardInterrupt  # a BaseException, like Streamlit's StopException

    with collector_alone(collector):
        collector.before_run()
        try:
            page_that_stops()
        except KeyboardInterrupt:
            collector.after_run()  # as in the entry's `finally`, with the exception still being handled
        assert gc.get_freeze_count() == unfrozen
        collector.before_run()
        assert collector.after_run() is True  # the next quiet moment
        assert gc.get_freeze_count() > unfrozen + 1000
        # the stopped page's namespace was collected, not frozen (get_objects counts frozen objects too)
        assert not [o for o in gc.get_objects() if type(o) is Namespace]


def test_a_page_ending_with_st_stop_is_collected_without_waiting_for_another_page_run():
    """Its traceback holds its namespace while the run's own collection runs: a catch-up collection frees it
    `every_s` later, or an idle server kept the page's analysis (and model) until some other page ran."""
    import weakref

    collector = server.Collector(every_s=0.5)

    class Namespace(dict):
        pass

    refs = []

    def page_that_stops():
        namespace = Namespace(result=np.zeros(1000))
        namespace["self"] = namespace
        refs.append(weakref.ref(namespace))
        raise KeyboardInterrupt  # a BaseException, like Streamlit's StopException

    with collector_alone(collector, freeze=True):  # collections scan only this test's objects
        collector.before_run()
        try:
            page_that_stops()
        except KeyboardInterrupt:
            assert collector.after_run() is True  # collected, but not this page: its traceback is alive
        assert refs[0]() is not None
        wait_until(lambda: refs[0]() is None, timeout=10)
        assert collector.collections == 2


def test_what_was_frozen_is_collected_once_it_is_garbage_at_the_next_refreeze():
    """The sessions open at the freeze are frozen with the heap; after their tabs close they are garbage that
    no collection sees, until the heap is unfrozen, collected and frozen again every `refreeze_every_s`."""
    import gc
    import weakref

    unfrozen = nothing_frozen()
    collector = server.Collector(every_s=0.0, refreeze_every_s=3600.0)

    class Session(dict):
        pass

    with collector_alone(collector):
        open_tab = Session(downloads=np.zeros(1000))
        open_tab["self"] = open_tab  # a session is a reference cycle
        closed = weakref.ref(open_tab)
        collector.before_run()
        assert collector.after_run() is True and gc.get_freeze_count() > unfrozen  # frozen with the tab open
        del open_tab  # the tab closes, Streamlit drops its session
        collector.before_run()
        collector.after_run()
        assert closed() is not None  # frozen garbage: no collection sees it
        collector.refreeze_every_s = 0.0
        collector.before_run()
        collector.after_run()
        assert closed() is None and gc.get_freeze_count() > unfrozen  # freed, and the heap frozen again


def test_a_server_that_is_never_quiet_again_still_refreezes_once_overdue():
    """Waiting for a quiet moment must not keep the first freeze's closed sessions for the server's life: once
    the refreeze is `OVERDUE` times late it happens beside running pages, which are then kept only until the
    next one."""
    import gc
    import weakref

    unfrozen = nothing_frozen()
    collector = server.Collector(every_s=0.0, refreeze_every_s=3600.0)

    class Session(dict):
        pass

    with collector_alone(collector):
        open_tab = Session(downloads=np.zeros(1000))
        open_tab["self"] = open_tab
        closed = weakref.ref(open_tab)
        collector.before_run()
        assert collector.after_run() is True and gc.get_freeze_count() > unfrozen  # frozen at a quiet moment
        del open_tab
        collector.before_run()  # from here on a page is always running somewhere
        running = Session(result=np.zeros(1000))
        running["self"] = running
        still_running = weakref.ref(running)
        collector._frozen_at -= 2 * 3600.0  # due, not overdue: only a quiet moment refreezes
        collector.before_run()
        collector.after_run()
        assert closed() is not None
        collector._frozen_at -= 3600.0  # three times late
        collector.before_run()
        collector.after_run()
        assert closed() is None and gc.get_freeze_count() > unfrozen  # freed, and frozen again
        del running  # the page that was running at that refreeze ends: kept until the next one
        collector.before_run()
        collector.after_run()
        assert still_running() is not None
        collector._frozen_at -= 3 * 3600.0
        collector.before_run()
        collector.after_run()
        assert still_running() is None


def test_the_place_of_a_shared_short_computation_is_the_one_its_own_session_is_told():
    """A short input waits in the express lane's line too: the session waiting on it is told the same place as
    the session whose request it is, the nearer of the two lines."""
    gate = server.Admission(1, express=1)
    told, done = [], threading.Event()

    def waits(small: bool, since: float | None = None, tell=None):
        def run():
            with gate.slot(tell, since=since, small=small):
                done.wait(10)

        return run

    threads = run_threads([waits(False)])  # the main slot is taken ...
    wait_until(lambda: gate.running == 1)
    threads += run_threads([waits(True)])  # ... and the express lane
    wait_until(lambda: gate.running == 2)
    threads += run_threads([waits(False)])  # a long request waits
    wait_until(lambda: gate.queued == 1)
    since = time.monotonic()
    threads += run_threads([waits(True, since, told.append)])  # then a short one
    wait_until(lambda: told)
    assert gate.place_of(since) == told[-1] == 1  # 2nd overall, 1st among the short ones
    done.set()
    for t in threads:
        t.join(10)
