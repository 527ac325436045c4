"""Only the cluster plugin reads ClusterConnection objects (issue 22, the typed fleet).

Every other plugin, the core and the demo reach the clusters through the cluster plugin's typed
view (``clusterpulse_fleet``, :class:`clusterpulse_model.fleet.FleetCluster`) or the model's
constants, never by the kind's name, API path or spec/status field names as string literals, which
mypy cannot follow. Docstrings and comments may name them; code may not.
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The ClusterConnection's kind, plural and the fields only its owner parses.
COUPLING = {"ClusterConnection", "clusterconnections", "collectorStatus", "collectionMode"}


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """``(line, value)`` of every plain string literal that is not a docstring-like statement."""
    found = []
    tokens = list(tokenize.generate_tokens(io.StringIO(path.read_text()).readline))
    for index, token in enumerate(tokens):
        if token.type != tokenize.STRING or token.string[:1] not in "\"'":
            continue
        before = tokens[index - 1] if index else None
        if before is not None and before.type in (tokenize.INDENT, tokenize.NEWLINE, tokenize.NL, tokenize.DEDENT):
            continue  # a bare string statement: a docstring
        found.append((token.start[0], token.string.strip("\"'")))
    return found


def test_no_code_outside_the_cluster_plugin_names_the_cluster_kind_or_its_fields() -> None:
    folders = [ROOT / "clusterpulse_core", ROOT / "demo" / "clusterpulse_demo"]
    folders += [p for p in (ROOT / "plugins").glob("*/clusterpulse_*") if p.is_dir() and p.parent.name != "cluster"]
    offending = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for folder in folders
        for path in sorted(folder.rglob("*.py"))
        if "_pb2" not in path.name
        for line, value in _string_literals(path)
        if value in COUPLING
    ]
    assert len(folders) > 5
    assert offending == [], "read the clusters through clusterpulse_fleet / clusterpulse_model.fleet"
