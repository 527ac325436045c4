"""MkDocs hook: the hookspec table of docs/plugins.md, generated from the specifications.

``<!-- hookspec-table -->`` in a page becomes a table of every hook the core and the installed
project plugins declare (hook, declared by, called how), read from a
:class:`clusterpulse_core.plugins.PluginHost` loading those plugins: the table cannot drift from
the code. ``tests/test_reference_pages.py`` checks the built page lists every declared hook.
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- hookspec-table -->"


def hookspec_markdown() -> str:
    """The table, as Markdown."""
    from clusterpulse_core.plugins import PluginHost, installed_plugins, plugin_defaults

    installed = {plugin.name for plugin in installed_plugins()}
    host = PluginHost([name for name in plugin_defaults().plugins if name in installed])
    lines = ["| hook | declared by | called how |", "|---|---|---|"]
    for row in host.hookspec_table():
        lines.append(f"| `{row.hook}` | {row.declared_by} | {row.called.replace('|', '/')} |")
    return "\n".join(lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace the marker with the generated table."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, hookspec_markdown())
