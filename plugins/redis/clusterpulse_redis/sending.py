"""Running the writers of one store call on one pooled connection, streaming their commands.

The commands go out while they are being encoded (:class:`CommandBatch` sends every few tens
of kilobytes); the replies are read once everything is sent, in bulk: straight from the
connection's socket into a hiredis reader, rather than one ``read_response`` call (and its
per-reply bookkeeping) each. Error replies do not stop the reading: every reply is read, so
the connection stays in step and can go back to the pool, then the first error is raised
with the failing command named. Any other failure while reading closes the connection.

Connection errors and timeouts are retried with the connection's retry policy (the settings'
attempts and backoff): the writers run again and the whole batch is sent again on a fresh
connection. That is safe because the writes converge: ``SET``, ``HSET``, ``EXPIRE``, ``ZADD``
of the same member and score, ``ZREMRANGEBYSCORE``, ``SADD`` and ``DEL`` then ``SADD`` all
end in the same state when repeated. The exception is an event: a retry after a partly
applied batch may publish it, and push it on ``events:<name>``, twice (at least once rather
than maybe never).
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import hiredis
import redis
from redis.connection import AbstractConnection

from clusterpulse_redis.resp import Arg, CommandBatch

#: Fills a batch with the commands of one store call.
Fill = Callable[[CommandBatch], None]

#: Bytes asked of the socket per read (replies to writes are a few bytes each).
RECV_BYTES = 256 * 1024


def _receive_replies(conn: AbstractConnection, count: int) -> list[tuple[int, redis.ResponseError]]:
    """Read ``count`` replies from the socket; the error replies, with their 0-based index.

    The connection's own parser is bypassed, which is safe because nothing else reads this
    connection meanwhile and it held no unread data when the commands were sent (the pool
    checks that before handing a connection out).
    """
    sock: socket.socket | None = getattr(conn, "_sock", None)
    if sock is None:
        raise redis.ConnectionError("connection closed before the replies were read")
    reader = hiredis.Reader(replyError=redis.ResponseError)
    errors: list[tuple[int, redis.ResponseError]] = []
    index = 0
    try:
        while index < count:
            data = sock.recv(RECV_BYTES)
            if not data:
                raise redis.ConnectionError("connection closed by the server while reading replies")
            reader.feed(data)
            reply = reader.gets()
            while reply is not False:
                if isinstance(reply, redis.ResponseError):
                    errors.append((index, reply))
                index += 1
                reply = reader.gets()
    except TimeoutError as exc:  # socket.timeout
        conn.disconnect()
        raise redis.TimeoutError(f"timeout reading replies ({index} of {count} read)") from exc
    except OSError as exc:
        conn.disconnect()
        raise redis.ConnectionError(f"error reading replies ({index} of {count} read): {exc}") from exc
    except hiredis.ProtocolError as exc:
        conn.disconnect()
        raise redis.InvalidResponse(f"malformed reply after {index} of {count}: {exc}") from exc
    except BaseException:
        conn.disconnect()
        raise
    if index > count:
        conn.disconnect()
        raise redis.InvalidResponse(f"{index} replies to {count} commands")
    return errors


def _read_replies(conn: AbstractConnection, batch: CommandBatch) -> None:
    """Read one reply per queued command; raise the first error reply once all are read."""
    errors = _receive_replies(conn, len(batch))
    if errors:
        index, exc = errors[0]
        more = f" ({len(errors) - 1} more commands failed)" if len(errors) > 1 else ""
        raise redis.ResponseError(
            f"command {index + 1} of {len(batch)} ({batch.describe(index)}) failed: {exc}{more}"
        ) from exc


def _attempt(conn: AbstractConnection, fill: Fill) -> None:
    """Fill a batch that streams to ``conn``, send the rest, read every reply."""
    sent_before = False

    def send(data: bytes) -> None:
        nonlocal sent_before
        # No health-check PING once commands are in flight: its reply would be out of order.
        conn.send_packed_command([data], check_health=not sent_before)
        sent_before = True

    batch = CommandBatch(send)
    try:
        fill(batch)
        batch.flush()
    except (redis.ConnectionError, redis.TimeoutError):
        raise  # the connection closed itself; the retry policy decides what happens next
    except BaseException:
        if sent_before:
            conn.disconnect()  # replies of the commands already sent would be read by the next user
        raise
    _read_replies(conn, batch)


def run_batch(client: redis.Redis, fill: Fill) -> None:
    """Run ``fill`` against a batch sent on a connection of ``client``'s pool; raise any Redis error.

    Raises :class:`redis.ResponseError` when Redis refused a command (after all replies were
    read) and :class:`redis.ConnectionError` / :class:`redis.TimeoutError` once the retries
    are spent.
    """
    pool = client.connection_pool
    conn = pool.get_connection()
    try:
        conn.retry.call_with_retry(lambda: _attempt(conn, fill), lambda error: conn.disconnect())
    finally:
        pool.release(conn)


class CommandList(CommandBatch):
    """A batch that only keeps its commands' arguments (for the Redis Cluster path, which packs itself)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(lambda _data: None)

    @property
    def commands(self) -> list[tuple[Arg, ...]]:
        """Every queued command, name first, in order."""
        return self._commands

    def _queue(self, args: tuple[Arg, ...]) -> None:
        self._commands.append(args)


def run_cluster_batch(client: redis.RedisCluster, fill: Fill) -> None:
    """Run ``fill``'s commands on a Redis Cluster: one pipeline per node, grouped by key slot.

    redis-py's cluster pipeline sends each node the commands of the slots it serves (in
    queued order, so the commands of one key keep theirs), follows ``MOVED``/``ASK`` and
    retries connection errors with the client's retry policy; every reply is read before the
    first error is raised, named like :func:`run_batch` names it. ``PUBLISH`` (no key; a
    cluster forwards it to every node) goes last, after the data it announces is written.
    """
    batch = CommandList()
    fill(batch)
    keyed = [args for args in batch.commands if args[0] != "PUBLISH"]
    pipe = client.pipeline(transaction=False)
    for args in keyed:
        pipe.execute_command(*args)
    replies = pipe.execute(raise_on_error=False)
    errors = [(index, reply) for index, reply in enumerate(replies) if isinstance(reply, Exception)]
    if errors:
        index, exc = errors[0]
        name, key = keyed[index][:2]
        more = f" ({len(errors) - 1} more commands failed)" if len(errors) > 1 else ""
        if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
            raise type(exc)(f"command {index + 1} of {len(keyed)} ({name!s} {key!s}) failed: {exc}{more}") from exc
        raise redis.ResponseError(
            f"command {index + 1} of {len(keyed)} ({name!s} {key!s}) failed: {exc}{more}") from exc
    for args in batch.commands:
        if args[0] == "PUBLISH":
            client.publish(args[1], args[2])
