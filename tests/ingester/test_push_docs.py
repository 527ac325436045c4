"""docs/push-mode.md documents every ``[plugins.ingester]`` setting, its env var, and every metric."""

from __future__ import annotations

from pathlib import Path

import attrs
from clusterpulse_ingester.agent.runner import AgentMetrics
from clusterpulse_ingester.metrics import IngesterMetrics
from clusterpulse_ingester.settings import IngesterSettings
from prometheus_client import CollectorRegistry

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "docs" / "push-mode.md").read_text()


def test_every_setting_and_env_var_is_documented() -> None:
    missing = []
    for field in attrs.fields(IngesterSettings):
        if f"`{field.name}`" not in DOCS:
            missing.append(field.name)
        env = field.metadata.get("env")
        if env and f"`{env}`" not in DOCS:
            missing.append(env)
    assert not missing, f"undocumented in docs/push-mode.md: {missing}"


def test_every_metric_is_documented() -> None:
    registry = CollectorRegistry()
    IngesterMetrics.create(registry)
    AgentMetrics.create(registry)
    names = {metric.name for metric in registry.collect()}
    assert len(names) == 17
    documented = DOCS.replace("`..._", "`clusterpulse_agent_batches_")
    missing = sorted(n for n in names if n not in documented)
    assert not missing, f"metrics not in docs/push-mode.md: {missing}"


def test_readme_links_the_page() -> None:
    assert "docs/push-mode.md" in (ROOT / "README.md").read_text()
