"""Partial decoding of list pages: decode only what a program's paths read.

The paths of a program form a tree. Each inner node becomes a msgspec ``Struct`` type holding
just the keys some path continues through (absent keys stay ``UNSET``), inside a union that
still accepts every other JSON type, so a value of an unexpected shape reads as "not found"
instead of failing the page. Leaves (and any node behind an unparsable index) are decoded in
full. Everything else in the page is skipped by the decoder without building Python objects,
which is what makes collection faster than ``json.loads`` of the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Union

import attrs
import msgspec
from clusterpulse_metricsource.paths import Step, step_attr


@attrs.define
class _Node:
    """A node of the path tree."""

    keys: dict[str, _Node] = attrs.field(factory=dict)
    element: _Node | None = None
    leaf: bool = False

    def add(self, steps: Sequence[Step]) -> None:
        node = self
        for step in steps:
            if node.leaf:
                return  # an ancestor is decoded in full already
            if step.bad_index is not None:
                node.leaf = True
                return
            if step.index is not None:
                if node.element is None:
                    node.element = _Node()
                node = node.element
            else:
                node = node.keys.setdefault(step.key, _Node())
        node.leaf = True


class _Opaque(msgspec.Struct, gc=False):
    """Any JSON object whose content no path reads."""


_SCALARS: tuple[Any, ...] = (str, int, float, bool, None)


def _node_type(node: _Node, counter: list[int]) -> Any:
    """The msgspec type decoding ``node``'s value."""
    if node.leaf:
        return Any
    if node.keys:
        counter[0] += 1
        struct_type: Any = msgspec.defstruct(
            f"Partial{counter[0]}",
            [
                (
                    step_attr(key),
                    Union[_node_type(child, counter), msgspec.UnsetType],  # noqa: UP007
                    msgspec.field(default=msgspec.UNSET, name=key),
                )
                for key, child in node.keys.items()
            ],
            gc=False,
        )
    else:
        struct_type = _Opaque
    element_type = _node_type(node.element, counter) if node.element is not None else msgspec.Raw
    element: Any = list[element_type]  # type: ignore[valid-type]
    return Union[(struct_type, element, *_SCALARS)]


def page_decoder(paths: Iterable[Sequence[Step]]) -> msgspec.json.Decoder[Any]:
    """A decoder of list pages (``{"items": [...]}``) reading only ``paths`` of each item."""
    root = _Node()
    for steps in paths:
        root.add(steps)
    item_type = _node_type(root, [0])
    page_type = msgspec.defstruct(
        "PartialPage",
        [("items", Union[list[item_type], None], msgspec.field(default=None))],  # type: ignore[valid-type]  # noqa: UP007
        gc=False,
    )
    return msgspec.json.Decoder(page_type)
