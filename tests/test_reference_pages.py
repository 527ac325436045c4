"""The generated reference shows the public attrs classes' fields and has a ``serde`` page.

Builds the documentation with the project's own ``mkdocs.yml`` (as scripts/test.sh does) and
looks for the anchors mkdocstrings gives each documented field.
"""

from __future__ import annotations

import subprocess
import sys
from html import escape
from pathlib import Path

import attrs

from clusterpulse_core.context import ReconcileContext
from clusterpulse_core.kinds import ReconcileResult, ResourceKind
from clusterpulse_core.plugins import CORE, HookSpecRow, PluginHost, plugin_defaults
from clusterpulse_core.store import StorageBackend

ROOT = Path(__file__).resolve().parent.parent


def test_reference_pages_list_every_attrs_field_and_serde(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    pages = {"kinds": (ResourceKind, ReconcileResult), "context": (ReconcileContext,), "store": (StorageBackend,)}
    for page, classes in pages.items():
        html = (site / "reference" / page / "index.html").read_text()
        for cls in classes:
            names = [f.name for f in attrs.fields(cls)] if attrs.has(cls) else ["name"]
            missing = [name for name in names if f'id="{cls.__module__}.{cls.__qualname__}.{name}"' not in html]
            assert not missing, (page, cls.__qualname__, missing)
    serde = (site / "reference" / "serde" / "index.html").read_text()
    assert 'id="clusterpulse_core.serde.structure"' in serde and 'id="clusterpulse_core.serde.unstructure"' in serde
    # The hookspec table of plugins.md is generated from the specifications: every declared hook,
    # its declarer and how it is called, in one row; and the reference shows each plugin's hooks.
    plugins_page = (site / "plugins" / "index.html").read_text()
    assert "hookspec-table -->" not in plugins_page
    hooks_page = (site / "reference" / "hooks" / "index.html").read_text()
    for row in PluginHost(list(plugin_defaults().plugins)).hookspec_table():
        cells = (
            f"<td><code>{row.hook}</code></td>\n<td>{row.declared_by}</td>\n<td>{escape(row.called, quote=False)}</td>"
        )
        assert cells in plugins_page, row
        assert f'id="{hook_module(row)}.{row.hook}"' in hooks_page, row


def hook_module(row: HookSpecRow) -> str:
    """The module a hook's specification is documented under in the reference."""
    return "clusterpulse_core.hookspecs" if row.declared_by == CORE else f"clusterpulse_{row.declared_by}.hookspecs"
