"""OpenShift ClusterOperators with their condition flags (docs/compatibility.md#cluster-collection)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from clusterpulse_model import (
    ClusterOperatorCondition,
    ClusterOperatorInfo,
    ClusterOperatorVersion,
    RelatedObject,
)
from clusterpulse_model.pieces import ClusterOperatorsPiece

from clusterpulse_cluster.inventory import MAX_LIST_OBJECTS
from clusterpulse_cluster.remote import list_optional
from clusterpulse_core.clock import ZERO_TIME
from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.limits import Skipped, over_limit
from clusterpulse_core.pieces import Piece
from clusterpulse_core.serde import parse_time

CLUSTER_OPERATORS_PATH = "/apis/config.openshift.io/v1/clusteroperators"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _condition(raw: Mapping[str, Any]) -> ClusterOperatorCondition:
    try:
        when = parse_time(raw["lastTransitionTime"])
    except (KeyError, TypeError, ValueError, AttributeError):
        when = ZERO_TIME
    return ClusterOperatorCondition(
        type=_text(raw.get("type")),
        status=_text(raw.get("status")),
        last_transition_time=when,
        reason=_text(raw.get("reason")),
        message=_text(raw.get("message")),
    )


def cluster_operator_info(obj: Mapping[str, Any]) -> ClusterOperatorInfo:
    """Flags, message/reason, version, conditions and related objects of one ClusterOperator."""
    name = _text((obj.get("metadata") or {}).get("name"))
    status = obj.get("status")
    if not isinstance(status, Mapping):
        return ClusterOperatorInfo(name=name)
    conditions = tuple(_condition(c) for c in status.get("conditions") or () if isinstance(c, Mapping))
    flags = {"available": False, "progressing": False, "degraded": False, "upgradeable": False}
    message = reason = ""
    latest = ZERO_TIME
    for condition in conditions:
        true = condition.status == "True"
        if condition.type == "Available":
            flags["available"] = true
            if not true and condition.message:
                message, reason = condition.message, condition.reason
        elif condition.type == "Progressing":
            flags["progressing"] = true
            if true and condition.message and not message:
                message = condition.message
        elif condition.type == "Degraded":
            flags["degraded"] = true
            if true and condition.message:
                message, reason = condition.message, condition.reason
        elif condition.type == "Upgradeable":
            flags["upgradeable"] = true
        latest = max(latest, condition.last_transition_time)
    versions = tuple(
        ClusterOperatorVersion(_text(v.get("name")), _text(v.get("version")))
        for v in status.get("versions") or ()
        if isinstance(v, Mapping)
    )
    return ClusterOperatorInfo(
        name=name,
        version=operator_version(name, versions),
        message=message,
        reason=reason,
        last_transition_time=latest,
        conditions=conditions,
        versions=versions,
        related_objects=tuple(
            RelatedObject(
                _text(r.get("group")), _text(r.get("resource")), _text(r.get("namespace")), _text(r.get("name"))
            )
            for r in status.get("relatedObjects") or ()
            if isinstance(r, Mapping)
        ),
        **flags,
    )


def operator_version(name: str, versions: Sequence[ClusterOperatorVersion]) -> str:
    """The version named ``operator`` or like the operator (last match wins), else the first."""
    chosen = ""
    for version in versions:
        if version.name in ("operator", name):
            chosen = version.version
    if not chosen and versions:
        chosen = versions[0].version
    return chosen


def list_cluster_operators(
    target: ClusterTarget, max_objects: int = MAX_LIST_OBJECTS, page_size: int = 500
) -> list[ClusterOperatorInfo]:
    """The first ``max_objects`` ClusterOperators (the rest counted in ``target.skipped``) sorted by
    name; ``[]`` when the cluster is not OpenShift."""
    listed = list_optional(target.client, CLUSTER_OPERATORS_PATH, max_objects, page_size)
    if listed is None:
        return []
    if listed.skipped:
        target.skipped.append(
            Skipped("cluster operators", listed.skipped, over_limit("max_list_objects", max_objects), len(listed.items))
        )
    return sorted(
        (cluster_operator_info(item) for item in listed.items if isinstance(item, Mapping)), key=lambda info: info.name
    )


@attrs.frozen
class ClusterOperatorsCollector:
    """The ``cluster_operators`` collector."""

    #: ClusterOperators read (the rest counted).
    max_objects: int = MAX_LIST_OBJECTS
    page_size: int = 500

    def __call__(self, target: ClusterTarget) -> Sequence[Piece]:
        """A ClusterOperatorsPiece when the cluster has any."""
        operators = list_cluster_operators(target, self.max_objects, self.page_size)
        return [ClusterOperatorsPiece(target.name, tuple(operators))] if operators else []
