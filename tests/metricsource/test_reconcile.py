"""End to end: a MetricSource reconciled against two managed clusters on the Kubernetes API emulator."""

from __future__ import annotations

from typing import Any

from clusterpulse_metricsource.crd import METRIC_SOURCE
from clusterpulse_metricsource.plugin import MetricSourcePlugin
from clusterpulse_model.pieces import (
    AggregationsPiece,
    CustomResourcesPiece,
    EventPiece,
    MetricSourceDeletion,
    MetricSourcePiece,
)
from clusterpulse_testing.recording import BackendPlugin, RecordingBackend

from clusterpulse_core.config import Config, CoreSettings
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import build_runtime, reconcile_object
from clusterpulse_core.serde import unstructure

from .conftest import CUSTOM_API_VERSION, NAMESPACE, Fleet, cactus

SPEC: dict[str, Any] = {
    "source": {"apiVersion": CUSTOM_API_VERSION, "kind": "Cactus", "namespaces": {"exclude": ["kube-*"]}},
    "fields": [
        {"name": "size", "path": ".spec.size", "type": "quantity"},
        {"name": "arms", "path": ".spec.arms", "type": "integer"},
        {"name": "spines", "path": ".spec.spines", "type": "arrayLength"},
        {"name": "phase", "path": ".status.phase"},
        {"name": "tier", "path": ".metadata.labels.tier", "default": "short"},
    ],
    "computed": [
        {"name": "label", "expression": "concat(tier, '-', phase)", "type": "string"},
        {"name": "armsPerSpine", "expression": "arms / spines"},
    ],
    "aggregations": [
        {"name": "total", "function": "count"},
        {
            "name": "blooming",
            "function": "count",
            "filter": {"field": "phase", "operator": "equals", "value": "Blooming"},
        },
        {"name": "armsByPhase", "field": "arms", "function": "sum", "groupBy": "phase"},
        {"name": "maxSize", "field": "size", "function": "max"},
    ],
    "collection": {"intervalSeconds": 120, "timeoutSeconds": 10, "batchSize": 2},
    "rbac": {"resourceTypeName": "cactus"},
}


def _collections(fleet: Fleet) -> dict[str, Any]:
    return {p.cluster: p.collection for p in fleet.backend.of(CustomResourcesPiece)}


def test_reconcile_collects_and_aggregates_every_connected_cluster(fleet: Fleet) -> None:
    fleet.apply("cacti", SPEC)
    outcome = fleet.reconcile("cacti")
    assert outcome.ok, outcome.detail
    assert outcome.requeue_after == 120

    [definition] = fleet.backend.of(MetricSourcePiece)
    assert (definition.namespace, definition.name, definition.kind) == ("clusterpulse", "cacti", "Cactus")
    assert definition.resource_type_name == "cactus"
    stored = unstructure(definition.compiled)
    # The hub does not serve Cactus, so the stored hint is the pluraliser's; each managed cluster's
    # discovery gives the real plural ``cacti`` (M7), which is what the lists below use.
    assert stored["source"]["resource"] == "cactuses"
    assert stored["hash"] == definition.hash and len(definition.hash) == 16

    collections = _collections(fleet)
    assert set(collections) == {"east", "west"}  # "north" is not Connected
    east = collections["east"]
    assert (east.source_id, east.cluster_name, east.resource_count, east.truncated) == (
        "clusterpulse/cacti",
        "east",
        3,
        False,
    )
    records = {r.id: r for r in east.resources}
    assert set(records) == {"team-a/saguaro", "team-a/barrel", "team-b/cholla"}
    saguaro = records["team-a/saguaro"]
    assert (saguaro.name, saguaro.namespace, saguaro.labels) == ("saguaro", "team-a", {"tier": "tall"})
    assert saguaro.values == {
        "size": 0.5,
        "arms": 3,
        "spines": 3,
        "phase": "Blooming",
        "tier": "tall",
        "label": "tall-Blooming",
        "armsPerSpine": 1.0,
    }
    barrel = records["team-a/barrel"].values
    assert barrel["size"] == 2147483648.0 and type(barrel["size"]) is float
    assert barrel["tier"] == "short" and barrel["armsPerSpine"] is None  # 0 / 0 is null (M3)
    assert records["team-b/cholla"].values["size"] == 1.5

    aggregations = {p.cluster: p.results for p in fleet.backend.of(AggregationsPiece)}
    assert aggregations["east"].source_id == "clusterpulse/cacti"
    assert aggregations["east"].values == {
        "total": 3.0,
        "blooming": 2.0,
        "armsByPhase": {"Blooming": 8.0, "Dormant": 0.0},
        "maxSize": 2147483648.0,
    }
    assert aggregations["west"].values == {
        "total": 2.0,
        "blooming": 2.0,
        "armsByPhase": {"Blooming": 9.0},
        "maxSize": 1000.0,
    }

    status = fleet.metric_source("cacti")["status"]
    assert status["phase"] == "Active"
    assert status["resourcesCollected"] == 5 and status["clustersCollected"] == 2
    assert status["errorsLastRun"] == 0 and status["message"] == "Collection successful"
    assert status["lastCollectionDuration"].endswith("s")
    [ready] = status["conditions"]
    assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "True", "CollectionSuccessful")
    assert ready["message"] == "Collected 5 resources from 2 clusters"

    [event] = fleet.backend.of(EventPiece)
    assert (event.type, event.target, event.channel) == ("reconciled", "clusterpulse/cacti", "metricsource-events")
    assert event.data == {"resources": 5, "clusters": 2, "errors": 0}

    # batchSize 2 paginates: the list is requested with limit=2 and continued.
    east_lists = [q for m, p, q in fleet.clusters["east"].requests if p.endswith("/cacti")]
    assert east_lists and all(q.get("limit") == "2" for q in east_lists)
    assert any("continue" in q for q in east_lists)


def test_truncation_at_max_resources(fleet: Fleet) -> None:
    source = {"apiVersion": CUSTOM_API_VERSION, "kind": "Cactus"}  # every namespace: no post-filter
    fleet.apply(
        "few", {**SPEC, "source": source, "collection": {"maxResources": 2, "batchSize": 10}, "aggregations": []}
    )
    assert fleet.reconcile("few").ok
    collections = _collections(fleet)
    assert collections["east"].resource_count == 2 and collections["east"].truncated is True
    assert len(collections["east"].resources) == 2
    # exactly maxResources counts as truncated for a cluster-wide list (upstream rule)
    assert collections["west"].resource_count == 2 and collections["west"].truncated is True
    assert not fleet.backend.of(AggregationsPiece)


def test_exact_namespaces_are_listed_one_by_one(fleet: Fleet) -> None:
    spec = {
        **SPEC,
        "source": {"apiVersion": CUSTOM_API_VERSION, "kind": "Cactus", "namespaces": {"include": ["team-b", "team-c"]}},
    }
    fleet.apply("some", spec)
    assert fleet.reconcile("some").ok
    collections = _collections(fleet)
    assert [r.id for r in collections["east"].resources] == ["team-b/cholla"]
    assert [r.id for r in collections["west"].resources] == ["team-c/opuntia"]
    paths = {p for _, p, _ in fleet.clusters["east"].requests if p.endswith("/cacti")}
    assert paths == {
        f"/apis/{CUSTOM_API_VERSION}/namespaces/team-b/cacti",
        f"/apis/{CUSTOM_API_VERSION}/namespaces/team-c/cacti",
    }


def test_a_cluster_that_times_out_does_not_block_the_others(fleet: Fleet) -> None:
    fleet.clusters["west"].delay(r"/cacti$", 3.0)
    fleet.apply("cacti", {**SPEC, "collection": {"intervalSeconds": 100, "timeoutSeconds": 1}})
    outcome = fleet.reconcile("cacti")
    assert outcome.ok and outcome.requeue_after == 50  # half the interval after errors
    assert set(_collections(fleet)) == {"east"}
    status = fleet.metric_source("cacti")["status"]
    assert (status["phase"], status["clustersCollected"], status["resourcesCollected"]) == ("Active", 1, 3)
    assert status["errorsLastRun"] == 1 and status["message"] == "Collected with 1 errors"
    [event] = fleet.backend.of(EventPiece)
    assert event.data == {"resources": 3, "clusters": 1, "errors": 1}


def test_invalid_metricsource_reports_error_then_recovers(fleet: Fleet) -> None:
    broken = {**SPEC, "computed": [{"name": "x", "expression": "nosuchfn(arms)"}]}
    fleet.apply("cacti", broken)
    outcome = fleet.reconcile("cacti")
    assert outcome.requeue_after == 30 and "nosuchfn" in outcome.detail
    status = fleet.metric_source("cacti")["status"]
    assert status["phase"] == "Error" and "computed field 'x'" in status["message"]
    assert status["errorsLastRun"] == 1 and status["conditions"][0]["status"] == "False"
    assert not fleet.backend.of(MetricSourcePiece) and not fleet.backend.of(CustomResourcesPiece)
    assert fleet.reconcile("cacti").requeue_after == 30
    assert fleet.metric_source("cacti")["status"]["errorsLastRun"] == 2  # cumulative

    fleet.apply("cacti", SPEC)
    outcome = fleet.reconcile("cacti")
    assert outcome.ok and outcome.requeue_after == 120
    status = fleet.metric_source("cacti")["status"]
    assert status["phase"] == "Active" and status["errorsLastRun"] == 0


def test_deletion_removes_state_and_publishes(fleet: Fleet) -> None:
    fleet.apply("cacti", SPEC)
    assert fleet.reconcile("cacti").ok
    fleet.backend.clear()
    assert fleet.delete("cacti").ok
    [deletion] = fleet.backend.of(MetricSourceDeletion)
    assert deletion.source_id == "clusterpulse/cacti"
    [event] = fleet.backend.of(EventPiece)
    assert (event.type, event.target, event.data) == ("deleted", "clusterpulse/cacti", None)


def test_new_objects_are_seen_on_the_next_run(fleet: Fleet) -> None:
    fleet.apply("cacti", SPEC)
    assert fleet.reconcile("cacti").ok
    fleet.clusters["west"].create(cactus("team-b", "yucca", "3", 1, "Dormant"))
    fleet.backend.clear()
    assert fleet.reconcile("cacti").ok
    assert _collections(fleet)["west"].resource_count == 3
    assert fleet.metric_source("cacti")["status"]["resourcesCollected"] == 6


def test_compiled_sources_tell_push_agents_which_types_to_read(fleet: Fleet) -> None:
    """``clusterpulse_agent_read_types``: the cluster plugin grants these to the agents it installs."""

    def read_types() -> list[tuple[str, str]]:
        return [t for answer in fleet.runtime.plugins.pm.hook.clusterpulse_agent_read_types() for t in answer]

    assert read_types() == []
    fleet.apply("cacti", SPEC)
    fleet.apply(
        "pods", {"source": {"apiVersion": "v1", "kind": "Pod"}, "fields": [{"name": "phase", "path": ".status.phase"}]}
    )
    assert fleet.reconcile("cacti").ok and fleet.reconcile("pods").ok
    # The hub does not serve Cactus: its plural is the pluraliser's guess (see the first test).
    assert read_types() == [("", "pods"), (CUSTOM_API_VERSION.split("/")[0], "cactuses")]
    fleet.delete("cacti")
    assert read_types() == [("", "pods")]


def test_without_the_plugin_offering_the_fleet_a_source_says_so(fleet: Fleet) -> None:
    """The clusters come from the cluster plugin's typed view (``clusterpulse_fleet``): without it,
    the MetricSource is in Error naming what to enable, and nothing is collected."""
    backend = RecordingBackend()
    host = PluginHost([], extra={"metricsource": MetricSourcePlugin, "recording": BackendPlugin(backend)})
    assert host.hook("clusterpulse_fleet") is None
    runtime = build_runtime(
        Config(core=CoreSettings(plugins=(), namespace=NAMESPACE, request_timeout=10.0)),
        host,
        hub=KubeClient(fleet.hub.api_client()),
    )
    try:
        fleet.apply("cacti", SPEC)
        outcome = reconcile_object(runtime, "metricsource", METRIC_SOURCE, fleet.metric_source("cacti"))
    finally:
        runtime.pool.close()
    status = fleet.metric_source("cacti")["status"]
    assert not outcome.ok and status["phase"] == "Error"
    assert status["message"] == (
        "no plugin offers the managed clusters (clusterpulse_fleet): enable the cluster plugin"
    )
    assert backend.of(CustomResourcesPiece) == []
    assert fleet.reconcile("cacti").ok  # with the cluster plugin (the fixture's runtime) it collects
    assert sorted(_collections(fleet)) == ["east", "west"]
