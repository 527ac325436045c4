"""OLM operators: each Subscription's installed ClusterServiceVersion (docs/compatibility.md#cluster-collection)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs
from clusterpulse_model import OperatorInfo
from clusterpulse_model.pieces import OperatorsPiece

from clusterpulse_cluster.inventory import MAX_LIST_OBJECTS
from clusterpulse_cluster.remote import get_optional, list_optional
from clusterpulse_core.clock import ZERO_TIME
from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.limits import Skipped, over_limit
from clusterpulse_core.pieces import Piece
from clusterpulse_core.serde import parse_time

log = logging.getLogger(__name__)

OLM_API = "/apis/operators.coreos.com/v1alpha1"
SUBSCRIPTIONS_PATH = f"{OLM_API}/subscriptions"
#: Key of ``ClusterTarget.state`` holding the time of the last successful scan.
LAST_SCAN_KEY = "olm.last_scan"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _time(value: Any, default: datetime = ZERO_TIME) -> datetime:
    if isinstance(value, str):
        try:
            return parse_time(value)
        except ValueError:
            pass
    return default


def _split_namespaces(text: str) -> list[str]:
    return text.split(",")


def operator_info(csv: Mapping[str, Any], subscription: Mapping[str, Any], agent: bool = False) -> OperatorInfo | None:
    """The OperatorInfo of one CSV and the Subscription that installed it; ``None`` without a spec.

    ``agent`` applies the push agent's rules (docs/compatibility.md#collector-protocol): a missing version stays
    empty, a missing phase reads ``Unknown``, ``WATCH_NAMESPACE`` wins over the target-namespaces
    annotation, ``available_count`` is filled and no timestamps are set (the ingester stamps them).
    """
    spec = csv.get("spec")
    if not isinstance(spec, Mapping):
        return None
    meta = _mapping(csv.get("metadata"))
    name = str(meta.get("name", ""))
    namespace = str(meta.get("namespace", ""))
    created = _time(meta.get("creationTimestamp"))
    install_modes: list[str] = []
    install_mode, cluster_wide = "", False
    if "installModes" in spec:
        install_modes = [
            str(mode.get("type", ""))
            for mode in spec.get("installModes") or ()
            if isinstance(mode, Mapping) and mode.get("supported") is True
        ]
        cluster_wide = "AllNamespaces" in install_modes
        install_mode = "AllNamespaces" if cluster_wide else "SingleNamespace"
    sub_spec = _mapping(subscription.get("spec"))
    approval = sub_spec.get("installPlanApproval")
    subscription_info = {"installPlanApproval": approval} if isinstance(approval, str) else {}
    available: list[str] = []
    for env in _mapping(sub_spec.get("config")).get("env") or ():
        if isinstance(env, Mapping) and env.get("name") == "WATCH_NAMESPACE" and env.get("value"):
            available = _split_namespaces(str(env["value"]))
    targets = str(_mapping(meta.get("annotations")).get("olm.targetNamespaces") or "")
    if cluster_wide:
        available = ["*"]
    elif agent and available:
        pass
    elif targets:
        stripped = targets.strip("\"'")
        if stripped:
            available = _split_namespaces(stripped)
    else:
        available = [namespace]
    status, updated = ("Unknown" if agent else ""), created
    csv_status = csv.get("status")
    if isinstance(csv_status, Mapping):
        status = str(csv_status.get("phase") or "Unknown")
        updated = _time(csv_status.get("lastUpdateTime"), created)
    if agent:
        created = updated = ZERO_TIME
    provider = _mapping(spec.get("provider")).get("name")
    return OperatorInfo(
        name=name,
        display_name=str(spec.get("displayName") or name),
        version=str(spec.get("version") or ("" if agent else "unknown")),
        status=status,
        installed_namespace=namespace,
        install_modes=tuple(install_modes),
        install_mode=install_mode,
        provider=provider if isinstance(provider, str) else "",
        created_at=created,
        updated_at=updated,
        is_cluster_wide=cluster_wide,
        available_in_namespaces=tuple(available),
        available_count=len(available) if agent else 0,
        subscription=subscription_info,
    )


def list_operators(
    target: ClusterTarget, agent: bool = False, max_objects: int = MAX_LIST_OBJECTS, page_size: int = 500
) -> list[OperatorInfo]:
    """The installed operator of each of the first ``max_objects`` Subscriptions, in Subscription
    order (the others counted in ``target.skipped``); ``[]`` without OLM."""
    listed = list_optional(target.client, SUBSCRIPTIONS_PATH, max_objects, page_size)
    subscriptions = listed.items if listed is not None else []
    if listed is not None and listed.skipped:
        target.skipped.append(
            Skipped(
                "operator subscriptions", listed.skipped, over_limit("max_list_objects", max_objects), len(listed.items)
            )
        )
    operators: list[OperatorInfo] = []
    for subscription in subscriptions:
        if not isinstance(subscription, Mapping):
            continue
        installed = _mapping(subscription.get("status")).get("installedCSV")
        if not isinstance(installed, str) or not installed:
            continue
        namespace = _mapping(subscription.get("metadata")).get("namespace", "")
        path = f"{OLM_API}/namespaces/{namespace}/clusterserviceversions/{installed}"
        try:
            csv = get_optional(target.client, path)
        except Exception as exc:
            log.debug("cluster %s: reading CSV %s/%s failed: %s", target.name, namespace, installed, exc)
            continue
        info = operator_info(csv, subscription, agent) if isinstance(csv, Mapping) else None
        if info is not None:
            operators.append(info)
    return operators


@attrs.frozen
class OperatorsCollector:
    """The ``operators`` collector: scans OLM at most every ``scan_interval`` seconds per cluster."""

    scan_interval: float
    clock: Callable[[], datetime]
    #: Inside the push agent: the agent's extraction rules (see :func:`operator_info`).
    agent: bool = False
    #: Subscriptions read per scan (the rest counted).
    max_objects: int = MAX_LIST_OBJECTS
    page_size: int = 500

    def __call__(self, target: ClusterTarget) -> Sequence[Piece]:
        """An OperatorsPiece when a scan is due and found operators; nothing otherwise."""
        now = self.clock()
        last = target.state.get(LAST_SCAN_KEY)
        if isinstance(last, datetime) and (now - last).total_seconds() < self.scan_interval:
            return []
        operators = list_operators(target, self.agent, self.max_objects, self.page_size)
        target.after_store.append(lambda: target.state.__setitem__(LAST_SCAN_KEY, now))
        return [OperatorsPiece(target.name, tuple(operators))] if operators else []
