"""Finding 5: namespace and name patterns are matched in linear time and capped in length.

The patterns below made the regular-expression matcher backtrack for minutes (16 ``*?`` then ``*!``
against a 35-character namespace) or, at the length cap, for far longer than the suite's timeout:
these tests bound the matcher by the steps it reports, one per character read, and would time out
(``pytest-timeout``) if it backtracked.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from clusterpulse_metricsource.compiler import SpecError, compile_metric_source, program_from_compiled
from clusterpulse_metricsource.namespaces import NamespaceFilter
from clusterpulse_policy.compiler import CompileError, compile_policy
from clusterpulse_policy.spec import parse_spec

from clusterpulse_core.clock import utcnow
from clusterpulse_core.wildcard import MAX_PATTERN_LENGTH, Wildcard

#: The issue's reproduction: 16 ``*?`` then ``*!``, a 35-character namespace it cannot match.
REPORTED = ("*?" * 16 + "*!", "n" * 35)
#: The longest accepted pattern of the same shape against the longest Kubernetes name.
AT_THE_CAP = ("*?" * ((MAX_PATTERN_LENGTH - 2) // 2) + "*!", "n" * 253)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("pattern", "name"), [REPORTED, AT_THE_CAP], ids=["reported", "at-the-cap"])
def test_a_backtracking_pattern_takes_one_step_per_character(pattern: str, name: str) -> None:
    run = Wildcard.compile(pattern).run(name)
    assert run.matched is False
    assert run.steps <= len(name) + 1
    matching = Wildcard.compile(pattern[:-1]).run(name)  # without the final '!', the name matches
    assert matching.matched is True
    assert matching.steps == len(name) + 1
    assert NamespaceFilter.from_patterns(None, [pattern]).select([name, name + "!"]) == [name]


def _metric_source(include: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "pvcs", "namespace": "clusterpulse"},
        "spec": {
            "source": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespaces": {"include": include}},
            "fields": [{"name": "phase", "path": ".status.phase"}],
        },
    }


def test_a_metricsource_pattern_over_the_cap_is_an_error_naming_it_on_the_hub_and_the_agent() -> None:
    longest = "team-*" + "x" * (MAX_PATTERN_LENGTH - 6)
    program = compile_metric_source(_metric_source(["prod", longest]))
    assert program.namespace_filter is not None and program.namespace_filter.keeps("team-" + "x" * 250)
    with pytest.raises(SpecError) as caught:
        compile_metric_source(_metric_source(["prod", longest + "x"]))
    assert caught.value.field == "spec.source.namespaces.include[1]"
    assert f"longer than {MAX_PATTERN_LENGTH}" in str(caught.value)
    # An agent gets the compiled definition from the hub: an over-long pattern in it is refused there too.
    pushed = attrs.evolve(
        program.compiled,
        source=attrs.evolve(
            program.compiled.source,
            namespaces=attrs.evolve(program.compiled.source.namespaces, include=("prod", longest + "x")),
        ),
    )
    with pytest.raises(SpecError) as caught:
        program_from_compiled(pushed)
    assert caught.value.field == "spec.source.namespaces.include[1]"


def test_a_policy_pattern_over_the_cap_is_an_error_naming_it() -> None:
    def policy(name: str) -> Any:
        return parse_spec(
            {
                "spec": {
                    "identity": {"priority": 10, "subjects": {"groups": ["ops"]}},
                    "access": {"effect": "Allow"},
                    "scope": {
                        "clusters": {
                            "rules": [
                                {
                                    "selector": {"matchNames": ["a"]},
                                    "resources": [{"type": "pods", "filters": {"names": {"allowed": ["web", name]}}}],
                                }
                            ]
                        }
                    },
                }
            }
        )

    longest = "web-*" + "x" * (MAX_PATTERN_LENGTH - 5)
    compiled = compile_policy("p", "clusterpulse", policy(longest), utcnow())
    assert compiled.cluster_rules[0].resources[0].name_patterns[0][0] == longest
    with pytest.raises(CompileError) as caught:
        compile_policy("p", "clusterpulse", policy(longest + "x"), utcnow())
    assert str(caught.value).startswith(
        "spec.scope.clusters.rules[0].resources[0].filters.names.allowed[1]: pattern is"
    ), caught.value
