"""The documentation (README.md and docs/) says what the code offers: every setting, env var and command."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import click

from clusterpulse_core.cli import cli
from clusterpulse_core.config import CoreSettings
from clusterpulse_core.plugins import PluginHost

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()
DOCS = README + "\n".join(path.read_text() for path in sorted((ROOT / "docs").rglob("*.md")))


def test_every_setting_and_env_var_is_documented() -> None:
    host = PluginHost(["redis", "cluster", "registry", "metricsource", "policy", "alerts", "ingester", "vmwriter"])
    classes = {"clusterpulse": CoreSettings, **{k: v for k, v in host.settings_classes().items() if v}}
    missing = []
    for section, cls in classes.items():
        for field in attrs.fields(cls):
            if f"`{field.name}`" not in DOCS:
                missing.append(f"{section}.{field.name}")
            env = field.metadata.get("env")
            if env and f"`{env}`" not in DOCS:
                missing.append(env)
    assert not missing, f"undocumented in README.md or docs/: {missing}"


def test_every_core_command_is_documented() -> None:
    def names(group: click.Group, prefix: str = "") -> list[str]:
        found = []
        for name, command in group.commands.items():
            full = f"{prefix}{name}"
            if isinstance(command, click.Group):
                found += names(command, full + " ")
            else:
                found.append(full)
        return found

    missing = [name for name in names(cli) if f"clusterpulse {name}" not in DOCS]
    assert not missing, f"commands not in README.md or docs/: {missing}"


def test_readme_opens_with_the_two_commands_and_points_to_existing_docs() -> None:
    first_block = README.split("```bash", 1)[1].split("```", 1)[0].strip().splitlines()
    assert first_block == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    assert (ROOT / "scripts" / "demo.sh").exists()
    links = re.findall(r"\]\((docs/[^)#]+)", README)
    assert links and all((ROOT / link).exists() for link in links), links


def test_metricsource_reference_matches_the_plugin_readme() -> None:
    plugin = (ROOT / "plugins" / "metricsource" / "README.md").read_text()
    body = plugin[plugin.index("```yaml") : plugin.index("## Performance")].rstrip()
    demoted = re.sub(r"^(#{2,3}) ", lambda m: "#" * (len(m.group(1)) + 1) + " ", body, flags=re.M)
    assert demoted in (ROOT / "docs" / "kinds.md").read_text(), (
        "docs/kinds.md's MetricSource section differs from plugins/metricsource/README.md"
    )


def test_the_median_example_skips_text_values() -> None:
    """The aggregation example of docs/kinds.md runs, and text-only values give null, not an error."""
    kinds = (ROOT / "docs" / "kinds.md").read_text()
    source = next(block for block in re.findall(r"```python\n(.*?)```", kinds, re.S) if "MedianPlugin" in block)
    namespace: dict[str, object] = {}
    exec(compile(source, "docs/kinds.md", "exec"), namespace)
    registered: dict[str, object] = {}
    namespace["MedianPlugin"]().clusterpulse_register_aggregations(  # type: ignore[operator]
        lambda name, fn, **meta: registered.setdefault(name, fn)
    )
    median = registered["median"]
    assert median(["Running", "Pending"], None) is None  # type: ignore[operator]
    assert median([3, "x", 1, True, 2.5], None) == 2.5  # type: ignore[operator]
