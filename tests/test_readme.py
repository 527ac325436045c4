"""The README documents what the code offers: every setting, environment variable and command."""

from __future__ import annotations

from pathlib import Path

import attrs
import click

from clusterpulse_core.cli import cli
from clusterpulse_core.config import CoreSettings
from clusterpulse_core.plugins import PluginHost

README = (Path(__file__).parent.parent / "README.md").read_text()


def test_every_setting_and_env_var_is_documented() -> None:
    host = PluginHost(["redis", "cluster", "registry", "metricsource", "vmwriter"])
    classes = {"clusterpulse": CoreSettings, **{k: v for k, v in host.settings_classes().items() if v}}
    missing = []
    for section, cls in classes.items():
        for field in attrs.fields(cls):
            if f"`{field.name}`" not in README:
                missing.append(f"{section}.{field.name}")
            env = field.metadata.get("env")
            if env and f"`{env}`" not in README:
                missing.append(env)
    assert not missing, f"undocumented in README.md: {missing}"


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

    missing = [name for name in names(cli) if f"clusterpulse {name}" not in README]
    assert not missing, f"commands not in README.md: {missing}"


def test_readme_opens_with_the_two_commands() -> None:
    first_block = README.split("```bash", 1)[1].split("```", 1)[0].strip().splitlines()
    assert first_block == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    assert (Path(__file__).parent.parent / "scripts" / "demo.sh").exists()


def test_metricsource_reference_matches_the_plugin_readme() -> None:
    import re

    plugin = (Path(__file__).parent.parent / "plugins" / "metricsource" / "README.md").read_text()
    body = plugin[plugin.index("```yaml"):plugin.index("## Performance")].rstrip()
    demoted = re.sub(r"^(#{2,3}) ", lambda m: "#" * (len(m.group(1)) + 2) + " ", body, flags=re.M)
    assert demoted in README, "README.md's MetricSource section differs from plugins/metricsource/README.md"
