"""A batch of Redis commands packed into RESP bytes as they are queued, and streamed out.

The writers of one store call queue a few thousand commands; redis-py's pipeline spends far
more time per command (argument parsing, encoding, per-reply callbacks) than Redis does. A
:class:`CommandBatch` packs each command once, with hiredis's C packer (the same bytes as
redis-py's packer: ``str`` as UTF-8, ``int`` and ``float`` as their ``repr``, ``bool`` refused),
keeps the arguments of each, to name a failing command, and hands the packed bytes to its
``send`` callable every :data:`SEND_COMMANDS` commands, so Redis executes the first commands
while the writers are still encoding the next ones. Replies are read by the caller
once the batch is :meth:`CommandBatch.flush`-ed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import chain

import hiredis

#: An argument as the packer takes it.
Arg = bytes | str | int | float

#: Commands gathered before they are handed to ``send``: enough to keep the socket writes few
#: (about 50 kB of node commands), few enough for Redis to start early.
SEND_COMMANDS = 128

_pack_command = hiredis.pack_command


class CommandBatch:
    """Commands queued in order as RESP bytes, passed to ``send`` :data:`SEND_COMMANDS` at a time.

    ``send`` receives the packed commands in order; after :meth:`flush` every queued command
    has been passed to it exactly once.
    """

    __slots__ = ("_chunks", "_commands", "_send")

    def __init__(self, send: Callable[[bytes], object]) -> None:
        self._send = send
        self._chunks: list[bytes] = []
        #: The arguments of every queued command, kept to name a failing one.
        self._commands: list[tuple[Arg, ...]] = []

    def __len__(self) -> int:
        """How many commands were queued (one reply each)."""
        return len(self._commands)

    def describe(self, index: int) -> str:
        """``NAME key`` of the ``index``-th queued command (0-based), for error messages."""
        name, key = self._commands[index][:2]
        return f"{name!s} {key!s}"

    def flush(self) -> None:
        """Pass every command not sent yet to ``send``."""
        if self._chunks:
            data = b"".join(self._chunks)
            self._chunks.clear()
            self._send(data)

    def _queue(self, args: tuple[Arg, ...]) -> None:
        """Pack one command (name first); send the pending ones once there are enough."""
        self._commands.append(args)
        chunks = self._chunks
        chunks.append(_pack_command(args))  # type: ignore[arg-type]  # hiredis's stub types a 1-tuple
        if len(chunks) >= SEND_COMMANDS:
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
