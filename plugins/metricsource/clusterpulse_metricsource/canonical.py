"""The canonical JSON of a spec and its hash (docs/compatibility.md#metricsource-wire).

The hash is taken over Go's ``encoding/json`` output of the spec: keys in declaration order
with the omit-empty rules, no whitespace, ``<`` ``>`` ``&`` U+2028 U+2029 escaped. The omit
decisions come from :func:`clusterpulse_core.serde.unstructure`; the key order is re-imposed
here from the attrs declaration (serde writes omittable keys last).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import attrs

from clusterpulse_core.serde import unstructure

_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_GO_ESCAPED = re.compile("[<>&\u2028\u2029]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def ordered(obj: Any) -> Any:
    """The serde form of ``obj`` with object keys in attrs declaration order (recursively)."""
    if attrs.has(type(obj)):
        wire_form = unstructure(obj)
        out: dict[str, Any] = {}
        for field, key in zip(attrs.fields(type(obj)), _wire_keys(obj, wire_form), strict=True):
            if key is not None:
                out[key] = ordered(getattr(obj, field.name))
        return out
    if isinstance(obj, list | tuple):
        return [ordered(item) for item in obj]
    return unstructure(obj)


def _wire_keys(obj: Any, wire_form: dict[str, Any]) -> list[str | None]:
    """The wire key of each attribute of ``obj``, or ``None`` where serde omitted it."""
    from clusterpulse_core.serde import camel, style_of

    style = style_of(type(obj))
    keys: list[str | None] = []
    for field in attrs.fields(type(obj)):
        key = style.rename.get(field.name) or (camel(field.name) if style.case == "camel" else field.name)
        keys.append(key if key in wire_form else None)
    return keys


def go_json(value: Any) -> str:
    """Compact JSON text escaped the way Go's ``encoding/json`` does."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    text = _LONE_SURROGATE.sub("\ufffd", text)
    return _GO_ESCAPED.sub(lambda m: _GO_ESCAPES[m.group()], text)


def canonical_json(spec: Any) -> str:
    """The canonical JSON text of a spec object."""
    return go_json(ordered(spec))


def spec_hash(canonical: str) -> str:
    """The first 8 bytes of SHA-256 of the canonical JSON, as 16 lower-case hex characters."""
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
