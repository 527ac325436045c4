"""Pure helpers of the Kubernetes API emulator: errors, paths, selectors and patches.

Nothing here does I/O or keeps state; :mod:`kube_api_store` and :mod:`kube_api_http`
build the server semantics on top of these functions.
"""

from __future__ import annotations

import copy
import datetime
import http
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

JSON = Any
ObjectPredicate = Callable[[Mapping[str, Any]], bool]

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def reason_for(code: int) -> str:
    """The Kubernetes ``Status.reason`` conventionally used for an HTTP code."""
    if code in _REASONS:
        return _REASONS[code]
    try:
        return http.HTTPStatus(code).phrase.replace(" ", "")
    except ValueError:
        return "Unknown"


def status_body(code: int, reason: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A Kubernetes ``Status`` object describing a failure."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = dict(details)
    return body


class ApiError(Exception):
    """A Kubernetes API failure: an HTTP code plus the ``Status`` body that explains it."""

    def __init__(self, code: int, reason: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details or {})

    def status(self) -> dict[str, Any]:
        """The ``Status`` body to send to the client."""
        return status_body(self.code, self.reason, self.message, self.details)


def bad_request(message: str) -> ApiError:
    """A 400 BadRequest error."""
    return ApiError(400, "BadRequest", message)


def now_rfc3339() -> str:
    """The current UTC time, as Kubernetes writes timestamps (seconds, ``Z`` suffix)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- paths -------------------------------------------------------------------------------------------

_NAMESPACE_SUBRESOURCES = {"status", "finalize"}


@dataclass(frozen=True)
class ResourcePath:
    """A request path that addresses a resource (collection, object, or subresource)."""

    group: str
    version: str
    plural: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


def parse_resource_path(path: str) -> ResourcePath | None:
    """Split ``/api(s)/...`` into its parts; None for discovery or non-Kubernetes paths."""
    parts = [part for part in path.split("/") if part]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if not rest:
        return None
    namespace: str | None = None
    namespace_subresource = len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES
    if rest[0] == "namespaces" and len(rest) >= 3 and not namespace_subresource:
        namespace, rest = rest[1], rest[2:]
    return ResourcePath(
        group=group,
        version=version,
        plural=rest[0],
        namespace=namespace,
        name=rest[1] if len(rest) > 1 else None,
        subresource="/".join(rest[2:]) or None,
    )


# --- selectors ---------------------------------------------------------------------------------------

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_SET_RE = re.compile(rf"^(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_CMP_RE = re.compile(rf"^(?P<key>{_KEY})\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[^\s,=!<>()]*)$")
_NOT_EXISTS_RE = re.compile(rf"^!\s*(?P<key>{_KEY})$")
_EXISTS_RE = re.compile(rf"^(?P<key>{_KEY})$")
_FIELD_RE = re.compile(r"^(?P<path>[A-Za-z0-9_.]+)\s*(?P<op>==|=|!=)\s*(?P<value>.*)$")

LabelTest = Callable[[Mapping[str, str]], bool]


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses (``a in (x,y),b`` -> 2 terms)."""
    terms: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [term.strip() for term in terms if term.strip()]


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _compare_test(key: str, op: str, value: str) -> LabelTest:
    if op in ("=", "=="):
        return lambda labels: labels.get(key) == value
    if op == "!=":
        return lambda labels: labels.get(key) != value
    bound = _int_or_none(value)
    if bound is None:
        raise bad_request(f"invalid label selector: {key}{op}{value}: value must be an integer")
    sign = 1 if op == ">" else -1

    def test(labels: Mapping[str, str]) -> bool:
        actual = _int_or_none(labels.get(key))
        return actual is not None and (actual - bound) * sign > 0

    return test


def _label_term(term: str) -> LabelTest:
    if match := _SET_RE.match(term):
        key = match["key"]
        values = {value.strip() for value in match["values"].split(",") if value.strip()}
        if match["op"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _NOT_EXISTS_RE.match(term):
        key = match["key"]
        return lambda labels: key not in labels
    if match := _CMP_RE.match(term):
        return _compare_test(match["key"], match["op"], match["value"])
    if match := _EXISTS_RE.match(term):
        key = match["key"]
        return lambda labels: key in labels
    raise bad_request(f"unable to parse requirement: {term!r}")


def parse_label_selector(text: str | None) -> ObjectPredicate | None:
    """Compile a label selector (=, ==, !=, in, notin, exists, !exists, >, <); None if empty."""
    if not text or not text.strip():
        return None
    tests = [_label_term(term) for term in _split_top_level(text)]

    def predicate(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(test(labels) for test in tests)

    return predicate


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The value of a dotted field path as a string; an absent field reads as ``""``."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return ""
        current = current[part]
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


def _field_term(term: str) -> Callable[[Mapping[str, Any]], bool]:
    match = _FIELD_RE.match(term)
    if match is None:
        raise bad_request(f"invalid field selector: {term!r}")
    path, op, value = match["path"], match["op"], match["value"].strip()
    if op == "!=":
        return lambda obj: field_value(obj, path) != value
    return lambda obj: field_value(obj, path) == value


def parse_field_selector(text: str | None) -> ObjectPredicate | None:
    """Compile a field selector (``path=value``, ``==``, ``!=``, comma separated); None if empty.

    Any dotted path is accepted (``metadata.name``, ``metadata.namespace``, ``spec.nodeName``,
    ``status.phase``, ...), which is more lenient than a real API server.
    """
    if not text or not text.strip():
        return None
    tests = [_field_term(term.strip()) for term in text.split(",") if term.strip()]
    return lambda obj: all(test(obj) for test in tests)


def all_of(*predicates: ObjectPredicate | None) -> ObjectPredicate | None:
    """Combine predicates with AND, skipping the Nones; None when nothing is left."""
    active = [predicate for predicate in predicates if predicate is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]
    return lambda obj: all(predicate(obj) for predicate in active)


# --- patches -----------------------------------------------------------------------------------------


def merge_patch(target: JSON, patch: JSON) -> JSON:
    """Apply an RFC 7386 JSON merge patch without mutating ``target`` (null deletes a key)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "Invalid", f"invalid JSON pointer: {path!r}")
    return [_unescape(token) for token in path[1:].split("/")]


def _walk(doc: JSON, tokens: list[str]) -> JSON:
    for token in tokens:
        doc = _child(doc, token)
    return doc


def _child(container: JSON, token: str) -> JSON:
    try:
        if isinstance(container, list):
            return container[int(token)]
        return container[token]
    except (KeyError, IndexError, ValueError, TypeError):
        raise ApiError(422, "Invalid", f"JSON patch path not found: {token!r}") from None


def _add(doc: JSON, tokens: list[str], value: JSON) -> JSON:
    if not tokens:
        return value
    parent, last = _walk(doc, tokens[:-1]), tokens[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if not 0 <= index <= len(parent):
            raise ApiError(422, "Invalid", f"JSON patch index out of range: {last}")
        parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise ApiError(422, "Invalid", f"JSON patch cannot add into a scalar at {last!r}")
    return doc


def _remove(doc: JSON, tokens: list[str]) -> tuple[JSON, JSON]:
    if not tokens:
        raise ApiError(422, "Invalid", "JSON patch cannot remove the whole document")
    parent, last = _walk(doc, tokens[:-1]), tokens[-1]
    removed = _child(parent, last)
    if isinstance(parent, list):
        del parent[int(last)]
    else:
        del parent[last]
    return doc, removed


def _apply_operation(doc: JSON, operation: Mapping[str, Any]) -> JSON:
    op = operation.get("op")
    tokens = _pointer(str(operation.get("path", "")))
    if op == "add":
        return _add(doc, tokens, copy.deepcopy(operation.get("value")))
    if op == "remove":
        return _remove(doc, tokens)[0]
    if op == "replace":
        doc, _ = _remove(doc, tokens) if tokens else (doc, None)
        return _add(doc, tokens, copy.deepcopy(operation.get("value")))
    if op in ("move", "copy"):
        source = _pointer(str(operation.get("from", "")))
        if op == "move":
            doc, value = _remove(doc, source)
        else:
            value = copy.deepcopy(_walk(doc, source))
        return _add(doc, tokens, value)
    if op == "test":
        if _walk(doc, tokens) != operation.get("value"):
            raise ApiError(422, "Invalid", f"JSON patch test failed at {operation.get('path')!r}")
        return doc
    raise ApiError(422, "Invalid", f"unknown JSON patch operation: {op!r}")


def json_patch(doc: JSON, operations: JSON) -> JSON:
    """Apply an RFC 6902 JSON patch (add, remove, replace, move, copy, test) to a copy of ``doc``."""
    if not isinstance(operations, list):
        raise bad_request("a JSON patch must be a list of operations")
    result = copy.deepcopy(doc)
    for operation in operations:
        if not isinstance(operation, Mapping):
            raise bad_request("a JSON patch operation must be an object")
        result = _apply_operation(result, operation)
    return result


def spec_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether anything outside ``metadata``/``status``/``apiVersion``/``kind`` differs."""
    ignored = {"metadata", "status", "apiVersion", "kind"}
    old_rest = {key: value for key, value in old.items() if key not in ignored}
    new_rest = {key: value for key, value in new.items() if key not in ignored}
    return old_rest != new_rest
