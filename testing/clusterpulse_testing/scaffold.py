"""``clusterpulse plugin new NAME``: a working plugin package to start from.

The package has a ``pyproject.toml`` with the entry point, a plugin class with one hook
implementation (an expression function) and a test that loads the plugin by name and uses
the ``kube_api`` fixture. ``pip install -e .`` then ``pytest`` passes right away.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
#: Longest plugin name accepted (it becomes a distribution, a package and a function name).
MAX_NAME = 40


class ScaffoldError(Exception):
    """The plugin cannot be created (bad name, target exists); one line."""


@attrs.frozen
class Names:
    """Every name derived from the plugin's name."""

    plugin: str
    distribution: str
    package: str
    cls: str
    function: str

    @classmethod
    def of(cls, name: str) -> Names:
        """``audit-log`` -> distribution ``clusterpulse-audit-log``, package ``clusterpulse_audit_log``..."""
        if len(name) > MAX_NAME or not _NAME.fullmatch(name):
            raise ScaffoldError(
                f"plugin name {name!r} is not valid: lower-case letters and digits, words joined by '-' or '_', "
                f"starting with a letter, at most {MAX_NAME} characters"
            )
        words = re.split(r"[-_]", name)
        ident = "_".join(words)
        return cls(
            plugin=name,
            distribution=f"clusterpulse-{'-'.join(words)}",
            package=f"clusterpulse_{ident}",
            cls="".join(word.capitalize() for word in words) + "Plugin",
            function=words[0] + "".join(word.capitalize() for word in words[1:]) + "Twice",
        )


PYPROJECT = """[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "{distribution}"
version = "0.1.0"
description = "A ClusterPulse plugin"
requires-python = ">=3.11"
dependencies = ["clusterpulse-core", "clusterpulse-model"]

[project.optional-dependencies]
test = ["clusterpulse-testing", "pytest>=8"]

[project.entry-points."clusterpulse.plugins"]
{plugin} = "{package}.plugin:{cls}"

[tool.setuptools]
packages = ["{package}"]

[tool.pytest.ini_options]
testpaths = ["tests"]
addopts = "-p no:cacheprovider -p no:kmock"
"""

INIT = '''"""The {plugin} plugin for ClusterPulse."""
'''

PLUGIN = '''"""The ``{plugin}`` plugin: enable it with ``plugins = [..., "{plugin}"]`` in clusterpulse.toml.

Start here: add hooks from ``clusterpulse_core.hookspecs`` (a kind, a collector, settings,
a storage backend...). The author's guide and the reference are in the ClusterPulse docs.
"""

from __future__ import annotations

from typing import Any

from clusterpulse_core import hookimpl
from clusterpulse_core.hookspecs import Register
from clusterpulse_model.values import to_number


def twice(value: Any) -> float:
    """``{function}(21)`` -> ``42.0``: the value as a number (the expression rules), doubled."""
    return to_number(value) * 2


class {cls}:
    """What the {plugin} plugin adds to ClusterPulse."""

    clusterpulse_api_version = 1

    @hookimpl
    def clusterpulse_register_functions(self, register: Register) -> None:
        """The expression function ``{function}(x)`` for MetricSource computed fields."""
        register("{function}", twice, min_args=1, max_args=1)
'''

TEST = '''"""Tests of the {plugin} plugin, with the fixtures of clusterpulse-testing."""

from __future__ import annotations

from typing import Any

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.plugins import PluginHost


def test_the_plugin_loads_by_name_and_registers_its_function() -> None:
    host = PluginHost(["{plugin}"])  # found through the entry point, as `clusterpulse run` finds it
    assert host.hooks_of("{plugin}") == ["clusterpulse_register_functions"]
    function = host.contributions.functions["{function}"]
    assert function.impl(21) == 42.0
    assert function.impl("1.5") == 3.0  # numeric text is a number
    assert function.impl(None) == 0.0  # null is 0 in arithmetic


def test_the_kube_api_fixture_serves_what_it_is_seeded_with(kube_api: Any) -> None:
    api = kube_api(objects=[{{"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {{"name": "settings", "namespace": "default"}}, "data": {{"k": "v"}}}}])
    client = KubeClient(api.api_client())
    names = [item["metadata"]["name"] for item in client.list_items("/api/v1/namespaces/default/configmaps")]
    assert names == ["settings"]


def test_the_manager_runs_with_the_plugin(kube_api: Any, clusterpulse_manager: Any) -> None:
    """The real manager with this plugin loaded by name, on a hub emulator (the public test harness)."""
    harness = clusterpulse_manager(["{plugin}"], kube_api())
    assert harness.manager.wait_synced(harness.timeout)
    assert harness.runtime.plugins.hooks_of("{plugin}") == ["clusterpulse_register_functions"]
    assert harness.runtime.plugins.contributions.functions["{function}"].impl(2) == 4.0
'''

README = """# {distribution}

A ClusterPulse plugin (entry point `{plugin}`).

```console
pip install -e '.[test]'
pytest
```

Enable it in `clusterpulse.toml` (`[clusterpulse] plugins = [..., "{plugin}"]`); `clusterpulse
plugins` then lists it with its hooks, and `clusterpulse expr '{function}(21)'` (with the
`metricsource` plugin enabled) prints `42.0`.
"""


def create(name: str, directory: str | Path = ".") -> Path:
    """Write the package ``clusterpulse-<name>/`` under ``directory``; returns its path."""
    names = Names.of(name)
    root = Path(directory) / names.distribution
    if root.exists():
        raise ScaffoldError(f"{root}: already exists; choose another name or directory")
    values = attrs.asdict(names)
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"{names.package}/__init__.py": INIT,
        f"{names.package}/plugin.py": PLUGIN,
        "tests/test_plugin.py": TEST,
    }
    for relative, template in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**values), encoding="utf-8")
    return root
