"""The retry queue: order, the per-stream bound, and done/drain."""

from __future__ import annotations

from clusterpulse_vmwriter.queue import RetryQueue
from clusterpulse_vmwriter.render import Batch, Chunk


def batch(stream: str, samples: int = 1, tag: str = "") -> Batch:
    return Batch((stream,), (Chunk(f"{stream} {tag}\n".encode(), samples),))


def test_oldest_first_across_streams() -> None:
    queue = RetryQueue(cycles=3)
    first, second, third = batch("a", tag="1"), batch("b", tag="1"), batch("a", tag="2")
    for item in (first, second, third):
        assert queue.put(item) == []
    seen = []
    while (head := queue.peek()) is not None:
        seen.append(head[1])
        assert queue.done(head[0])
    assert seen == [first, second, third]
    assert len(queue) == 0 and queue.samples == 0


def test_each_stream_keeps_its_newest_cycles() -> None:
    queue = RetryQueue(cycles=2)
    a1, a2, a3, b1 = batch("a", 5, "1"), batch("a", 5, "2"), batch("a", 5, "3"), batch("b", 7, "1")
    queue.put(a1)
    queue.put(b1)
    queue.put(a2)
    assert queue.put(a3) == [a1]
    assert len(queue) == 3 and queue.samples == 17
    head = queue.peek()
    assert head is not None and head[1] == b1


def test_done_after_drop_is_harmless_and_drain_empties() -> None:
    queue = RetryQueue(cycles=1)
    old = batch("a", tag="old")
    queue.put(old)
    head = queue.peek()
    assert head is not None
    queue.put(batch("a", tag="new"))
    assert queue.done(head[0]) is False
    assert [b.chunks[0].body for b in queue.drain()] == [b"a new\n"]
    assert queue.peek() is None and queue.wait_empty(0)
