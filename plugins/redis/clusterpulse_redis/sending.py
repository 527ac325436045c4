"""Running the writers of one store call on one pooled connection, streaming their commands.

The commands go out while they are being queued (:class:`CommandBatch` hands them over every
hundred or so, packed by hiredis's ``pack_command`` — the packer redis-py itself uses, without
its per-argument Python checks — and sent with the connection's public ``send_packed_command``,
as redis-py's own pipeline does); the replies are read once everything is sent, one public
``read_response`` each. Error replies do not stop the reading: every
reply is read, so the connection stays in step and can go back to the pool, then the first
error is raised with the failing command named. Any other failure while reading closes the
connection.

Connection errors and timeouts are retried with the connection's retry policy (the settings'
attempts and backoff): the writers run again and the whole batch is sent again on a fresh
connection. That is safe because the writes converge: ``SET``, ``HSET``, ``EXPIRE``, ``ZADD``
of the same member and score, ``ZREMRANGEBYSCORE``, ``SADD`` and ``DEL`` then ``SADD`` all
end in the same state when repeated. The exception is an event: a retry after a partly
applied batch may publish it, and push it on ``events:<name>``, twice (at least once rather
than maybe never).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import hiredis
import redis
from redis.connection import AbstractConnection

from clusterpulse_redis.resp import Arg, CommandBatch

#: Fills a batch with the commands of one store call.
Fill = Callable[[CommandBatch], None]


def _pack(command: tuple[Arg, ...]) -> bytes:
    """RESP bytes of one command: ``str`` as UTF-8, numbers as their ``repr``; a ``bool`` is refused."""
    if any(isinstance(arg, bool) for arg in command):
        raise redis.DataError(f"{command[0]!s}: a bool is not a Redis argument (encode it first)")
    return hiredis.pack_command(command)


def _receive_replies(conn: AbstractConnection, count: int) -> list[tuple[int, redis.ResponseError]]:
    """Read ``count`` replies; the error replies, with their 0-based index.

    Any failure other than an error reply disconnects the connection (unread replies would be
    read by its next user).
    """
    errors: list[tuple[int, redis.ResponseError]] = []
    index = 0
    try:
        while index < count:
            try:
                conn.read_response()
            except redis.ResponseError as exc:
                errors.append((index, exc))
            index += 1
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        conn.disconnect()
        raise type(exc)(f"error reading replies ({index} of {count} read): {exc}") from exc
    except BaseException:
        conn.disconnect()
        raise
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

    def send(commands: Sequence[tuple[Arg, ...]]) -> None:
        nonlocal sent_before
        # No health-check PING once commands are in flight: its reply would be out of order.
        # One buffer, one ``sendall``: a list would be sent one command per system call.
        conn.send_packed_command([b"".join(map(_pack, commands))], check_health=not sent_before)
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


def run_cluster_batch(client: redis.RedisCluster, fill: Fill) -> None:
    """Run ``fill``'s commands on a Redis Cluster: one pipeline per node, grouped by key slot.

    redis-py's cluster pipeline sends each node the commands of the slots it serves (in
    queued order, so the commands of one key keep theirs), follows ``MOVED``/``ASK`` and
    retries connection errors with the client's retry policy; every reply is read before the
    first error is raised, named like :func:`run_batch` names it. ``PUBLISH`` (no key; a
    cluster forwards it to every node) goes last, after the data it announces is written.
    """
    batch = CommandBatch(lambda _commands: None)  # only collects: the cluster pipeline sends
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
            f"command {index + 1} of {len(keyed)} ({name!s} {key!s}) failed: {exc}{more}"
        ) from exc
    for args in batch.commands:
        if args[0] == "PUBLISH":
            client.publish(args[1], args[2])
