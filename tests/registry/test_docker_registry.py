"""Reconciles against a real docker-registry (CNCF distribution) through the emulated hub."""

from __future__ import annotations

from clusterpulse_model.pieces import EventPiece, RegistryMetricsPiece, RegistrySpecPiece, RegistryStatusPiece
from clusterpulse_testing.recording import BackendPlugin
from registry_support import PASSWORD, REPOSITORIES, USERNAME, RegistryHub, RunningRegistry


def _spec(registry: RunningRegistry, **extra: object) -> dict[str, object]:
    spec: dict[str, object] = {
        "displayName": "Test registry",
        "endpoint": registry.url,
        "type": "distribution",
        "credentialsRef": {"name": "registry-creds"},
        "monitoring": {"checkCatalog": True, "maxCatalogEntries": 50},
    }
    spec.update(extra)
    return spec


def test_healthy_with_catalog_and_repository_count(
    hub: RegistryHub, recorder: BackendPlugin, docker_registry: RunningRegistry
) -> None:
    hub.secret("registry-creds", USERNAME, PASSWORD)
    hub.create("local", _spec(docker_registry))

    outcome = hub.reconcile("local")

    assert outcome.ok, outcome.detail
    assert outcome.requeue_after == 60
    status = hub.status("local")
    assert status["phase"] == "Connected"
    assert status["health"] == "healthy"
    assert status["available"] is True
    assert status["repositoryCount"] == len(REPOSITORIES)
    assert status["version"] == "registry/2.0"
    assert status["features"] == {"docker_v2_api": True, "catalog_accessible": True}
    assert status["message"] == (
        f"Registry is healthy (response time: {status['responseTime']}ms), {len(REPOSITORIES)} repositories"
    )
    assert "lastCheckTime" in status
    [stored] = recorder.backend.of(RegistryStatusPiece)
    assert stored.registry == "local"
    assert stored.status.repositories == REPOSITORIES
    assert stored.status.error == ""
    [spec] = recorder.backend.of(RegistrySpecPiece)
    assert spec.spec.endpoint == docker_registry.url
    assert spec.spec.credentials_ref is not None and spec.spec.credentials_ref.name == "registry-creds"
    [sample] = recorder.backend.of(RegistryMetricsPiece)
    assert sample.metrics.available is True
    [event] = recorder.backend.of(EventPiece)
    assert (event.type, event.target) == ("registry.reconciled", "local")
    assert event.data == {
        "health": "healthy",
        "available": True,
        "response_time": stored.status.response_time,
        "display_name": "Test registry",
        "type": "distribution",
    }


def test_wrong_password_is_unhealthy_with_the_message(
    hub: RegistryHub, docker_registry: RunningRegistry, caplog: object
) -> None:
    hub.secret("registry-creds", USERNAME, "wrong-password")
    hub.create("local", _spec(docker_registry))

    outcome = hub.reconcile("local")

    assert not outcome.ok
    assert outcome.detail == "Registry unavailable: unexpected status code: 401"
    status = hub.status("local")
    assert (status["phase"], status["health"], status["available"]) == ("Error", "unhealthy", False)
    assert status["message"] == "Registry unavailable: unexpected status code: 401"
    assert "repositoryCount" not in status  # 0 is left out, as Go's omitempty does
    assert "check the credentials in Secret clusterpulse/registry-creds" in caplog.text  # type: ignore[attr-defined]


def test_anonymous_against_an_auth_registry_is_available_and_requires_auth(
    hub: RegistryHub, docker_registry: RunningRegistry
) -> None:
    hub.create("anon", {"endpoint": docker_registry.url})

    outcome = hub.reconcile("anon")

    assert outcome.ok, outcome.detail
    status = hub.status("anon")
    assert (status["phase"], status["health"], status["available"]) == ("Connected", "healthy", True)
    assert status["features"] == {"docker_v2_api": True, "requires_auth": True}
    assert "repositoryCount" not in status


def test_stopped_registry_is_unhealthy_then_healthy_again(
    hub: RegistryHub, recorder: BackendPlugin, docker_registry: RunningRegistry
) -> None:
    hub.secret("registry-creds", USERNAME, PASSWORD)
    hub.create("local", _spec(docker_registry))
    assert hub.reconcile("local").ok

    docker_registry.process.stop()
    outcome = hub.reconcile("local")

    assert not outcome.ok
    assert outcome.requeue_after == 60
    status = hub.status("local")
    assert (status["phase"], status["health"], status["available"]) == ("Error", "unhealthy", False)
    assert status["message"].startswith("Registry unavailable: request failed: Get ")
    assert status["message"].endswith(": connection refused")
    assert "version" not in status and "features" not in status
    stored = recorder.backend.of(RegistryStatusPiece)[-1].status
    assert stored.available is False and stored.error.startswith("request failed: ")
    event = recorder.backend.of(EventPiece)[-1]
    assert event.data is not None and event.data["health"] == "unhealthy"

    docker_registry.process.start()
    outcome = hub.reconcile("local")

    assert outcome.ok, outcome.detail
    status = hub.status("local")
    assert (status["phase"], status["health"], status["available"]) == ("Connected", "healthy", True)
    assert status["repositoryCount"] == len(REPOSITORIES)


def test_status_is_patched_only_when_it_changed(hub: RegistryHub, docker_registry: RunningRegistry) -> None:
    hub.create("quiet", {"endpoint": docker_registry.url})
    docker_registry.process.stop()
    assert not hub.reconcile("quiet").ok
    # Without a stored response time only phase, health, availability, message, version,
    # catalog size and features count (docs/compatibility.md#registry-checks); none of them changes on the next check.
    obj = hub.get("quiet")
    obj["status"].pop("responseTime", None)
    hub.api.update(obj)
    hub.api.clear_requests()

    assert not hub.reconcile("quiet").ok

    assert [r for r in hub.api.requests if r[0] == "PATCH"] == []

    docker_registry.process.start()
    assert hub.reconcile("quiet").ok
    patches = [r for r in hub.api.requests if r[0] == "PATCH"]
    assert [path for _, path, _ in patches] == [
        "/apis/clusterpulse.io/v1alpha1/namespaces/clusterpulse/registryconnections/quiet/status"
    ]
    assert hub.status("quiet")["phase"] == "Connected"


def test_deletion_forgets_the_registry(
    hub: RegistryHub, recorder: BackendPlugin, docker_registry: RunningRegistry
) -> None:
    from clusterpulse_model.pieces import RegistryDeletion

    hub.create("gone", {"endpoint": docker_registry.url})
    assert hub.reconcile("gone").ok
    plugin = hub.runtime.plugins.plugin("registry")
    assert len(plugin.reconciler.clients) == 1  # type: ignore[attr-defined]

    outcome = hub.delete("gone")

    assert outcome.ok and outcome.detail == "deleted"
    assert recorder.backend.of(RegistryDeletion) == [RegistryDeletion("gone")]
    event = recorder.backend.of(EventPiece)[-1]
    assert (event.type, event.target, event.data) == ("registry.deleted", "gone", None)
    assert len(plugin.reconciler.clients) == 0  # type: ignore[attr-defined]


def test_catalog_is_read_through_link_pages_up_to_the_limit(
    hub: RegistryHub, recorder: BackendPlugin, docker_registry_paged: RunningRegistry
) -> None:
    # This registry pages its catalog one entry at a time and refuses any larger n.
    hub.create("all", {"endpoint": docker_registry_paged.url, "monitoring": {"checkCatalog": True}})
    hub.create(
        "two", {"endpoint": docker_registry_paged.url, "monitoring": {"checkCatalog": True, "maxCatalogEntries": 2}}
    )

    assert hub.reconcile("all").ok
    assert hub.reconcile("two").ok

    assert hub.status("all")["repositoryCount"] == len(REPOSITORIES)
    assert hub.status("two")["repositoryCount"] == 2
    stored = {piece.registry: piece.status for piece in recorder.backend.of(RegistryStatusPiece)}
    assert stored["all"].repositories == REPOSITORIES
    assert stored["two"].repositories == REPOSITORIES[:2]
    assert stored["two"].features["catalog_accessible"] is True


def test_unreadable_catalog_marks_it_inaccessible(
    hub: RegistryHub, recorder: BackendPlugin, docker_registry: RunningRegistry, caplog: object
) -> None:
    # Anonymous against an htpasswd registry: /v2/ answers 401 (available), the catalog 401 too.
    hub.create("anon", {"endpoint": docker_registry.url, "monitoring": {"checkCatalog": True}})

    assert hub.reconcile("anon").ok

    status = hub.status("anon")
    assert status["features"] == {"docker_v2_api": True, "requires_auth": True, "catalog_accessible": False}
    assert "repositoryCount" not in status
    assert "catalog request returned 401" in caplog.text  # type: ignore[attr-defined]
