"""Finding 2 (hub side): the Secret denial applies to what a source resolves to, in any spelling."""

from __future__ import annotations

from clusterpulse_metricsource.settings import MetricSourceSettings


def test_every_spelling_of_secrets_is_refused_unless_allowed() -> None:
    settings = MetricSourceSettings()
    for api_version, kind, group, resource in (("v1", "secret", "", "secrets"), ("v1", "SECRET", "", "secrets"),
                                               ("/v1", "Secret", "", "secrets"), ("*/v1", "Secret", "*", "secrets"),
                                               ("v1", "Secret", "", "secrets")):
        assert "is refused" in settings.refusal(api_version, kind, group, resource), (api_version, kind)
    assert settings.refusal("v1", "ConfigMap", "", "configmaps") == ""
    allowed = MetricSourceSettings(allowed_source_kinds=("v1/Secret",))
    assert allowed.refusal("v1", "secret", "", "secrets") == ""
    denied = MetricSourceSettings(denied_source_kinds=("v1/ConfigMap",))
    assert "denied_source_kinds" in denied.refusal("v1", "configmap", "", "configmaps")
