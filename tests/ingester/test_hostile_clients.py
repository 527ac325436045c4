"""Hostile clients before authentication: many unregistered streams, oversized messages, bad-token bursts, slow-loris.

Each attack runs in a separate process (``hostile_client.py``) against an ingester started in
this process, so the resident memory sampled here is the ingester's. Through every attack a
registered agent keeps getting its batches acked, nothing of the attacker is stored, and the hub's
API is not called (token look-ups are answered from the watched caches).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from clusterpulse_ingester.plugin import IngesterPlugin
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_ingester.server import FIRST_BACKOFF
from clusterpulse_ingester.settings import MIB, IngesterSettings
from clusterpulse_testing.polling import eventually
from push_support import TOKEN, WAIT, Stream
from test_ingester_protocol import batch

from clusterpulse_core.context import Runtime

CLIENT = Path(__file__).with_name("hostile_client.py")
#: The limits under test (small, so the attacks cross them many times over).
LIMITS = {
    "register_timeout": 1.0,
    "max_register_bytes": 16 * 1024,
    "max_unregistered_streams": 64,
    "max_streams_per_peer": 32,
    "auth_failures_before_backoff": 5,
    "auth_backoff_max": 2.0,
}
#: What one stream may cost the ingester while gRPC and the ingester refuse it, beyond its first
#: message (gRPC call state, the stream's task); docs/push-mode.md#bounds-before-authentication.
STREAM_OVERHEAD = 32 * 1024
#: Oversized first messages sent at once (each nearly max_message_bytes).
OVERSIZED_STREAMS = 8


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


@contextmanager
def _peak_rss() -> Iterator[list[int]]:
    """Samples this process's resident memory while the block runs: ``[baseline, peak]``."""
    figures = [_rss(), 0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            figures[1] = max(figures[1], _rss())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield figures
    finally:
        done.set()
        sampler.join()
        figures[1] = max(figures[1], _rss())


def _attack(port: int, mode: str, count: int, size: int = 0) -> dict[str, int]:
    timeout = LIMITS["register_timeout"] + WAIT
    result = subprocess.run(
        [sys.executable, str(CLIENT), str(port), mode, str(count), str(size), str(timeout)],
        capture_output=True,
        text=True,
        timeout=timeout * (count if mode == "bad_token" else 1) + WAIT,
        check=True,
        cwd=CLIENT.parent,
    )
    return dict(json.loads(result.stdout))


def _rejected(runtime: Runtime, reason: str) -> float:
    return runtime.metrics.get_sample_value("clusterpulse_ingester_streams_rejected_total", {"reason": reason}) or 0.0


def _gauge(runtime: Runtime) -> float:
    return runtime.metrics.get_sample_value("clusterpulse_ingester_unregistered_streams") or 0.0


def _hub_calls(hub: Any, since: int) -> list[tuple[str, str, dict[str, str]]]:
    """The hub API requests after the first ``since`` ones, the informers' long-running watches excepted."""
    return [r for r in hub.requests[since:] if r[2].get("watch") not in ("true", "1")]


@pytest.fixture
def guarded(start_ingester: Callable[..., tuple[Runtime, Any]], hub: Any) -> Iterator[tuple[Runtime, Any, Stream]]:
    """An ingester with small pre-registration limits and one registered agent (``edge``)."""
    runtime, recording = start_ingester(**LIMITS)
    plugin = runtime.plugins.plugin("ingester")
    assert isinstance(plugin, IngesterPlugin) and plugin.server is not None
    agent = Stream(plugin.server.port, TOKEN + "edge")
    agent.register("edge", TOKEN + "edge")
    yield runtime, recording, agent
    agent.close()


def _acks(agent: Stream, batch_id: str) -> None:
    agent.send(pb.ConnectRequest(metrics=batch("edge", batch_id)))
    ack = agent.recv().ack
    assert ack.success and ack.batch_id == batch_id


def _port(runtime: Runtime) -> int:
    plugin = runtime.plugins.plugin("ingester")
    assert isinstance(plugin, IngesterPlugin) and plugin.server is not None
    return plugin.server.port


def test_two_thousand_unregistered_streams(guarded: tuple[Runtime, Any, Stream], hub: Any) -> None:
    runtime, recording, agent = guarded
    stored, calls = len(recording.pieces), len(hub.requests)
    waiting = [0]
    with _peak_rss() as memory:
        outcome: dict[str, int] = {}
        attack = threading.Thread(target=lambda: outcome.update(_attack(_port(runtime), "silent", 2000)))
        attack.start()
        eventually(lambda: _rejected(runtime, "too_many_from_peer") > 0, "the per-peer limit to refuse streams", WAIT)
        _acks(agent, "during-silent")
        while attack.is_alive():
            waiting[0] = max(waiting[0], int(_gauge(runtime)))
            attack.join(0.01)
    # Every stream ended unserved: over the limits refused at once, admitted ones at the registration
    # deadline (more are admitted as those end); gRPC cancels some before the ingester sees them.
    assert sum(outcome.values()) == 2000 and set(outcome) <= {"RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "CANCELLED"}
    assert outcome["DEADLINE_EXCEEDED"] >= LIMITS["max_streams_per_peer"]
    assert (_rejected(runtime, "too_many_from_peer"), _rejected(runtime, "register_timeout")) == (
        outcome["RESOURCE_EXHAUSTED"],
        outcome["DEADLINE_EXCEEDED"],
    )
    assert waiting[0] <= LIMITS["max_streams_per_peer"]
    bound = 2000 * STREAM_OVERHEAD + LIMITS["max_streams_per_peer"] * 2 * LIMITS["max_register_bytes"]
    growth = memory[1] - memory[0]
    print(f"2,000 unregistered streams: ingester RSS +{growth / MIB:.1f} MiB (bound {bound / MIB:.1f} MiB)")
    assert growth <= bound
    assert _hub_calls(hub, calls) == []
    assert all(getattr(p, "cluster", "edge") == "edge" for p in recording.pieces[stored:])  # the agent's batch
    _acks(agent, "after-silent")


def test_oversized_messages_before_registration_are_refused_unparsed(
    guarded: tuple[Runtime, Any, Stream], hub: Any
) -> None:
    runtime, recording, agent = guarded
    stored, calls = len(recording.pieces), len(hub.requests)
    size = IngesterSettings().max_message_bytes - MIB  # under gRPC's own limit: only the pre-registration one stops it
    count = OVERSIZED_STREAMS
    with _peak_rss() as memory:
        outcome = _attack(_port(runtime), "oversized", count, size)
    # None is served: each is refused by its size, or by the registration deadline when the message is
    # still arriving then (the client may see its write fail first: INTERNAL).
    assert sum(outcome.values()) == count and "OK" not in outcome, outcome
    refused = sum(_rejected(runtime, r) for r in ("oversized", "register_timeout", "too_many_from_peer"))
    assert refused == count and _rejected(runtime, "oversized") >= 1
    # gRPC assembles a message before the ingester sees its size (and hands it over as a copy): each
    # admitted stream may cost twice max_message_bytes (docs/push-mode.md#bounds-before-authentication).
    bound = count * (2 * IngesterSettings().max_message_bytes + STREAM_OVERHEAD)
    growth = memory[1] - memory[0]
    print(
        f"{count} x {size / MIB:.0f} MiB pre-registration messages: ingester RSS +{growth / MIB:.1f} MiB "
        f"(bound {bound / MIB:.0f} MiB)"
    )
    assert growth <= bound
    assert _hub_calls(hub, calls) == [] and len(recording.pieces) == stored
    _acks(agent, "after-oversized")


def test_a_burst_of_bad_tokens_costs_no_hub_call_and_backs_off(guarded: tuple[Runtime, Any, Stream], hub: Any) -> None:
    runtime, recording, agent = guarded
    stored, calls = len(recording.pieces), len(hub.requests)
    started = time.monotonic()
    outcome = _attack(_port(runtime), "bad_token", 200)
    elapsed = time.monotonic() - started
    # The first failures are checked (from memory); then the peer waits, from FIRST_BACKOFF doubling,
    # and only one attempt per wait is checked again.
    checked = outcome.get("UNAUTHENTICATED", 0)
    assert checked + outcome.get("UNAVAILABLE", 0) == 200, outcome
    assert (
        LIMITS["auth_failures_before_backoff"]
        <= checked
        <= (LIMITS["auth_failures_before_backoff"] + 1 + elapsed / FIRST_BACKOFF)
    ), outcome
    assert _rejected(runtime, "bad_token") == checked and _rejected(runtime, "backoff") == 200 - checked
    assert _hub_calls(hub, calls) == []
    assert len(recording.pieces) == stored
    _acks(agent, "after-bad-tokens")  # the registered agent is not affected
    # Once the wait is over, a good token from the same address registers.
    again = eventually(lambda: _registers(_port(runtime)), "the backoff to end", LIMITS["auth_backoff_max"] + WAIT)
    again.close()


def _registers(port: int) -> Stream | None:
    stream = Stream(port, TOKEN + "other")
    try:
        stream.register("other", TOKEN + "other")
    except Exception:
        stream.close()
        return None
    return stream


def test_slow_loris(guarded: tuple[Runtime, Any, Stream]) -> None:
    runtime, _recording, agent = guarded
    # A gRPC stream that never registers is ended at the registration deadline.
    outcome = _attack(_port(runtime), "silent", 1)
    assert outcome == {"DEADLINE_EXCEEDED": 1}
    # A connection that trickles the HTTP/2 preface is closed by the handshake deadline.
    with socket.create_connection(("127.0.0.1", _port(runtime)), timeout=LIMITS["register_timeout"] + WAIT) as sock:
        preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

        def closed() -> bool:
            try:
                sock.sendall(preface[:1])
                return sock.recv(1 << 16) == b""
            except OSError:
                return True

        sock.settimeout(0.05)
        eventually(
            lambda: _trickle(closed), "the server to close the slow connection", LIMITS["register_timeout"] + WAIT
        )
    _acks(agent, "after-slow-loris")


def _trickle(closed: Callable[[], bool]) -> bool:
    try:
        return closed()
    except TimeoutError:
        return False
