"""A RegistryConnection's credentials Secret must exist and hold its keys (docs/compatibility.md#c15).

Against a real docker-registry that requires Basic auth: a missing Secret, or one without a
``password``, is ``phase: Error`` naming ``spec.credentialsRef`` and the Secret or key, nothing is
requested from the registry (its own access log says so) and nothing stored; the same failure
again is neither rewritten nor logged again; the reconcile comes back after the spec's interval,
and the first one after the Secret appears is healthy with the credentials.
"""

from __future__ import annotations

import pytest
from clusterpulse_model.pieces import RegistryMetricsPiece, RegistrySpecPiece, RegistryStatusPiece
from clusterpulse_testing.recording import BackendPlugin
from registry_support import NAMESPACE, PASSWORD, USERNAME, RegistryHub, RunningRegistry, secret_object

PIECES = (RegistrySpecPiece, RegistryStatusPiece, RegistryMetricsPiece)
INTERVAL = 45


def _requests(registry: RunningRegistry) -> int:
    """The requests the registry logged (its access log: one line per request, with the path)."""
    return registry.process.log_tail(1_000_000).count('"GET /v2/')


def _stored(recorder: BackendPlugin) -> list[int]:
    return [len(recorder.backend.of(piece)) for piece in PIECES]


def _spec(registry: RunningRegistry) -> dict[str, object]:
    return {
        "endpoint": registry.url,
        "credentialsRef": {"name": "creds"},
        "monitoring": {"interval": INTERVAL, "checkCatalog": True},
    }


def test_a_missing_secret_is_an_error_naming_it_until_the_secret_appears(
    hub: RegistryHub, recorder: BackendPlugin, docker_registry: RunningRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    hub.create("local", _spec(docker_registry))
    requests, stored = _requests(docker_registry), _stored(recorder)

    outcome = hub.reconcile("local")

    status = hub.status("local")
    print(f"\n{status['phase']}: {status['message']}")
    assert (status["phase"], status["health"], status["available"]) == ("Error", "unhealthy", False)
    assert "spec.credentialsRef: Secret clusterpulse/creds does not exist" in status["message"]
    assert not outcome.ok and "spec.credentialsRef" in outcome.detail
    assert outcome.requeue_after == INTERVAL
    assert _requests(docker_registry) == requests  # nothing asked of the registry
    assert _stored(recorder) == stored  # nothing stored
    # Again: no status write, no second log line.
    written = hub.get("local")["metadata"]["resourceVersion"]
    assert not hub.reconcile("local").ok
    assert hub.get("local")["metadata"]["resourceVersion"] == written
    assert caplog.text.count("Secret clusterpulse/creds does not exist") == 1

    hub.secret("creds", USERNAME, PASSWORD)
    outcome = hub.reconcile("local")

    assert outcome.ok, outcome.detail
    status = hub.status("local")
    assert (status["phase"], status["health"], status["available"]) == ("Connected", "healthy", True)
    assert status["features"] == {"docker_v2_api": True, "catalog_accessible": True}  # authenticated
    assert _requests(docker_registry) > requests


def test_a_secret_without_a_password_is_an_error_naming_the_key(
    hub: RegistryHub, recorder: BackendPlugin, docker_registry: RunningRegistry
) -> None:
    hub.api.create(secret_object("creds", {"username": USERNAME}))
    hub.create("local", _spec(docker_registry))
    requests, stored = _requests(docker_registry), _stored(recorder)

    assert not hub.reconcile("local").ok

    status = hub.status("local")
    print(f"\n{status['phase']}: {status['message']}")
    assert status["phase"] == "Error"
    assert "spec.credentialsRef: Secret clusterpulse/creds has no non-empty key 'password'" in status["message"]
    assert _requests(docker_registry) == requests
    assert _stored(recorder) == stored


def test_a_secret_deleted_after_good_checks_keeps_the_last_good_data(
    hub: RegistryHub, recorder: BackendPlugin, docker_registry: RunningRegistry
) -> None:
    hub.secret("creds", USERNAME, PASSWORD)
    hub.create("local", _spec(docker_registry))
    assert hub.reconcile("local").ok
    stored = _stored(recorder)
    last = recorder.backend.of(RegistryStatusPiece)[-1]
    hub.api.delete("v1", "secrets", "creds", NAMESPACE)

    assert not hub.reconcile("local").ok

    assert hub.status("local")["phase"] == "Error"
    assert "Secret clusterpulse/creds does not exist" in hub.status("local")["message"]
    assert _stored(recorder) == stored
    assert recorder.backend.of(RegistryStatusPiece)[-1] == last
