"""The shared server's limits: forward passes admitted a few at a time, analyses cached within a byte budget,
identical requests computed once, and faults that end one request but not the server."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import bert_core
from app.server import Admission, BudgetCache, nbytes


def test_admission_runs_at_most_limit_at_once_and_counts_who_is_ahead():
    gate = Admission(1)
    running, peak, ahead_seen = [0], [0], []
    lock = threading.Lock()

    def work():
        with gate.slot():
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.05)
            ahead_seen.append(gate.ahead())
            with lock:
                running[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert peak[0] == 1 and max(ahead_seen) >= 1 and gate.ahead() == 0


def test_a_failed_or_abandoned_request_gives_its_slot_back():
    gate = Admission(1)
    with pytest.raises(ValueError):
        with gate.slot():
            raise ValueError("the session went away")
    with gate.slot():  # would block forever if the slot were still held
        pass
    with pytest.raises(bert_core.InputError, match="out of memory"):
        with gate.slot():
            raise RuntimeError("CUDA out of memory. Tried to allocate ...")
    with pytest.raises(bert_core.InputError, match="out of memory"):
        with gate.slot():
            raise MemoryError
    assert gate.ahead() == 0


def test_budget_cache_evicts_by_bytes_and_exceeds_by_at_most_one_value():
    cache = BudgetCache(budget_bytes=10_000)
    for i in range(6):
        cache.get(i, lambda: np.zeros(1000, dtype=np.float32))  # 4 kB each
    assert cache.total <= 10_000 + 4000 and len(cache) == 2
    huge = cache.get("huge", lambda: np.zeros(50_000, dtype=np.float32))
    assert len(cache) == 1 and cache.total == huge.nbytes  # a value over the budget is kept, alone


def test_identical_concurrent_requests_compute_once(tiny_model):
    cache = BudgetCache(budget_bytes=10**9)
    calls = []

    def compute():
        calls.append(1)
        time.sleep(0.1)  # long enough that the others arrive while it runs
        return tiny_model.analyze("the bank of the river")

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("same", compute))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(calls) == 1 and len(results) == 6 and all(r is results[0] for r in results)
    assert nbytes(results[0]) >= results[0].attentions.nbytes + results[0].hidden_states.nbytes


def test_a_failed_computation_is_not_cached_and_does_not_block_the_key():
    cache = BudgetCache(budget_bytes=10**6)
    with pytest.raises(RuntimeError):
        cache.get("k", lambda: (_ for _ in ()).throw(RuntimeError("boom")))
    assert cache.get("k", lambda: np.ones(3)).sum() == 3


def test_an_out_of_memory_forward_is_an_inline_message_not_a_dead_page(make_app, monkeypatch):
    def fail(self, *args, **kwargs):
        raise RuntimeError(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate ... out of memory"
        )

    monkeypatch.setattr(bert_core.BertScopeModel, "analyze", fail)
    at = make_app("views/attention.py", a="the bank of the river")
    assert not at.exception
    assert any("out of memory" in str(e.value) for e in at.error)
