"""Reading Redis keys back into the shape ``redis_examples.json`` describes them in.

``readback(client, key, expected)`` returns ``{"type", "ttl", ...}`` with the value laid out
like the expected entry (``json`` / ``fields`` / ``members`` / ``items``), so an example and
what Redis holds can be compared path by path.
"""

from __future__ import annotations

import copy
from typing import Any

import redis

from clusterpulse_core.serde import loads, parse_time

#: Seconds an observed TTL may lag the configured one (the test runs between write and read).
TTL_TOLERANCE = 5


def _text(value: bytes) -> str:
    return value.decode()


def readback(client: redis.Redis, key: str, expected: dict[str, Any]) -> dict[str, Any]:
    """The key's type, TTL and value, in the layout of the expected entry."""
    kind = client.type(key).decode()
    got: dict[str, Any] = {"type": kind, "ttl": client.ttl(key)}
    if kind == "string":
        got["json"] = loads(client.get(key))  # type: ignore[arg-type]
    elif kind == "hash":
        raw = {_text(k): _text(v) for k, v in client.hgetall(key).items()}  # type: ignore[union-attr]
        want_fields = expected.get("fields", {})
        got["fields"] = {
            field: {"json": loads(value)} if isinstance(want_fields.get(field), dict) else value
            for field, value in raw.items()
        }
    elif kind == "set":
        got["members"] = sorted(_text(m) for m in client.smembers(key))  # type: ignore[union-attr]
    elif kind == "zset":
        got["members"] = [
            {"score": score, "json": loads(member)} for member, score in client.zrange(key, 0, -1, withscores=True)
        ]  # type: ignore[union-attr]
    elif kind == "list":
        got["items"] = [loads(item) for item in client.lrange(key, 0, -1)]  # type: ignore[union-attr]
    return got


def ttl_matches(observed: int, expected: Any) -> bool:
    """``null`` = no expiry (-1); otherwise within :data:`TTL_TOLERANCE` below the seconds set."""
    if expected is None:
        return observed == -1
    seconds = int(expected["seconds"])
    return seconds - TTL_TOLERANCE <= observed <= seconds


def value_of(entry: dict[str, Any]) -> Any:
    """The comparable value of a readback or expected entry (type and TTL left out)."""
    return {k: v for k, v in entry.items() if k not in ("type", "ttl")}


def split_volatile(path: str, key_names: list[str]) -> tuple[str, list[str]] | None:
    """``cluster:c1:node:n1.current.timestamp`` -> (``cluster:c1:node:n1``, [``current``, ``timestamp``]).

    ``[]`` in a path means every element. Returns ``None`` for a key the example does not list.
    """
    for key in sorted(key_names, key=len, reverse=True):
        if path.startswith(key) and path[len(key) : len(key) + 1] in (".", "["):
            rest = path[len(key) :].replace("[]", ".[]").lstrip(".")
            return key, [part for part in rest.split(".") if part]
    return None


def _same_format(got: Any, want: Any) -> bool:
    if isinstance(want, str):
        try:
            parse_time(want)
        except ValueError:
            return isinstance(got, str)
        try:
            parse_time(got)
        except (ValueError, AttributeError):
            return False
        return True
    if isinstance(want, bool):
        return isinstance(got, bool)
    if isinstance(want, int | float):
        return isinstance(got, int | float) and not isinstance(got, bool)
    return type(got) is type(want)


VOLATILE = "<volatile: format checked>"


def blank_volatile(got: dict[str, Any], want: dict[str, Any], parts: list[str]) -> list[str]:
    """Check the format at ``parts`` in both values and replace both with a marker; return problems."""
    problems: list[str] = []

    def walk(g: Any, w: Any, rest: list[str], where: str) -> tuple[Any, Any]:
        if not rest:
            if not _same_format(g, w):
                problems.append(f"{where}: {g!r} has not the format of {w!r}")
            return VOLATILE, VOLATILE
        head, tail = rest[0], rest[1:]
        if head == "[]":
            if not isinstance(g, list) or not isinstance(w, list) or len(g) != len(w):
                problems.append(f"{where}: lists differ: {g!r} vs {w!r}")
                return g, w
            pairs = [walk(gi, wi, tail, f"{where}[{i}]") for i, (gi, wi) in enumerate(zip(g, w, strict=True))]
            return [p[0] for p in pairs], [p[1] for p in pairs]
        if isinstance(w, dict) and set(w) == {"json"} and isinstance(g, dict) and "json" in g:
            g2, w2 = walk(g["json"], w["json"], rest, where)
            return {"json": g2}, {"json": w2}
        if not isinstance(g, dict) or not isinstance(w, dict) or head not in g or head not in w:
            problems.append(f"{where}.{head}: missing in {g!r} or {w!r}")
            return g, w
        g2, w2 = walk(g[head], w[head], tail, f"{where}.{head}")
        g_out, w_out = dict(g), dict(w)
        g_out[head], w_out[head] = g2, w2
        return g_out, w_out

    container = (
        "json" if "json" in want else "fields" if "fields" in want else "members" if "members" in want else "items"
    )
    steps = parts
    # zset members: "[].score" addresses the score, "[].x" addresses the member JSON.
    if container == "members" and want.get("type") == "zset" and parts[:1] == ["[]"] and parts[1:] != ["score"]:
        steps = ["[]", "json", *parts[1:]]
    new_got, new_want = walk(got.get(container), want.get(container), steps, container)
    got[container], want[container] = new_got, new_want
    return problems


def deep_copy(value: Any) -> Any:
    """A copy safe to blank volatile paths in."""
    return copy.deepcopy(value)


def snapshot(client: redis.Redis, exclude_prefixes: tuple[str, ...] = ()) -> dict[bytes, bytes]:
    """Every key's serialized value (``DUMP``), except keys starting with one of the prefixes."""
    return {
        key: client.dump(key)  # type: ignore[misc]
        for key in client.scan_iter(count=1000)
        if not key.decode().startswith(exclude_prefixes)
    }
