"""``clusterpulse expr``: one expression evaluated from the command line (in process, built-ins only).

The command as the configured CLI builds it, with the enabled plugins' functions, is tested in
test_eval_cli.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import click
import pytest
from click.testing import CliRunner
from clusterpulse_metricsource.cli_expr import make_expr_command
from clusterpulse_metricsource.expr import builtin_function_table

from clusterpulse_core.contributions import Contribution


def invoke(command: click.Command, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(command, list(args))
    return result.exit_code, result.stdout, result.stderr


def run(*args: str) -> tuple[int, str, str]:
    return invoke(make_expr_command(builtin_function_table), *args)


def test_prints_the_json_result() -> None:
    code, out, _ = run("round(used / capacity * 100, 2)", "--var", "used=3", "--var", "capacity=7")
    assert code == 0
    assert json.loads(out) == 42.86


def test_result_type_coerces_like_a_computed_field() -> None:
    code, out, _ = run("round(used / capacity * 100, 2)", "--var", "used=3", "--var", "capacity=7", "--type", "integer")
    assert (code, out) == (0, "42\n")
    assert run("x", "--var", "x=1.5", "--type", "string")[1] == '"1.5"\n'
    assert run("x", "--var", "x=0", "--type", "boolean")[1] == "false\n"


@pytest.mark.parametrize(
    ("assignment", "expected"),
    [
        ("v=3", 3),
        ("v=3.0", 3.0),
        ("v=true", True),
        ("v=null", None),
        ("v=web", "web"),
        ('v="quoted"', "quoted"),
        ("v=", ""),
        ("v=a=b", "a=b"),
    ],
)
def test_variables_are_json_when_they_parse_else_strings(assignment: str, expected: object) -> None:
    code, out, _ = run("v", "--var", assignment)
    assert code == 0
    value = json.loads(out)
    assert value == expected and type(value) is type(expected)


def test_no_variables_means_every_name_is_null() -> None:
    assert run("missing ?? 'fallback'")[1] == '"fallback"\n'


def test_a_syntax_error_shows_a_caret_under_its_position() -> None:
    code, out, err = run("1 + @x")
    assert code == 1
    assert out == ""
    lines = err.splitlines()
    assert "unexpected character" in lines[0] and "position 4" in lines[0]
    assert lines[1] == "  1 + @x"
    assert lines[2] == "      ^"


def test_an_unknown_function_is_an_error_naming_it() -> None:
    code, _, err = run("if(a, 1, 2)")
    assert code == 1
    assert "unknown function: if" in err
    assert err.splitlines()[2] == "  ^"


def test_a_bad_assignment_is_a_usage_error() -> None:
    code, _, err = run("x", "--var", "novalue")
    assert code == 2
    assert "NAME=VALUE" in err


def test_the_function_table_is_asked_for_only_when_the_command_runs() -> None:
    asked: list[int] = []

    def functions() -> Mapping[str, Contribution]:
        asked.append(1)
        return builtin_function_table()

    command = make_expr_command(functions)
    assert asked == []
    assert invoke(command, "upper('a')") == (0, '"A"\n', "")
    assert asked == [1]


def test_the_functions_are_the_ones_the_provider_gives() -> None:
    table = {"twice": Contribution("twice", lambda x: 2 * x, "test", {"min_args": 1, "max_args": 1})}
    command = make_expr_command(lambda: table)
    assert invoke(command, "twice(x)", "--var", "x=21") == (0, "42\n", "")
    code, _, err = invoke(command, "round(1.5)")
    assert code == 1 and "unknown function: round" in err


def test_an_expression_may_start_with_a_minus() -> None:
    assert run("-a * b", "--var", "a=2", "--var", "b=3") == (0, "-6.0\n", "")
    assert run("--var", "x=2.5", "-x", "--type", "integer") == (0, "-2\n", "")
    code, _, err = run("-x", "--vra", "x=1")
    assert code == 2 and "unexpected extra arguments" in err
