"""MkDocs hook: Sphinx cross-reference roles in docstrings render as code, not as literal markup.

The docstrings use Sphinx roles (``:class:`Fence```, ``:meth:`~KubeClient.get```) so they read well
in an editor and in ``help()``; mkdocstrings renders them as ``:class:<code>Fence</code>``. This hook
(``hooks:`` in mkdocs.yml) keeps the name as code and drops the role, and a leading ``~`` keeps only
the last dotted part, as Sphinx shows it. ``scripts/test.sh`` checks the built site has no role left.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|data|mod|attr|exc|obj|const):<code>(~?)([^<]*)</code>")


def _code(match: re.Match[str]) -> str:
    short, name = match.group(1), match.group(2)
    return f"<code>{name.rsplit('.', 1)[-1] if short else name}</code>"


def on_page_content(html: str, **_: Any) -> str:
    """Replace every rendered role with the code it names."""
    return _ROLE.sub(_code, html)
