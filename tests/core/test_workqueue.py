"""The work queue: de-duplication, delays, per-item backoff, token bucket, shutdown, metrics."""

from __future__ import annotations

import itertools
import threading
from collections import Counter

import pytest
from prometheus_client import CollectorRegistry

from clusterpulse_core.runtime.workqueue import ItemBackoff, QueueMetrics, TokenBucket, WorkQueue


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make_queue(clock: FakeClock, **kwargs: float) -> WorkQueue[str]:
    return WorkQueue("test", clock=clock, **kwargs)  # type: ignore[arg-type]


def test_an_item_queued_twice_is_processed_once(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    queue.add("b")
    queue.add("a")
    assert len(queue) == 2
    assert queue.get(0) == "a"
    assert queue.get(0) == "b"
    assert queue.get(0) is None


def test_an_item_added_while_processing_runs_again_after_done(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    assert queue.get(0) == "a"
    queue.add("a")
    queue.add("a")
    assert queue.get(0) is None, "the same item must not be handed to a second worker"
    queue.done("a")
    assert queue.get(0) == "a"
    queue.done("a")
    assert queue.get(0) is None


def test_add_after_holds_the_item_until_its_time(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add_after("a", 5.0)
    assert queue.get(0) is None
    assert queue.delayed == 1
    clock.advance(4.99)
    assert queue.get(0) is None
    clock.advance(0.01)
    assert queue.get(0) == "a"
    assert queue.delayed == 0


def test_add_after_keeps_the_earliest_time_and_delivers_once(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add_after("a", 10.0)
    queue.add_after("a", 2.0)
    queue.add_after("a", 7.0)
    clock.advance(2.0)
    assert queue.get(0) == "a"
    queue.done("a")
    clock.advance(20.0)
    assert queue.get(0) is None


def test_add_after_of_a_queued_item_does_not_duplicate_it(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    queue.add_after("a", 1.0)
    assert queue.get(0) == "a"
    queue.done("a")
    clock.advance(1.0)
    # The delayed add fires after the first run finished: it is a new, legitimate run.
    assert queue.get(0) == "a"
    queue.done("a")
    assert queue.get(0) is None


def test_non_positive_delay_adds_at_once(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add_after("a", 0)
    assert queue.get(0) == "a"


def test_item_backoff_doubles_up_to_the_cap_and_forget_resets() -> None:
    backoff = ItemBackoff(0.005, 1000.0)
    delays = [backoff.next_delay("x") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1000.0
    assert all(b >= a for a, b in itertools.pairwise(delays))
    assert backoff.failures("x") == 20
    assert backoff.next_delay("y") == 0.005, "backoff is per item"
    backoff.forget("x")
    assert backoff.failures("x") == 0
    assert backoff.next_delay("x") == 0.005


def test_item_backoff_never_overflows() -> None:
    backoff = ItemBackoff(1.0, 50.0)
    for _ in range(2000):
        delay = backoff.next_delay("x")
    assert delay == 50.0


def test_token_bucket_allows_the_burst_then_spaces_by_qps(clock: FakeClock) -> None:
    bucket = TokenBucket(qps=10, burst=100, clock=clock)
    assert [bucket.reserve() for _ in range(100)] == [0.0] * 100
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)
    clock.advance(1.0)  # ten tokens back, two of them already promised
    assert [bucket.reserve() for _ in range(8)] == [0.0] * 8
    assert bucket.reserve() == pytest.approx(0.1)


def test_token_bucket_saves_at_most_the_burst(clock: FakeClock) -> None:
    bucket = TokenBucket(qps=1, burst=3, clock=clock)
    clock.advance(3600)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(1.0)


def test_token_bucket_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="qps"):
        TokenBucket(qps=0, burst=1)


def test_rate_limited_add_uses_item_backoff(clock: FakeClock) -> None:
    queue = make_queue(clock, base_delay=1.0, max_delay=8.0)
    assert queue.add_rate_limited("a") == 1.0
    assert queue.get(0) is None
    clock.advance(1.0)
    assert queue.get(0) == "a"
    queue.done("a")
    assert queue.add_rate_limited("a") == 2.0
    assert queue.num_requeues("a") == 2
    clock.advance(1.9)
    assert queue.get(0) is None
    clock.advance(0.1)
    assert queue.get(0) == "a"
    queue.done("a")
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    assert queue.add_rate_limited("a") == 1.0


def test_rate_limited_add_waits_for_the_token_bucket(clock: FakeClock) -> None:
    queue = make_queue(clock, base_delay=0.001, max_delay=1.0, qps=2, burst=1)
    assert queue.add_rate_limited("a") == 0.001
    assert queue.add_rate_limited("b") == pytest.approx(0.5), "bucket empty: wait for the next token"
    assert queue.add_rate_limited("c") == pytest.approx(1.0)


def test_configured_delays_are_used(clock: FakeClock) -> None:
    queue = make_queue(clock, base_delay=0.25, max_delay=0.5)
    assert [queue.add_rate_limited("a") for _ in range(3)] == [0.25, 0.5, 0.5]


def test_shutdown_wakes_blocked_workers_and_refuses_new_items() -> None:
    queue: WorkQueue[str] = WorkQueue("test")
    results: list[str | None] = []
    worker = threading.Thread(target=lambda: results.append(queue.get()))
    worker.start()
    queue.shutdown()
    worker.join(5.0)
    assert not worker.is_alive()
    assert results == [None]
    queue.add("a")
    queue.add_after("b", 0.001)
    assert queue.get(0) is None
    assert queue.shutting_down


def test_shutdown_drops_queued_work_but_waits_for_in_flight(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    queue.add("b")
    queue.add_after("c", 1.0)
    assert queue.get(0) == "a"
    queue.shutdown()
    assert queue.get(0) is None, "no new work after shutdown"
    assert queue.in_flight == 1
    assert queue.wait_idle(0) is False
    queue.done("a")
    assert queue.wait_idle(0) is True


def test_shutdown_with_drain_hands_out_what_is_queued(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    queue.add("b")
    queue.shutdown(drain=True)
    assert queue.wait_idle(0) is False
    assert queue.get(0) == "a"
    queue.done("a")
    assert queue.get(0) == "b"
    queue.done("b")
    assert queue.get(0) is None
    assert queue.wait_idle(0) is True


def test_wait_idle_returns_when_the_last_worker_finishes() -> None:
    queue: WorkQueue[str] = WorkQueue("test")
    queue.add("a")
    assert queue.get(0) == "a"
    queue.shutdown()
    finisher = threading.Timer(0.05, queue.done, args=("a",))
    finisher.start()
    assert queue.wait_idle(10.0) is True
    finisher.join()


def test_blocked_get_receives_a_delayed_item() -> None:
    queue: WorkQueue[str] = WorkQueue("test")
    queue.add_after("a", 0.05)
    assert queue.get(10.0) == "a"


def test_concurrent_workers_never_process_one_item_twice_at_once() -> None:
    queue: WorkQueue[int] = WorkQueue("test")
    active: set[int] = set()
    overlaps: list[int] = []
    processed: Counter[int] = Counter()
    lock = threading.Lock()

    def work() -> None:
        while (item := queue.get(5.0)) is not None:
            with lock:
                if item in active:
                    overlaps.append(item)
                active.add(item)
            for _ in range(200):
                pass
            with lock:
                active.discard(item)
                processed[item] += 1
            queue.done(item)

    workers = [threading.Thread(target=work) for _ in range(4)]
    for worker in workers:
        worker.start()
    for round_ in range(500):
        queue.add(round_ % 5)
    queue.shutdown(drain=True)
    for worker in workers:
        worker.join(10.0)
    assert not any(worker.is_alive() for worker in workers)
    assert overlaps == []
    assert set(processed) == {0, 1, 2, 3, 4}
    assert sum(processed.values()) <= 500


def test_metrics_count_adds_retries_and_depth(clock: FakeClock) -> None:
    registry = CollectorRegistry()
    queue: WorkQueue[str] = WorkQueue("widgets", clock=clock, metrics=QueueMetrics(registry))

    def sample(name: str) -> float | None:
        return registry.get_sample_value(name, {"name": "widgets"})

    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert sample("workqueue_adds_total") == 2
    assert sample("workqueue_depth") == 2
    assert queue.get(0) == "a"
    assert sample("workqueue_depth") == 1
    queue.done("a")
    queue.add_rate_limited("a")
    assert sample("workqueue_retries_total") == 1
    clock.advance(1.0)
    assert queue.get(0) == "b"
    assert sample("workqueue_adds_total") == 3


def test_depth_counts_delayed_items_once_they_are_due(clock: FakeClock) -> None:
    # With every worker busy nobody promotes due items; the gauge must still show them (issue 15).
    registry = CollectorRegistry()
    queue: WorkQueue[str] = WorkQueue("widgets", clock=clock, metrics=QueueMetrics(registry))
    queue.add_after("a", 30)
    queue.add_after("b", 60)
    assert registry.get_sample_value("workqueue_depth", {"name": "widgets"}) == 0
    clock.advance(30)
    assert registry.get_sample_value("workqueue_depth", {"name": "widgets"}) == 1
    clock.advance(30)
    assert registry.get_sample_value("workqueue_depth", {"name": "widgets"}) == 2
    assert queue.due() == 2
