"""``clusterpulse expr``: one expression evaluated from the command line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from clusterpulse_metricsource.cli_expr import expr_command


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(expr_command, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_prints_the_json_result() -> None:
    code, out, _ = run("round(used / capacity * 100, 2)", "--var", "used=3", "--var", "capacity=7")
    assert code == 0
    assert json.loads(out) == 42.86


def test_result_type_coerces_like_a_computed_field() -> None:
    code, out, _ = run("round(used / capacity * 100, 2)", "--var", "used=3", "--var", "capacity=7",
                       "--type", "integer")
    assert (code, out) == (0, "42\n")
    assert run("x", "--var", "x=1.5", "--type", "string")[1] == '"1.5"\n'
    assert run("x", "--var", "x=0", "--type", "boolean")[1] == "false\n"


@pytest.mark.parametrize(("assignment", "expected"), [
    ("v=3", 3), ("v=3.0", 3.0), ("v=true", True), ("v=null", None), ("v=web", "web"),
    ('v="quoted"', "quoted"), ("v=", ""), ("v=a=b", "a=b"),
])
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
