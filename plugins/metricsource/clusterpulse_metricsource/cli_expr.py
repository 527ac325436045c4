"""``clusterpulse expr``: evaluate one computed-field expression from the command line.

    clusterpulse expr 'round(used / capacity * 100, 2)' --var used=3 --var capacity=7
    42.86

Variable values are read as JSON when they parse (``3`` is an int, ``3.0`` a float, ``true``
a bool, ``null`` nil) and as plain strings otherwise. Errors are printed with a caret under
their position, and the command exits with status 1. The functions are those the enabled
plugins register (the built-ins, and for instance ``shout`` of the example plugin).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click
from clusterpulse_metricsource.errors import ExpressionError
from clusterpulse_metricsource.expr import coerce_result, compile_expression

from clusterpulse_core import serde
from clusterpulse_core.contributions import Contribution

FunctionTable = Mapping[str, Contribution]

RESULT_TYPES = ("float", "integer", "string", "boolean")


def parse_assignments(assignments: Sequence[str]) -> dict[str, Any]:
    """``NAME=VALUE`` options as a context; a value is JSON when it parses, else a string."""
    variables: dict[str, Any] = {}
    for assignment in assignments:
        name, separator, text = assignment.partition("=")
        if not separator or not name:
            raise click.BadParameter(f"expected NAME=VALUE, got {assignment!r}", param_hint="--var")
        try:
            variables[name] = serde.loads(text)
        except ValueError:
            variables[name] = text
    return variables


def render_error(expression: str, error: ExpressionError) -> str:
    """The error message, then the expression with a caret under the error's position."""
    lines = [f"error: {error}"]
    if error.position is not None:
        shown = "".join(" " if char in "\t\r\n" else char for char in expression)
        lines += [f"  {shown}", "  " + " " * error.position + "^"]
    return "\n".join(lines)


def make_expr_command(functions: Callable[[], FunctionTable]) -> click.Command:
    """The ``expr`` command; ``functions()`` gives the function table, asked only when it runs."""

    # Unknown options are kept as arguments, so an expression may start with "-" (`-a * b`);
    # a misspelled option still fails, as an extra argument.
    @click.command("expr", context_settings={"ignore_unknown_options": True})
    @click.argument("expression")
    @click.option(
        "--var",
        "assignments",
        multiple=True,
        metavar="NAME=VALUE",
        help="a variable of the context (repeatable); JSON when it parses, else a string",
    )
    @click.option(
        "--type",
        "result_type",
        type=click.Choice(RESULT_TYPES),
        default=None,
        help="coerce the result as a computed field of this type would",
    )
    def expr_command(expression: str, assignments: tuple[str, ...], result_type: str | None) -> None:
        """Evaluate a MetricSource EXPRESSION with the enabled plugins' functions; print the JSON result."""
        variables = parse_assignments(assignments)
        try:
            compiled = compile_expression(expression, functions())
            value = coerce_result(compiled.evaluate(variables), result_type or "")
        except ExpressionError as exc:
            click.echo(render_error(expression, exc), err=True)
            raise SystemExit(1) from exc
        click.echo(serde.dumps(value).decode())

    return expr_command
