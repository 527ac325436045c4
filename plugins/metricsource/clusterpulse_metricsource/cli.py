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
from collections.abc import Callable, Sequence
from typing import Any

import click
import yaml
from clusterpulse_metricsource.catalog import Catalog
from clusterpulse_metricsource.compiler import SpecError, compile_metric_source
from clusterpulse_metricsource.errors import MetricSourceError
from clusterpulse_metricsource.failures import FailureTally
from clusterpulse_metricsource.program import Program
from clusterpulse_model import CollectedResource

from clusterpulse_core.cliutils import STDIN, fail, input_name, read_text, warn
from clusterpulse_core.serde import dumps, unstructure


def make_metricsource_group(catalog: Callable[[], Catalog]) -> click.Group:
    """The ``metricsource`` command group; ``catalog()`` is asked only when a command runs."""

    @click.group("metricsource")
    def metricsource_group() -> None:
        """Work with MetricSource definitions offline."""

    @metricsource_group.command("eval")
    @click.option(
        "-f",
        "--file",
        "definition",
        required=True,
        metavar="FILE|-",
        help="the MetricSource YAML (or JSON); '-' = stdin",
    )
    @click.option(
        "--objects",
        required=True,
        metavar="FILE|-",
        help="a `kubectl get ... -o json` dump: a List or a single object; '-' = stdin",
    )
    @click.option("--table", is_flag=True, help="print a table instead of JSON")
    def eval_command(definition: str, objects: str, table: bool) -> None:
        """Run a MetricSource over a dump and print the resources and aggregations as stored.

        A plugin function that raises leaves its value null and is reported on stderr as a
        warning naming the field or aggregation and the function.
        """
        if definition == STDIN and objects == STDIN:
            raise click.UsageError("-f and --objects cannot both be '-' (standard input)")
        program = compile_file(definition, catalog())
        tally = FailureTally()
        records = run(program, load_objects(objects), tally)
        aggregations = program.aggregate(records, tally) if program.compiled.aggregations else {}
        for failure in tally.failures():
            warn(failure.describe())
        if table:
            click.echo(render_table(program, records, aggregations))
        else:
            click.echo(dumps({"resources": [unstructure(r) for r in records], "aggregations": aggregations}).decode())

    return metricsource_group


def compile_file(path: str, catalog: Catalog) -> Program:
    """Compile the MetricSource in file ``path`` (``-`` = stdin); an invalid one is reported at its YAML line."""
    text = read_text(path)
    path = input_name(path)
    document = _metric_source_document(path, text)
    try:
        return compile_metric_source(document, catalog)
    except SpecError as exc:
        line = yaml_line(text, exc.field)
        where = f"{path}:{line}: " if line else f"{path}: "
        fail(f"{where}{exc.located}")
    except MetricSourceError as exc:
        fail(f"{path}: {exc}")


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
    """The objects of a dump (``-`` = stdin): the ``items`` of a List, or the single object."""
    text = read_text(path)
    path = input_name(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise click.ClickException(f"{path}: neither JSON nor YAML: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        return list(data["items"])
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        return [data]
    raise click.ClickException(f"{path}: expected a List or an object")


def run(program: Program, objects: Sequence[Any], tally: FailureTally | None = None) -> list[CollectedResource]:
    """Records of the objects the source's namespace patterns keep, capped at ``maxResources``."""
    records = program.records(objects, tally)
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
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
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
