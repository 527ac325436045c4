"""ClusterConnections under the real Manager: its own status patches never re-trigger a reconcile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import three_node
from cluster_support import CC_API, HUB_NAMESPACE, Harness
from clusterpulse_testing.polling import eventually

from clusterpulse_core.config import CoreSettings
from clusterpulse_core.runtime.manager import Manager

#: Bound of every wait: one reconcile against loopback servers, each call of which the manager's
#: ``request_timeout`` bounds; a loaded machine slows it, only a broken path exhausts it.
WAIT = CoreSettings().request_timeout


def _reconciles(manager: Manager) -> float:
    value = manager.runtime.metrics.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "clusterconnection", "result": "requeue_after"}
    )
    return value or 0.0


def test_status_only_updates_do_not_reconcile_but_spec_changes_do(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    harness = make_harness()
    config = harness.runtime.config
    assert config.core.namespace == HUB_NAMESPACE
    harness.runtime.config = attrs.evolve(
        config, core=attrs.evolve(config.core, metrics_bind_address="0", health_probe_bind_address="0")
    )
    cluster = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    harness.add("first", cluster.url, token=three_node.TOKEN)
    manager = Manager(harness.runtime, identity="test")
    manager.start()
    try:
        eventually(lambda: _reconciles(manager) >= 1, "the first reconcile", timeout=WAIT)
        assert harness.cr("first")["status"]["phase"] == "Connected"
        # The reconcile's own status patch is a MODIFIED event with an unchanged generation. A second
        # object, created afterwards, is reconciled after that event was handled: by then a
        # reconcile of "first" would have been queued too.
        harness.add("sentinel", cluster.url, token=three_node.TOKEN)
        eventually(lambda: _reconciles(manager) >= 2, "the sentinel's reconcile", timeout=WAIT)
        eventually(
            lambda: all(len(c.queue) == 0 and not c.queue.in_flight for c in manager.controllers.values()),
            "an idle queue",
            timeout=WAIT,
        )
        assert _reconciles(manager) == 2

        obj = harness.cr("first")
        obj["spec"]["labels"] = {"team": "platform"}
        harness.hub.update(obj)
        eventually(lambda: _reconciles(manager) >= 3, "the reconcile after a spec change", timeout=WAIT)
        assert harness.json("cluster:first:labels") == {"team": "platform"}
        assert harness.hub.get(CC_API, "clusterconnections", "first", HUB_NAMESPACE)["metadata"]["generation"] == 2
    finally:
        manager.stop()
