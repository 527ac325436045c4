"""Building store pieces from the operations of ``redis_examples.json``.

Each store-level operation names a writer of the upstream store package and gives its input
in the collected model (snake_case). Its args are structured into the domain model with the
core converter and wrapped in the piece the Redis backend receives.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from clusterpulse_model import (
    AggregationResults,
    ClusterMetrics,
    ClusterOperatorInfo,
    ClusterSpecRecord,
    ClusterStatusRecord,
    CustomResourceCollection,
    NodeMetrics,
    OperatorInfo,
    RegistryMetricsRecord,
    RegistrySpecRecord,
    RegistryStatusRecord,
)
from clusterpulse_model.pieces import (
    AggregationsPiece,
    ClusterDeletion,
    ClusterInfoPiece,
    ClusterLabelsPiece,
    ClusterMetricsPiece,
    ClusterOperatorsPiece,
    ClusterSpecPiece,
    ClusterStatusPiece,
    CustomResourcesPiece,
    EventPiece,
    MetricSourceClusterDeletion,
    MetricSourceDeletion,
    MetricSourcePiece,
    NamespacesPiece,
    NodesPiece,
    OperatorsPiece,
    RegistryDeletion,
    RegistryMetricsPiece,
    RegistrySpecPiece,
    RegistryStatusPiece,
    ResourceCollection,
    ResourceCollectionPiece,
)

from clusterpulse_core.pieces import Piece
from clusterpulse_core.serde import parse_time, structure

#: Whole reconciles: they need a managed cluster or registry and belong to the cluster and
#: registry plugins' tests, not to the storage backend's.
RECONCILE_LEVEL_OPS = frozenset(
    {
        "reconcile_cluster_connection",
        "reconcile_registry_connection",
        "store_operators_from_olm",
        "store_cluster_operators_from_openshift",
    }
)


def _metricsource(args: dict[str, Any], clock: datetime) -> Piece:
    compiled = args["compiled"]
    return MetricSourcePiece(
        namespace=compiled["namespace"],
        name=compiled["name"],
        compiled=compiled,
        resource_type_name=compiled["rbac"].get("resourceTypeName", ""),
        kind=compiled["source"]["kind"],
        api_version=compiled["source"]["apiVersion"],
        compiled_at=parse_time(compiled["compiledAt"]),
        hash=compiled["hash"],
    )


def _nodes(nodes: list[dict[str, Any]]) -> tuple[NodeMetrics, ...]:
    # The upstream tests build Go struct literals: an absent status is Go's zero value "",
    # not the model's default "Unknown".
    return structure([{"status": "", **node} for node in nodes], tuple[NodeMetrics, ...])


Builder = Callable[[dict[str, Any], datetime], Piece]

BUILDERS: dict[str, Builder] = {
    "store_cluster_spec": lambda a, _: ClusterSpecPiece(a["cluster"], structure(a["spec"], ClusterSpecRecord)),
    "store_cluster_labels": lambda a, _: ClusterLabelsPiece(a["cluster"], dict(a["labels"])),
    "store_cluster_status": lambda a, _: ClusterStatusPiece(a["cluster"], structure(a["status"], ClusterStatusRecord)),
    "store_cluster_info": lambda a, _: ClusterInfoPiece(a["cluster"], dict(a["info"])),
    "store_cluster_metrics": lambda a, _: ClusterMetricsPiece(a["cluster"], structure(a["metrics"], ClusterMetrics)),
    "store_namespaces": lambda a, clock: NamespacesPiece(a["cluster"], tuple(a["namespaces"] or ()), timestamp=clock),
    "store_nodes": lambda a, _: NodesPiece(a["cluster"], _nodes(a["nodes"])),
    "store_operators": lambda a, _: OperatorsPiece(a["cluster"], structure(a["operators"], tuple[OperatorInfo, ...])),
    "store_cluster_operators": lambda a, _: ClusterOperatorsPiece(
        a["cluster"], structure(a["cluster_operators"], tuple[ClusterOperatorInfo, ...])
    ),
    "store_resource_collection": lambda a, _: ResourceCollectionPiece(
        a["cluster"], structure(a["collection"], ResourceCollection)
    ),
    "publish_event": lambda a, clock: EventPiece(a["type"], a["name"], a.get("data"), timestamp=clock),
    "delete_cluster_data": lambda a, _: ClusterDeletion(a["cluster"]),
    "store_registry_spec": lambda a, _: RegistrySpecPiece(a["registry"], structure(a["spec"], RegistrySpecRecord)),
    "store_registry_status": lambda a, _: RegistryStatusPiece(
        a["registry"], structure(a["status"], RegistryStatusRecord)
    ),
    "store_registry_metrics": lambda a, _: RegistryMetricsPiece(
        a["registry"], structure(a["metrics"], RegistryMetricsRecord)
    ),
    "delete_registry_data": lambda a, _: RegistryDeletion(a["registry"]),
    "store_compiled_metricsource": _metricsource,
    "store_custom_resource_collection": lambda a, _: CustomResourcesPiece(
        a["cluster"], structure(a["collection"], CustomResourceCollection)
    ),
    "store_aggregation_results": lambda a, _: AggregationsPiece(
        a["cluster"], structure(a["results"], AggregationResults)
    ),
    "delete_metricsource": lambda a, _: MetricSourceDeletion(a["namespace"], a["name"]),
    "delete_metricsource_cluster_data": lambda a, _: MetricSourceClusterDeletion(a["cluster"], a["source_id"]),
}


def build_piece(operation: dict[str, Any], clock: datetime) -> Piece:
    """The piece for one store-level operation of an example."""
    return BUILDERS[operation["op"]](operation["args"], clock)
