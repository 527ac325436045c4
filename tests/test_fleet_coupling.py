"""Only the cluster plugin reads ClusterConnection objects (issue 22, the typed fleet).

Every other plugin, the core and the demo reach the clusters through the cluster plugin's typed
view (``clusterpulse_fleet``, :class:`clusterpulse_model.fleet.FleetCluster`) or the model's
constants, never by the kind's name, API path or spec/status field names as string literals, which
mypy cannot follow. Docstrings and comments may name them; code may not.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The ClusterConnection's kind, plural and the fields only its owner parses.
COUPLING = {"ClusterConnection", "clusterconnections", "collectorStatus", "collectionMode"}
#: The same inside a longer literal: the plural in an API path or resource list, a field reached by its path.
INSIDE = re.compile(r"\bclusterconnections\b|\.(?:collectorStatus|collectionMode)\b")


def _string_literals(text: str) -> list[tuple[int, str]]:
    """``(line, value)`` of every string literal (f-, r- and b-strings too) that is not a docstring-like
    statement; ``value`` is the literal's text between its quotes."""
    found = []
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    for index, token in enumerate(tokens):
        if token.type != tokenize.STRING:
            continue
        before = tokens[index - 1] if index else None
        if before is None or before.type in (tokenize.INDENT, tokenize.NEWLINE, tokenize.NL, tokenize.DEDENT):
            continue  # a bare string statement: a docstring
        found.append((token.start[0], token.string.lstrip("rRbBuUfF").strip("\"'")))
    return found


def _coupled(text: str) -> list[tuple[int, str]]:
    """The literals of ``text`` naming the cluster kind, its plural or its fields."""
    return [(line, value) for line, value in _string_literals(text) if value in COUPLING or INSIDE.search(value)]


def test_the_check_finds_the_couplings_the_core_and_plugins_had() -> None:
    before = (
        'CLUSTER_CONNECTIONS_API = "/apis/clusterpulse.io/v1alpha1/namespaces/{namespace}/clusterconnections/{name}"\n'
        'hub.list("clusterpulse.io/v1alpha1", "clusterconnections", namespace)\n'
        'if owner.get("kind") == "ClusterConnection": pass\n'
        'mode = f"{spec}.collectionMode"\n'
        'message = "a ClusterConnection in collectionMode push"  # prose, not a coupling\n'
    )
    assert [line for line, _ in _coupled(before)] == [1, 2, 3, 4]


def test_no_code_outside_the_cluster_plugin_names_the_cluster_kind_or_its_fields() -> None:
    folders = [ROOT / "clusterpulse_core", ROOT / "demo" / "clusterpulse_demo"]
    folders += [p for p in (ROOT / "plugins").glob("*/clusterpulse_*") if p.is_dir() and p.parent.name != "cluster"]
    offending = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for folder in folders
        for path in sorted(folder.rglob("*.py"))
        if "_pb2" not in path.name
        for line, value in _coupled(path.read_text())
    ]
    assert len(folders) > 5
    assert offending == [], "read the clusters through clusterpulse_fleet / clusterpulse_model.fleet"
