"""Evaluation order of computed fields (M6): dependencies first, cycles reported by name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from clusterpulse_metricsource.errors import CompileError


class CircularDependencyError(CompileError):
    """Computed fields that depend on each other in a cycle; ``cycle`` is the path (first = last)."""

    def __init__(self, cycle: Sequence[str]) -> None:
        self.cycle = tuple(cycle)
        super().__init__(f"circular dependency: {' -> '.join(self.cycle)}")


def evaluation_order(references: Mapping[str, Sequence[str]]) -> list[str]:
    """Computed names ordered so each comes after the computed names it references.

    ``references`` maps each computed name (in spec order) to the names its expression uses;
    names that are not computed fields (extracted fields, unknown names) are ignored here.
    Ties keep spec order. Raises :class:`CircularDependencyError` naming the first cycle found.
    """
    order: list[str] = []
    done: set[str] = set()
    for root in references:
        if root in done:
            continue
        # Iterative depth-first search: (name, iterator over its computed references).
        path: list[str] = [root]
        on_path = {root}
        stack = [iter([r for r in references[root] if r in references])]
        while stack:
            ref = next(stack[-1], None)
            if ref is None:
                stack.pop()
                name = path.pop()
                on_path.discard(name)
                done.add(name)
                order.append(name)
                continue
            if ref in done:
                continue
            if ref in on_path:
                raise CircularDependencyError([*path[path.index(ref) :], ref])
            path.append(ref)
            on_path.add(ref)
            stack.append(iter([r for r in references[ref] if r in references]))
    return order
