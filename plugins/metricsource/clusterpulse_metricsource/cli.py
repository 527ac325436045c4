"""``clusterpulse metricsource eval``: an offline dry-run of a MetricSource over a ``kubectl`` dump.

    kubectl get pods -A -o json > pods.json
    clusterpulse metricsource eval -f metricsource.yaml --objects pods.json [--table]

prints ``{"resources": [...], "aggregations": {...}}`` exactly as they would be stored (the
namespace patterns of the source apply; the label selector is left to ``kubectl -l``). A
definition that does not compile is reported against its YAML field and line, exit status 1.
The functions, aggregations, field types and filter operators are those of the plugins the
config file enables.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
import yaml
from clusterpulse_metricsource.catalog import Catalog
from clusterpulse_metricsource.compiler import SpecError, compile_metric_source
from clusterpulse_metricsource.errors import MetricSourceError
from clusterpulse_metricsource.program import Program

from clusterpulse_core.model import CollectedResource
from clusterpulse_core.serde import dumps, unstructure


def make_metricsource_group(catalog: Callable[[], Catalog]) -> click.Group:
    """The ``metricsource`` command group; ``catalog()`` is asked only when a command runs."""

    @click.group("metricsource")
    def metricsource_group() -> None:
        """Work with MetricSource definitions offline."""

    @metricsource_group.command("eval")
    @click.option("-f", "--file", "definition", required=True, type=click.Path(exists=True, dir_okay=False),
                  help="the MetricSource YAML (or JSON)")
    @click.option("--objects", required=True, type=click.Path(exists=True, dir_okay=False),
                  help="a `kubectl get ... -o json` dump: a List or a single object")
    @click.option("--table", is_flag=True, help="print a table instead of JSON")
    def eval_command(definition: str, objects: str, table: bool) -> None:
        """Run a MetricSource over a dump and print the resources and aggregations as stored."""
        program = compile_file(definition, catalog())
        records = run(program, load_objects(objects))
        aggregations = program.aggregate(records) if program.compiled.aggregations else {}
        if table:
            click.echo(render_table(program, records, aggregations))
        else:
            click.echo(dumps({"resources": [unstructure(r) for r in records],
                              "aggregations": aggregations}).decode())

    return metricsource_group


def compile_file(path: str, catalog: Catalog) -> Program:
    """Compile the MetricSource in file ``path``; an invalid one is reported at its YAML line, exit 1."""
    text = Path(path).read_text()
    document = _metric_source_document(path, text)
    try:
        return compile_metric_source(document, catalog)
    except SpecError as exc:
        line = yaml_line(text, exc.field)
        where = f"{path}:{line}: " if line else f"{path}: "
        click.echo(f"error: {where}{exc.located}", err=True)
        sys.exit(1)
    except MetricSourceError as exc:
        click.echo(f"error: {path}: {exc}", err=True)
        sys.exit(1)


def _metric_source_document(path: str, text: str) -> dict[str, Any]:
    try:
        documents = [d for d in yaml.safe_load_all(text) if d]
    except yaml.YAMLError as exc:
        raise click.ClickException(f"{path}: not valid YAML: {exc}") from exc
    for document in documents:
        if isinstance(document, dict) and document.get("kind", "MetricSource") == "MetricSource":
            return document
    raise click.ClickException(f"{path}: no MetricSource document found")


def load_objects(path: str) -> list[Any]:
    """The objects of a dump: the ``items`` of a List, or the single object."""
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError:
        try:
            data = yaml.safe_load(Path(path).read_text())
        except yaml.YAMLError as exc:
            raise click.ClickException(f"{path}: neither JSON nor YAML: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        return list(data["items"])
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        return [data]
    raise click.ClickException(f"{path}: expected a List or an object")


def run(program: Program, objects: Sequence[Any]) -> list[CollectedResource]:
    """Records of the objects the source's namespace patterns keep, capped at ``maxResources``."""
    records = program.records(objects)
    selector = program.namespace_filter
    if selector is not None and program.compiled.source.scope != "Cluster":
        records = [r for r in records if selector.keeps(r.namespace)]
    return records[: program.compiled.collection.max_resources]


_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def yaml_line(text: str, field: str) -> int | None:
    """The 1-based line of spec field ``spec.a[1].b`` in the YAML text, or of its nearest ancestor."""
    if not field:
        return None
    try:
        node = next(iter(yaml.compose_all(text)), None)
    except yaml.YAMLError:
        return None
    line = None
    for key, index in _PATH_PART.findall(field):
        if node is None:
            break
        line = node.start_mark.line + 1
        if key and isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        elif index and isinstance(node, yaml.SequenceNode) and int(index) < len(node.value):
            node = node.value[int(index)]
        else:
            node = None
    if node is not None:
        line = node.start_mark.line + 1
    return line


def render_table(program: Program, records: Sequence[CollectedResource], aggregations: dict[str, Any]) -> str:
    """Resources as rows (id, then every field), followed by one line per aggregation."""
    compiled = program.compiled
    columns = [f.name for f in compiled.fields] + [c.name for c in compiled.computed]
    rows = [["RESOURCE", *(c.upper() for c in columns)]]
    rows += [[r.id, *(_cell(r.values.get(c)) for c in columns)] for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    if aggregations:
        lines.append("")
        lines += [f"{name}: {_cell(value)}" for name, value in aggregations.items()]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "<none>"
    if isinstance(value, str):
        return value
    return dumps(value).decode()
