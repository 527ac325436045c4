"""The Redis half of a benchmark's lower bound: what a real store call wrote, replayed raw.

:class:`RedisMonitor` records the commands Redis runs (``MONITOR``, on a plain socket) until
:meth:`RedisMonitor.stop`; :func:`writes_only` keeps the writes (Redis's own ``COMMAND INFO``
flags, plus ``PUBLISH``); :func:`replay` sends them again, same keys and bytes, through one
plain redis-py pipeline — the public API, nothing else.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence

import redis

_ESCAPES = {
    ord("n"): b"\n",
    ord("r"): b"\r",
    ord("t"): b"\t",
    ord("a"): b"\a",
    ord("b"): b"\b",
    ord('"'): b'"',
    ord("\\"): b"\\",
}


def parse_monitor_line(line: bytes) -> tuple[bytes, ...]:
    """The arguments of one MONITOR line (``+ts [db addr] "ARG" "ARG"``, escaped as Redis's sdscatrepr)."""
    i = line.index(b"] ") + 2
    args: list[bytes] = []
    while i < len(line):
        if line[i] != ord('"'):
            i += 1
            continue
        i += 1
        arg = bytearray()
        while line[i] != ord('"'):
            if line[i] == ord("\\"):
                code = line[i + 1]
                if code == ord("x"):
                    arg.append(int(line[i + 2 : i + 4], 16))
                    i += 4
                    continue
                arg += _ESCAPES[code]
                i += 2
                continue
            arg.append(line[i])
            i += 1
        args.append(bytes(arg))
        i += 1
    return tuple(args)


class RedisMonitor:
    """MONITOR on a plain socket: the commands Redis runs until :meth:`stop` (a marker ECHO)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.sendall(b"MONITOR\r\n")
        self.buffer = b""
        while b"+OK\r\n" not in self.buffer:
            self.buffer += self.sock.recv(65536)
        self.buffer = self.buffer.split(b"+OK\r\n", 1)[1]

    def stop(self) -> list[tuple[bytes, ...]]:
        """Every command run since the start (name first), in order."""
        marker = f"bench-marker-{time.monotonic_ns()}".encode()
        client = redis.Redis(port=self.port)
        client.echo(marker)
        client.close()
        while marker not in self.buffer:
            self.buffer += self.sock.recv(1 << 20)
        self.sock.close()
        commands = []
        for line in self.buffer.split(b"\r\n"):
            if marker in line:
                break
            if line.startswith(b"+"):
                commands.append(parse_monitor_line(line))
        return commands


def writes_only(commands: Sequence[tuple[bytes, ...]], port: int) -> list[tuple[bytes, ...]]:
    """The commands Redis flags as writes, and ``PUBLISH``."""
    client = redis.Redis(port=port)
    try:
        writing = {
            name
            for name in {c[0].upper() for c in commands}
            if name in (b"PUBLISH", b"SPUBLISH") or _is_write(client, name)
        }
    finally:
        client.close()
    return [c for c in commands if c[0].upper() in writing]


def in_transaction(commands: Sequence[tuple[bytes, ...]]) -> bool:
    """Whether the commands came inside MULTI/EXEC."""
    return any(c[0].upper() == b"MULTI" for c in commands)


def replay(client: redis.Redis, writes: Sequence[tuple[bytes, ...]], transaction: bool) -> None:
    """The writes again, through one redis-py pipeline (MULTI/EXEC when ``transaction``)."""
    pipe = client.pipeline(transaction=transaction)
    for args in writes:
        pipe.execute_command(*args)
    pipe.execute()


def _is_write(client: redis.Redis, name: bytes) -> bool:
    info = client.execute_command("COMMAND", "INFO", name)
    entries = list(info.values()) if isinstance(info, dict) else list(info or ())  # redis-py parses it to a dict
    flags = entries[0].get("flags", ()) if entries and isinstance(entries[0], dict) else ()
    return any(flag in ("write", b"write") for flag in flags)
