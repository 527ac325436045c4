"""The one converter: every wire format decision for stored and exchanged data lives here.

Rules (docs/compatibility.md#redis-conventions):

* Keys are the attribute names (snake_case) unless the class is declared camelCase with
  :func:`wire`; single fields can be renamed (``_id``) or omitted when empty.
* Lists and maps are never ``null``: ``None`` read for a collection becomes empty, and
  collections are written as ``[]`` / ``{}``.
* Times are RFC 3339 in UTC with ``Z``: the *seconds* form for cluster, node, operator and
  registry values, the *nano* form (fraction kept, trailing zeros dropped) for MetricSource
  values.

JSON bytes are produced and parsed by msgspec, the project's one JSON codec.

Unstructuring is on the hot path of every store (thousands of objects per reconcile), so the
hooks below avoid per-element dispatch where the element type already says what to do:
JSON scalars in ``dict[str, Any]`` pass through, sequences of objects call the element's
generated function directly, and each time form has its own cached formatter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal, TypeVar, get_args, get_origin

import attrs
import cattrs
import msgspec
from cattrs.fns import identity
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

T = TypeVar("T")
TimeForm = Literal["seconds", "nano"]

_WIRE_ATTR = "__clusterpulse_wire__"


@attrs.frozen
class WireStyle:
    """How one attrs class looks on the wire (set with :func:`wire`)."""

    case: Literal["snake", "camel"] = "snake"
    time: TimeForm = "seconds"
    rename: Mapping[str, str] = attrs.field(factory=dict)
    omit_empty: frozenset[str] = frozenset()


def wire(
    *,
    case: Literal["snake", "camel"] = "snake",
    time: TimeForm = "seconds",
    rename: Mapping[str, str] | None = None,
    omit_empty: tuple[str, ...] = (),
) -> Callable[[type[T]], type[T]]:
    """Class decorator declaring a class's wire style (key case, time form, renames, omissions).

    ``omit_empty`` names attributes left out of the output when they equal their (empty)
    default, as Go's ``omitempty`` does.
    """

    def mark(cls: type[T]) -> type[T]:
        setattr(cls, _WIRE_ATTR, WireStyle(case, time, dict(rename or {}), frozenset(omit_empty)))
        return cls

    return mark


def style_of(cls: type) -> WireStyle:
    """The wire style declared for ``cls`` (snake_case, seconds form by default)."""
    style = getattr(cls, _WIRE_ATTR, None)
    return style if isinstance(style, WireStyle) else WireStyle()


def camel(name: str) -> str:
    """``display_name`` -> ``displayName``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@lru_cache(maxsize=4096)
def format_time(value: datetime, form: TimeForm = "seconds") -> str:
    """RFC 3339 in UTC with ``Z``; ``nano`` keeps the fraction without trailing zeros.

    Cached: one reconcile writes the same few timestamps thousands of times.
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    elif value.utcoffset():
        value = value.astimezone(UTC)
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if form == "nano" and value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    return text + "Z"


_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|z|[+-]\d{2}:\d{2})$")


def parse_time(text: str) -> datetime:
    """Parse any RFC 3339 time (fractions beyond microseconds are truncated); raise ValueError."""
    match = _RFC3339.match(text.strip())
    if not match:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    iso_zone = "+00:00" if zone in ("Z", "z") else zone
    parsed = datetime.fromisoformat(f"{year}-{month}-{day}T{hour}:{minute}:{second}.{micro:06d}{iso_zone}")
    return parsed.astimezone(UTC)


#: Values of a ``dict[str, Any]`` that are already JSON-ready (exact classes: subclasses such
#: as enums still go through the converter).
_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _is_homogeneous_sequence(tp: Any) -> bool:
    """``tuple[X, ...]`` or ``list[X]``."""
    origin, args = get_origin(tp), get_args(tp)
    return (origin is tuple and len(args) == 2 and args[1] is Ellipsis) or (origin is list and len(args) == 1)


def _is_str_keyed_dict(tp: Any) -> bool:
    """``dict[str, X]``."""
    args = get_args(tp)
    return get_origin(tp) is dict and len(args) == 2 and args[0] is str


def _is_collection(tp: Any) -> bool:
    origin = get_origin(tp) or tp
    return origin in (tuple, list, dict, set, frozenset) or (isinstance(origin, type) and issubclass(origin, Mapping))


def _build_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=False)

    def unstructure_factory(cls: type) -> Callable[[Any], dict[str, Any]]:
        style = style_of(cls)
        overrides: dict[str, Any] = {}
        for field in attrs.fields(cls):
            name = style.rename.get(field.name) or (camel(field.name) if style.case == "camel" else field.name)
            time_hook = None
            if field.type in (datetime, "datetime"):
                time_hook = _TIME_FORMATTERS[style.time]
            overrides[field.name] = override(
                rename=name,
                omit_if_default=field.name in style.omit_empty,
                unstruct_hook=time_hook,
            )
        return make_dict_unstructure_fn(cls, conv, **overrides)

    def structure_factory(cls: type) -> Callable[[Mapping[str, Any], Any], Any]:
        style = style_of(cls)
        overrides: dict[str, Any] = {}
        for field in attrs.fields(cls):
            name = style.rename.get(field.name) or (camel(field.name) if style.case == "camel" else field.name)
            overrides[field.name] = override(rename=name)
        return make_dict_structure_fn(cls, conv, **overrides)

    conv.register_unstructure_hook_factory(attrs.has, unstructure_factory)
    conv.register_structure_hook_factory(attrs.has, structure_factory)
    conv.register_unstructure_hook(datetime, _TIME_FORMATTERS["seconds"])
    conv.register_structure_hook(datetime, lambda v, _: v if isinstance(v, datetime) else parse_time(v))

    # Collections are never null: None reads as empty.
    def collection_factory(tp: Any) -> Callable[[Any, Any], Any]:
        origin = get_origin(tp) or tp
        args = get_args(tp)

        def hook(value: Any, _: Any) -> Any:
            if value is None:
                return origin() if origin is not Mapping else {}
            if origin in (tuple,) and args and args[-1] is Ellipsis:
                return tuple(conv.structure(v, args[0]) for v in value)
            if origin in (list,) and args:
                return [conv.structure(v, args[0]) for v in value]
            if origin in (dict,) or (isinstance(origin, type) and issubclass(origin, Mapping)):
                if args:
                    return {conv.structure(k, args[0]): conv.structure(v, args[1]) for k, v in value.items()}
                return dict(value)
            return origin(value)

        return hook

    conv.register_structure_hook_factory(_is_collection, collection_factory)

    def sequence_unstructure_factory(tp: Any) -> Callable[[Any], list[Any]]:
        # A list, as cattrs's own hook makes of any sequence.
        element = conv.get_unstructure_hook(get_args(tp)[0])
        if element is identity:
            return list

        def unstructure_sequence(value: Any) -> list[Any]:
            return [element(item) for item in value]

        return unstructure_sequence

    def dict_unstructure_factory(tp: Any) -> Callable[[Any], dict[str, Any]]:
        value_type = get_args(tp)[1]
        element = conv.get_unstructure_hook(value_type)
        if element is identity:
            return dict
        unstructure_any = conv.unstructure
        if value_type is Any:

            def unstructure_any_dict(value: Any) -> dict[str, Any]:
                return {
                    key: item if item.__class__ in _JSON_SCALARS else unstructure_any(item)
                    for key, item in value.items()
                }

            return unstructure_any_dict

        def unstructure_dict(value: Any) -> dict[str, Any]:
            return {key: element(item) for key, item in value.items()}

        return unstructure_dict

    conv.register_unstructure_hook_factory(_is_homogeneous_sequence, sequence_unstructure_factory)
    conv.register_unstructure_hook_factory(_is_str_keyed_dict, dict_unstructure_factory)
    return conv


def _cached_formatter(form: TimeForm) -> Callable[[datetime], str]:
    """:func:`format_time` for one form, cached on the datetime alone (no wrapper per call)."""

    @lru_cache(maxsize=4096)
    def formatter(value: datetime) -> str:
        return format_time(value, form)

    return formatter


#: The unstructure hook of each time form.
_TIME_FORMATTERS: dict[TimeForm, Callable[[datetime], str]] = {
    "seconds": _cached_formatter("seconds"),
    "nano": _cached_formatter("nano"),
}


#: The converter. Use :func:`unstructure` / :func:`structure` rather than reaching for it.
converter = _build_converter()
_encoder = msgspec.json.Encoder()


def unstructure(obj: Any) -> Any:
    """The JSON-ready value (dicts, lists, strings, numbers) of a model object."""
    return converter.unstructure(obj)


def structure(data: Any, cls: type[T]) -> T:
    """Build a model object from JSON-ready data (wire names), validating types."""
    return converter.structure(data, cls)


def dumps(obj: Any, as_type: Any = None) -> bytes:
    """Compact JSON bytes of a model object or of plain JSON-ready data.

    ``as_type`` (e.g. ``tuple[PodSummary, ...]``) picks the converter's hook from the declared
    type instead of from each element's class: the same bytes, without a dispatch per element
    of a long sequence.
    """
    return _encoder.encode(converter.unstructure(obj, unstructure_as=as_type))


def loads(data: bytes | str) -> Any:
    """Parse JSON bytes into plain Python values."""
    return msgspec.json.decode(data)
