"""A batch of Redis commands, streamed out in chunks as they are queued.

The writers of one store call queue a few thousand commands. A :class:`CommandBatch` keeps
the arguments of each (to name a failing command) and hands them to its ``send`` callable
every :data:`SEND_COMMANDS` commands, so Redis executes the first commands while the writers
are still encoding the next ones. The sender packs and sends them
(:mod:`clusterpulse_redis.sending`); replies are read by the caller once the batch is
:meth:`CommandBatch.flush`-ed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import chain

#: An argument as the packer takes it.
Arg = bytes | str | int | float

#: Commands gathered before they are handed to ``send``: enough to keep the socket writes few
#: (about 50 kB of node commands), few enough for Redis to start early.
SEND_COMMANDS = 128


class CommandBatch:
    """Commands queued in order, passed to ``send`` :data:`SEND_COMMANDS` at a time.

    ``send`` receives the commands (each a tuple of arguments, name first) in order; after
    :meth:`flush` every queued command has been passed to it exactly once.
    """

    __slots__ = ("_commands", "_send", "_sent")

    def __init__(self, send: Callable[[Sequence[tuple[Arg, ...]]], object]) -> None:
        self._send = send
        #: The arguments of every queued command, in order.
        self._commands: list[tuple[Arg, ...]] = []
        self._sent = 0

    def __len__(self) -> int:
        """How many commands were queued (one reply each)."""
        return len(self._commands)

    @property
    def commands(self) -> list[tuple[Arg, ...]]:
        """Every queued command, name first, in order."""
        return self._commands

    def describe(self, index: int) -> str:
        """``NAME key`` of the ``index``-th queued command (0-based), for error messages."""
        name, key = self._commands[index][:2]
        return f"{name!s} {key!s}"

    def flush(self) -> None:
        """Pass every command not sent yet to ``send``."""
        if self._sent < len(self._commands):
            pending = self._commands[self._sent :]
            self._sent = len(self._commands)
            self._send(pending)

    def _queue(self, args: tuple[Arg, ...]) -> None:
        """Queue one command (name first); send the pending ones once there are enough."""
        self._commands.append(args)
        if len(self._commands) - self._sent >= SEND_COMMANDS:
            self.flush()

    # --------------------------------------------------------------------------- commands

    def set(self, key: str, value: Arg, ex: int | None = None) -> None:
        """``SET key value [EX seconds]``."""
        self._queue(("SET", key, value) if ex is None else ("SET", key, value, "EX", ex))

    def hset(self, key: str, mapping: Mapping[str, Arg]) -> None:
        """``HSET key field value ...`` in the mapping's order (at least one field)."""
        self._queue(("HSET", key, *chain.from_iterable(mapping.items())))

    def expire(self, key: str, seconds: int) -> None:
        """``EXPIRE key seconds``."""
        self._queue(("EXPIRE", key, seconds))

    def zadd(self, key: str, score: int | float, member: Arg) -> None:
        """``ZADD key score member`` (one member)."""
        self._queue(("ZADD", key, score, member))

    def zremrangebyscore(self, key: str, minimum: Arg, maximum: Arg) -> None:
        """``ZREMRANGEBYSCORE key min max``."""
        self._queue(("ZREMRANGEBYSCORE", key, minimum, maximum))

    def sadd(self, key: str, *members: Arg) -> None:
        """``SADD key member ...`` (at least one member)."""
        self._queue(("SADD", key, *members))

    def srem(self, key: str, *members: Arg) -> None:
        """``SREM key member ...`` (at least one member)."""
        self._queue(("SREM", key, *members))

    def delete(self, key: str) -> None:
        """``DEL key``."""
        self._queue(("DEL", key))

    def publish(self, channel: str, message: Arg) -> None:
        """``PUBLISH channel message``."""
        self._queue(("PUBLISH", channel, message))

    def lpush(self, key: str, *values: Arg) -> None:
        """``LPUSH key value ...`` (at least one value)."""
        self._queue(("LPUSH", key, *values))

    def ltrim(self, key: str, start: int, stop: int) -> None:
        """``LTRIM key start stop``."""
        self._queue(("LTRIM", key, start, stop))
