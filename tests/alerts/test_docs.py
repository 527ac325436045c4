"""docs/alerts.md documents every setting of ``[plugins.alerts]`` and every built-in rule."""

from __future__ import annotations

from pathlib import Path

import attrs
from clusterpulse_alerts.rules import register_builtin_rules
from clusterpulse_alerts.settings import AlertsSettings

DOCS = (Path(__file__).parent.parent.parent / "docs" / "alerts.md").read_text()


def test_every_setting_and_rule_is_documented() -> None:
    names: list[str] = []
    register_builtin_rules(lambda name, impl, /, **meta: names.append(name))
    assert len(names) == 13
    missing = [f"plugins.alerts.{f.name}" for f in attrs.fields(AlertsSettings) if f"`{f.name}`" not in DOCS]
    missing += [name for name in names if f"| `{name}` |" not in DOCS]
    assert not missing, f"undocumented in docs/alerts.md: {missing}"
    assert "docs/alerts.md" in (Path(__file__).parent.parent.parent / "README.md").read_text()
