"""Large store calls stream their commands; error replies and lost connections still surface or retry."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from clusterpulse_model.pieces import EventPiece, NodesPiece
from clusterpulse_redis import RedisStore, RedisStoreError
from clusterpulse_redis.resp import SEND_COMMANDS
from redis_seed import cluster_reconcile

from clusterpulse_core.pieces import Piece
from clusterpulse_core.serde import dumps, loads, unstructure

#: Nodes enough for several socket writes (five commands per node).
NODES = 3 * SEND_COMMANDS // 5 + 7


def without_events(pieces: list[Piece]) -> list[Piece]:
    """The pieces except events (a retried batch may publish and push an event twice)."""
    return [piece for piece in pieces if not isinstance(piece, EventPiece)]


def contents(client: redis.Redis) -> dict[bytes, tuple[bytes, bool, Any]]:
    """Every key's type, whether it expires, and value (hash fields and set members unordered)."""
    found: dict[bytes, tuple[bytes, bool, Any]] = {}
    for key in client.scan_iter(count=1000):
        kind: bytes = client.type(key)  # type: ignore[assignment]
        value: Any = {
            b"string": client.get,
            b"hash": client.hgetall,
            b"set": client.smembers,
            b"zset": lambda k: client.zrange(k, 0, -1, withscores=True),
            b"list": lambda k: client.lrange(k, 0, -1),
        }[kind](key)
        found[key] = (kind, client.ttl(key) != -1, value)  # type: ignore[operator]
    return found


def test_a_reconcile_of_many_commands_is_stored_whole(store: RedisStore, raw: redis.Redis) -> None:
    pieces = cluster_reconcile("c1", nodes=NODES)
    nodes = next(piece for piece in pieces if isinstance(piece, NodesPiece)).nodes
    store.store(pieces)

    assert raw.scard("cluster:c1:nodes") == NODES
    for node in nodes:
        fields = raw.hgetall(f"cluster:c1:node:{node.name}")
        current = loads(fields[b"current"])  # type: ignore[index]
        assert current["name"] == node.name
        assert current["conditions"] == unstructure(node)["conditions"]
        assert 0 < raw.ttl(f"cluster:c1:node:{node.name}") <= 600  # type: ignore[operator]
        assert raw.zcard(f"cluster:c1:node:{node.name}:metrics") == 1
    assert loads(raw.hget("cluster:c1:nodes:summary", "data"))["total"] == NODES  # type: ignore[arg-type]
    assert raw.lrange("events:c1", 0, -1) == [raw.lindex("events:c1", 0)]


def test_an_error_reply_names_its_command_and_the_connection_stays_usable(
    make_store: Callable[..., RedisStore], raw: redis.Redis
) -> None:
    store = make_store(pool_size=1)  # the next store call must reuse the same connection
    pieces = cluster_reconcile("c1", nodes=NODES)
    nodes = next(piece for piece in pieces if isinstance(piece, NodesPiece)).nodes
    broken = nodes[NODES // 2].name
    raw.set(f"cluster:c1:node:{broken}", "not a hash")

    with pytest.raises(RedisStoreError, match=rf"HSET cluster:c1:node:{broken}\) failed: WRONGTYPE"):
        store.store(pieces)
    # Not a transaction: the commands after the refused one were carried out.
    assert raw.exists(f"cluster:c1:node:{nodes[-1].name}")
    assert raw.get("cluster:c1:status") == dumps(pieces[-2].status)  # type: ignore[attr-defined]

    store.store(cluster_reconcile("c2"))
    assert raw.scard("cluster:c2:nodes") == 3
    assert store.ready() is None


class CuttingProxy:
    """A TCP proxy on 127.0.0.1 to a Redis port that cuts its first connection after ``cut_after`` bytes.

    Later connections are forwarded untouched. Every thread stops when its sockets close.
    """

    def __init__(self, target_port: int, cut_after: int) -> None:
        self.target_port = target_port
        self.cut_after = cut_after
        self.connections = 0
        self.cuts = 0
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            self._sockets += [client, upstream]
            limit = self.cut_after if self.connections == 1 else None
            threading.Thread(target=self._pump, args=(client, upstream, limit), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, None), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, limit: int | None) -> None:
        forwarded = 0
        try:
            while data := source.recv(65536):
                if limit is not None and forwarded + len(data) > limit:
                    target.sendall(data[: limit - forwarded])
                    self.cuts += 1
                    break
                target.sendall(data)
                forwarded += len(data)
        except OSError:
            pass
        for sock in (source, target):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def close(self) -> None:
        """Stop accepting and close every forwarded connection."""
        self._listener.close()
        for sock in self._sockets:
            sock.close()


@pytest.fixture
def cutting_proxy(redis_server: object) -> Iterator[CuttingProxy]:
    """A proxy to the test's redis-server that cuts the first connection after 40 kB sent."""
    proxy = CuttingProxy(redis_server.port, cut_after=40_000)  # type: ignore[attr-defined]
    yield proxy
    proxy.close()


def test_a_connection_lost_mid_batch_is_retried_whole(
    make_store: Callable[..., RedisStore], raw: redis.Redis, cutting_proxy: CuttingProxy
) -> None:
    pieces = without_events(cluster_reconcile("c1", nodes=NODES))
    direct = make_store()
    direct.store(pieces)
    expected = contents(raw)
    raw.flushall()

    store = make_store(url=f"redis://127.0.0.1:{cutting_proxy.port}/0", retry_attempts=1)
    store.store(pieces)

    assert cutting_proxy.cuts == 1 and cutting_proxy.connections == 2
    assert contents(raw) == expected


def test_a_lost_connection_without_retries_left_is_an_error(
    make_store: Callable[..., RedisStore], cutting_proxy: CuttingProxy
) -> None:
    store = make_store(url=f"redis://127.0.0.1:{cutting_proxy.port}/0", retry_attempts=0)
    with pytest.raises(RedisStoreError, match="ConnectionError"):
        store.store(cluster_reconcile("c1", nodes=NODES))
    assert cutting_proxy.cuts == 1
