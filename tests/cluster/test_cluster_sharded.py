"""Sharded managers with the real cluster, metricsource and redis plugins (plain Redis and Redis Cluster).

The fleet test runs three to four managers as subprocesses against one hub emulator with
``FLEET`` ClusterConnections (all pointing at one tiny emulated cluster) and reads, from the
hub emulator's write log, which replica patched each ClusterConnection's status when (one patch
per reconcile, the writer named by its User-Agent ``clusterpulse/<identity>``).

This file is also the replica process (``python test_cluster_sharded.py HUB_URL REDIS_URL IDENTITY``).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import kubernetes.client
import pytest
import redis
import three_node
from cluster_support import HUB_NAMESPACE, cluster_connection, hub_objects, secret
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_cluster.plugin import ClusterPlugin
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.servers import RedisClusterProcesses
from clusterpulse_testing.tls import loopback_ca

from clusterpulse_core.kinds import ObjectRef
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load
from clusterpulse_core.runtime.manager import Manager

CLUSTERS = 12


def make_managers(
    hub: Any,
    redis_url: str,
    tmp_path: Path,
    plugins: str,
    extra: str = "",
    handover_delay: float = 30.0,
    identities: tuple[str, ...] = ("replica-a", "replica-b"),
) -> list[Manager]:
    config_file = tmp_path / "clusterpulse.toml"
    config_file.write_text(
        f'[clusterpulse]\nplugins = [{plugins}]\nnamespace = "{HUB_NAMESPACE}"\nsharding = true\n'
        f"lease_duration = {LEASE_DURATION}\nrenew_deadline = {RENEW_DEADLINE}\nretry_period = 0.25\n"
        f"shard_handover_delay = {handover_delay}\n"
        'metrics_bind_address = "0"\nhealth_probe_bind_address = "0"\nshutdown_grace = 5.0\n'
        f'[plugins.redis]\nurl = "{redis_url}"\n{extra}'
    )
    made = []
    for identity in identities:
        config, host = load(str(config_file), env={})
        made.append(Manager(build_runtime(config, host, hub=KubeClient(hub.api_client())), identity))
    return made


@pytest.fixture
def managers(hub: Any, redis_cluster: RedisClusterProcesses, tmp_path: Path) -> Iterator[list[Manager]]:
    made = make_managers(hub, redis_cluster.url, tmp_path, '"redis", "cluster"')
    yield made
    for manager in made:
        manager.stop()


def reconciles(manager: Manager) -> float:
    return (
        manager.runtime.metrics.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "clusterconnection", "result": "requeue_after"}
        )
        or 0.0
    )


def test_sharded_replicas_split_the_clusters_and_store_into_a_redis_cluster(
    hub: Any, kube_api: Callable[..., Any], redis_cluster: RedisClusterProcesses, managers: list[Manager]
) -> None:
    api_version = f"{CLUSTER_CONNECTION.group}/{CLUSTER_CONNECTION.version}"

    def settled(manager: Manager) -> bool:
        controller = manager.controllers["ClusterConnection"]
        for index in range(CLUSTERS):
            cached = controller.informer.get(HUB_NAMESPACE, f"c{index}")
            current = hub.get(api_version, CLUSTER_CONNECTION.plural, f"c{index}", HUB_NAMESPACE)
            if cached is None or cached["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
                return False
        return not controller.queue.due() and not controller.queue.in_flight

    managed = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    for manager in managers:
        manager.start()
    eventually(
        lambda: all(
            m.shard is not None and len(m.shard.members) == 2 and m.shard.published == m.shard.members for m in managers
        ),
        "both replicas agree on the ring",
        timeout=WAIT,
    )

    # Created after the ring settled: each is reconciled at once, by its owner only.
    hub.create(secret("fleet-token", three_node.TOKEN))
    for index in range(CLUSTERS):
        hub.create(
            cluster_connection(f"c{index}", {"endpoint": managed.url, "credentialsRef": {"name": "fleet-token"}})
        )
    client = redis.RedisCluster(host="127.0.0.1", port=redis_cluster.ports[0])
    try:
        eventually(
            lambda: client.scard("clusters:all") == CLUSTERS and sum(map(reconciles, managers)) == CLUSTERS,
            "every cluster reconciled and stored",
            timeout=WAIT,
        )
        # Nothing else is due before the 30 s interval: every replica's informer has seen the hub's
        # last write of every cluster (the status patches) and its queue has nothing due or in flight.
        eventually(lambda: all(map(settled, managers)), "every replica caught up and idle", timeout=WAIT)
        counts = [reconciles(manager) for manager in managers]
        assert sum(counts) == CLUSTERS and all(count > 0 for count in counts), counts
        owned = [
            sum(
                1
                for index in range(CLUSTERS)
                if m.shard is not None
                and m.shard.owns(
                    m.controllers["ClusterConnection"].ref_of(
                        {"metadata": {"namespace": HUB_NAMESPACE, "name": f"c{index}"}}
                    )
                )
            )
            for m in managers
        ]
        assert owned == counts  # each replica reconciled exactly the clusters the ring gives it
        for index in range(CLUSTERS):
            assert client.exists(f"cluster:c{index}:metrics") == 1
        assert (
            hub.get("clusterpulse.io/v1alpha1", "clusterconnections", "c0", HUB_NAMESPACE)["status"]["phase"]
            == "Connected"
        )
    finally:
        client.close()


MS_API = "clusterpulse.io/v1alpha1"
POD_SOURCE = {
    "source": {"apiVersion": "v1", "kind": "Pod"},
    "fields": [{"name": "phase", "path": ".status.phase"}],
    "rbac": {"resourceTypeName": "pods"},
}


def held_by(manager: Manager, names: list[str]) -> set[str]:
    """The clusters among ``names`` whose ClusterConnection ``manager`` holds."""
    shard = manager.shard
    assert shard is not None
    return {name for name in names if shard.holds(ObjectRef("ClusterConnection", HUB_NAMESPACE, name))}


def start_sharded_fleet(hub: Any, endpoint: str, managers: list[Manager], names: list[str]) -> dict[str, set[str]]:
    """Start the managers, let the ring settle, then add ClusterConnections ``names`` (all at
    ``endpoint``); once every one is connected and held, return each replica's clusters (both hold some)."""
    for manager in managers:
        manager.start()
    eventually(
        lambda: all(
            m.shard is not None and len(m.shard.members) == 2 and m.shard.published == m.shard.members for m in managers
        ),
        "the ring settles",
        timeout=WAIT,
    )
    # Created after the ring settled: each cluster starts at once on its owner.
    hub.create(secret("fleet-token", three_node.TOKEN))
    for name in names:
        hub.create(cluster_connection(name, {"endpoint": endpoint, "credentialsRef": {"name": "fleet-token"}}))

    def connected() -> bool:
        items = hub.list(MS_API, "clusterconnections", HUB_NAMESPACE)
        return len(items) == len(names) and all((o.get("status") or {}).get("phase") == "Connected" for o in items)

    eventually(connected, "every cluster connected", timeout=WAIT)
    eventually(
        lambda: set().union(*(held_by(m, names) for m in managers)) == set(names), "every cluster held", timeout=WAIT
    )
    holdings = {manager.identity: held_by(manager, names) for manager in managers}
    assert all(holdings.values()) and not set.intersection(*holdings.values()), holdings
    return holdings


def test_sharded_replicas_collect_a_metricsource_each_from_its_own_clusters(
    hub: Any, kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    """Every replica collects the MetricSource from the clusters it holds; the holder of the
    MetricSource adds the shares up into its status."""
    managed = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    hub.add_crd("clusterpulse.io", "v1alpha1", "MetricSource", "metricsources", short_names=("ms",))
    managers = make_managers(hub, redis_url, tmp_path, '"redis", "cluster", "metricsource"')
    client = redis.Redis.from_url(redis_url)
    try:
        names = [f"m{index}" for index in range(8)]
        holdings = start_sharded_fleet(hub, managed.url, managers, names)

        hub.create(
            {
                "apiVersion": MS_API,
                "kind": "MetricSource",
                "metadata": {"name": "pods", "namespace": HUB_NAMESPACE},
                "spec": POD_SOURCE,
            }
        )

        def status() -> dict[str, Any]:
            return hub.get(MS_API, "metricsources", "pods", HUB_NAMESPACE).get("status") or {}

        eventually(
            lambda: set(status().get("shards") or {}) == set(holdings), "both replicas report their share", timeout=WAIT
        )
        # The holder comes back soon for a share it did not see at its first run, and adds both up.
        per_cluster = len(three_node.PODS)
        eventually(
            lambda: status().get("clustersCollected") == len(names),
            "the holder's status adds up both shares",
            timeout=WAIT,
        )
        final = status()
        assert final["phase"] == "Active", final
        assert final["resourcesCollected"] == per_cluster * len(names), final
        assert final["errorsLastRun"] == 0, final
        # Each replica collected exactly the clusters whose ClusterConnection it holds.
        shares = {member: set(share["clusters"]) for member, share in final["shards"].items()}
        assert shares == holdings, (shares, holdings)
        for name in names:
            stored = client.get(f"cluster:{name}:custom:{HUB_NAMESPACE}/pods:resources")
            assert stored is not None, name
            assert json.loads(stored)["resourceCount"] == per_cluster
        assert client.exists(f"metricsource:{HUB_NAMESPACE}:pods") == 1
        # Both replicas wrote their share into the status; one holds the MetricSource (the totals).
        writers = {record.user_agent for record in hub.writes if record.path.endswith("/metricsources/pods/status")}
        assert writers == {f"clusterpulse/{manager.identity}" for manager in managers}
        holders = [
            m
            for m in managers
            if m.shard is not None and m.shard.holds(ObjectRef("MetricSource", HUB_NAMESPACE, "pods"))
        ]
        assert len(holders) == 1
        # Deleted: the replica the ring gives it to removes the definition and every cluster's data.
        hub.delete(MS_API, "metricsources", "pods", HUB_NAMESPACE)
        eventually(
            lambda: (
                client.exists(f"metricsource:{HUB_NAMESPACE}:pods") == 0
                and not list(client.scan_iter(f"cluster:*:custom:{HUB_NAMESPACE}/pods:*"))
            ),
            "the MetricSource's stored state is removed",
            timeout=WAIT,
        )
    finally:
        for manager in managers:
            manager.stop()
        client.close()


ANY_NODES = {"condition": "nodes >= 1", "severity": "warning", "for": "0s", "message": "{cluster} has nodes"}


def test_sharded_replicas_fire_an_alert_rule_on_every_cluster_and_one_counts_them_all(
    hub: Any, kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    """An AlertRule is evaluated by every replica on the clusters it holds (their pieces reach that
    replica only), so it fires on all of them; the replica holding the rule reports them all."""
    managed = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    hub.add_crd("clusterpulse.io", "v1alpha1", "AlertRule", "alertrules", short_names=("ar",))
    hub.add_crd("clusterpulse.io", "v1alpha1", "MetricSource", "metricsources", short_names=("ms",))
    # metricsource: the expression compiler of AlertRule conditions.
    managers = make_managers(
        hub,
        redis_url,
        tmp_path,
        '"redis", "cluster", "metricsource", "alerts"',
        "[plugins.alerts]\nstatus_interval = 1.0\n",
    )
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    source = f"AlertRule {HUB_NAMESPACE}/any-nodes"

    def firing_on() -> set[str]:
        return {
            str(client.hget(key, "cluster"))
            for key in client.scan_iter("alerts:*")
            if client.hget(key, "source") == source
        }

    def status() -> dict[str, Any]:
        return hub.get(MS_API, "alertrules", "any-nodes", HUB_NAMESPACE).get("status") or {}

    try:
        names = [f"a{index}" for index in range(8)]
        holdings = start_sharded_fleet(hub, managed.url, managers, names)
        hub.create(
            {
                "apiVersion": MS_API,
                "kind": "AlertRule",
                "metadata": {"name": "any-nodes", "namespace": HUB_NAMESPACE},
                "spec": ANY_NODES,
            }
        )
        eventually(
            lambda: firing_on() == set(names),
            "the rule firing on every cluster, whichever replica holds it",
            timeout=WAIT,
        )
        eventually(
            lambda: status().get("firingClusters") == len(names),
            "the status counting every replica's alerts",
            timeout=WAIT,
        )
        final = status()
        assert final["phase"] == "Ready" and final["firing"] == sorted(names), final
        holders = [
            m
            for m in managers
            if m.shard is not None and m.shard.holds(ObjectRef("AlertRule", HUB_NAMESPACE, "any-nodes"))
        ]
        assert len(holders) == 1
        writers = {record.user_agent for record in hub.writes if record.path.endswith("/alertrules/any-nodes/status")}
        assert writers == {f"clusterpulse/{holders[0].identity}"}, (writers, holdings)
        # Deleted: every replica drops the rule, and its alerts resolve on every cluster.
        hub.delete(MS_API, "alertrules", "any-nodes", HUB_NAMESPACE)
        eventually(lambda: not firing_on(), "every cluster's alert resolved", timeout=WAIT)
    finally:
        for manager in managers:
            manager.stop()
        client.close()


def test_a_cluster_taken_over_keeps_its_alerts_and_the_new_holder_resolves_them(
    hub: Any, kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    """Alerts stored by a replica that stops are adopted by the one taking its clusters over: when
    the condition clears there, they resolve (the new holder never saw them fire). A replica
    handing clusters over to a newcomer forgets them."""
    managed = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    hub.add_crd("clusterpulse.io", "v1alpha1", "AlertRule", "alertrules", short_names=("ar",))
    managers = make_managers(
        hub,
        redis_url,
        tmp_path,
        '"redis", "cluster", "alerts"',
        "[plugins.alerts]\nevaluation_interval = 0.5\nrestore_grace = 0.5\n",
        handover_delay=0.5,
    )
    client = redis.Redis.from_url(redis_url, decode_responses=True)

    def cordoned_on() -> set[str]:  # three_node's worker-1 is cordoned: built-in NodeUnschedulable
        return {key.split(":")[1] for key in client.scan_iter("alerts:*:NodeUnschedulable-*")}

    try:
        names = [f"h{index}" for index in range(8)]
        start_sharded_fleet(hub, managed.url, managers, names)
        eventually(lambda: cordoned_on() == set(names), "the alert stored on every cluster by its holder", timeout=WAIT)
        survivor, leaving = managers
        moving = held_by(leaving, names)
        assert moving
        node = managed.get("v1", "nodes", "worker-1")
        node["spec"]["unschedulable"] = False
        managed.update(node)
        # Within the 30 s interval: the leaving replica does not reconcile its clusters again.
        leaving.stop()
        eventually(lambda: held_by(survivor, names) == set(names), "the survivor holding every cluster", timeout=WAIT)
        # Taken over and reconciled at once: the uncordoned node resolves the adopted alerts.
        eventually(lambda: not cordoned_on() & moving, "the taken-over clusters' alerts resolved", timeout=30.0)

        # A new member joins: the survivor lets go of the clusters it hands over, and its alert
        # engine forgets them (the joiner evaluates them now).
        managers += make_managers(
            hub,
            redis_url,
            tmp_path,
            '"redis", "cluster", "alerts"',
            "[plugins.alerts]\nevaluation_interval = 0.5\nrestore_grace = 0.5\n",
            handover_delay=0.5,
            identities=("replica-c",),
        )
        managers[-1].start()
        eventually(lambda: bool(held_by(managers[-1], names)), "the joiner holding clusters", timeout=WAIT)
        alerts: Any = survivor.runtime.plugins.plugin("alerts")
        eventually(
            lambda: set(alerts.engine.clusters) == held_by(survivor, names) != set(names),
            "the survivor's engine keeping only the clusters it holds",
            timeout=WAIT,
        )
    finally:
        for manager in managers:
            manager.stop()
        client.close()


# --------------------------------------------------------------------------- the fleet test

FLEET = 300
INTERVAL = 4.0
# The production Lease timings (the manager's defaults, as the Go manager's). A replica whose
# renewals lapse exits by design, and the others take its objects over: with shorter timings
# (4 / 3 / 0.5 s) a loaded 2-core machine starved the one hub emulator serving four replicas and
# 300 objects, every replica lost its Lease in the same second ("shard member Lease ... lost") and
# the objects moved again after the test had seen the ring agree. That was the machine, not a
# double reconcile: the fence refused every late write (docs/faults.md, the Lease paragraph).
LEASE_DURATION = 15.0
RENEW_DEADLINE = 10.0
RETRY_PERIOD = 2.0
#: Bound of a wait on the replicas: ten Lease durations (a ring change takes one or two).
WAIT = FLEET_WAIT = 10 * LEASE_DURATION


def replica_main(hub_url: str, redis_url: str, identity: str, config_dir: str) -> int:
    """One sharded replica (cluster + redis plugins) with short Lease timings and a short interval.

    The interval is set on the loaded cluster plugin directly: the config file's minimum (30 s)
    is for users, and this test needs several intervals in a few seconds.
    """
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format=f"%(asctime)s {identity} %(name)s %(message)s")
    config_file = Path(config_dir) / f"{identity}.toml"
    config_file.write_text(
        f'[clusterpulse]\nplugins = ["redis", "cluster"]\nnamespace = "{HUB_NAMESPACE}"\nsharding = true\n'
        f"lease_duration = {LEASE_DURATION}\nrenew_deadline = {RENEW_DEADLINE}\nretry_period = {RETRY_PERIOD}\n"
        f"shard_handover_delay = {INTERVAL}\nshutdown_grace = 5.0\n"
        'metrics_bind_address = "0"\nhealth_probe_bind_address = "0"\n'
        f'[plugins.redis]\nurl = "{redis_url}"\n'
        "[plugins.cluster]\nresource_collection_enabled = false\n"
    )
    go = Path(config_dir) / f"{identity}.go"
    while not go.exists():  # started ahead (imports done), joins when the test says so
        time.sleep(0.05)
    config, host = load(str(config_file), env={})
    plugin = host.plugin("cluster")
    assert isinstance(plugin, ClusterPlugin)
    plugin.clusterpulse_configure(config, attrs.evolve(plugin.settings, reconciliation_interval=int(INTERVAL)))
    configuration = kubernetes.client.Configuration()
    configuration.host = hub_url
    configuration.ssl_ca_cert = str(loopback_ca().ca_file)  # the parent's (inherited through the environment)
    runtime = build_runtime(config, host, hub=KubeClient(kubernetes.client.ApiClient(configuration)))
    return Manager(runtime, identity).run()


Write = tuple[str, float]  # (writer identity, wall time)


def status_writes(hub: Any) -> dict[str, list[Write]]:
    """Per ClusterConnection, who patched its status when (successful reconciles)."""
    found: dict[str, list[Write]] = {}
    marker = f"/namespaces/{HUB_NAMESPACE}/clusterconnections/"
    for record in hub.writes:
        if record.method == "PATCH" and marker in record.path and record.path.endswith("/status"):
            name = record.path.split(marker, 1)[1].split("/", 1)[0]
            found.setdefault(name, []).append((record.user_agent.removeprefix("clusterpulse/"), record.time))
    return found


def writers_since(found: Mapping[str, list[Write]], since: float, names: list[str]) -> dict[str, set[str]]:
    return {name: {who for who, at in found.get(name, []) if at >= since} for name in names}


def too_close(found: Mapping[str, list[Write]], interval: float) -> list[str]:
    """Objects two replicas reconciled within one interval of each other (at once, or a handover too early)."""
    bad = []
    for name, rows in found.items():
        for first, second in itertools.combinations(rows, 2):
            if first[0] != second[0] and abs(first[1] - second[1]) < interval * 0.9:
                bad.append(f"{name}: {first} / {second}")
    return bad


@pytest.fixture(params=["redis", "redis-cluster"])
def fleet_store(request: pytest.FixtureRequest) -> tuple[str, Callable[[], Any]]:
    """The store the replicas write to (a redis-server, or a three-node Redis Cluster) and a client factory."""
    if request.param == "redis":
        url = str(request.getfixturevalue("redis_url"))
        return url, lambda: redis.Redis.from_url(url)
    cluster: RedisClusterProcesses = request.getfixturevalue("redis_cluster")
    return cluster.url, lambda: redis.RedisCluster(host="127.0.0.1", port=cluster.ports[0])


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(hub_url: str, redis_url: str, identity: str, go: bool = True) -> subprocess.Popen[bytes]:
        """Start a replica process; with ``go`` false it waits for ``(tmp_path / f"{identity}.go").touch()``."""
        if go:
            (tmp_path / f"{identity}.go").touch()
        log = (tmp_path / f"{identity}.log").open("w")
        child = subprocess.Popen(
            [sys.executable, __file__, hub_url, redis_url, identity, str(tmp_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).resolve().parents[2],
        )
        started.append(child)
        return child

    yield start
    for child in started:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in started:
        try:
            child.wait(15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(10)


STARTED = [time.time()]


def progress(what: str) -> None:
    """Phase timings, shown by pytest when the test fails."""
    print(f"{time.time() - STARTED[0]:6.1f} s {what}", file=sys.stderr)


@pytest.mark.slow
def test_three_replicas_share_300_clusters_hand_over_on_failure_and_rebalance_on_join(
    kube_api: Callable[..., Any],
    fleet_store: tuple[str, Callable[[], Any]],
    replicas: Callable[..., subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    fleet_redis_url, fleet_client = fleet_store
    hub = kube_api(request_log_limit=200_000)
    kind = CLUSTER_CONNECTION
    hub.add_crd(kind.group, kind.version, kind.kind, kind.plural, short_names=kind.short_names)
    hub.seed(hub_objects())
    managed = kube_api(objects=three_node.NODES[:1], version=three_node.VERSION, require_token=three_node.TOKEN)
    hub.create(secret("fleet-token", three_node.TOKEN))
    names = [f"c{index}" for index in range(FLEET)]
    logs = lambda: "\n".join(p.read_text()[-3000:] for p in sorted(tmp_path.glob("*.log")))  # noqa: E731

    STARTED[0] = time.time()
    children = {name: replicas(hub.url, fleet_redis_url, name) for name in ("replica-a", "replica-b", "replica-c")}
    joining = replicas(hub.url, fleet_redis_url, "replica-d", go=False)

    def members(identity: str) -> tuple[str, ...]:
        lease = hub.get("coordination.k8s.io/v1", "leases", f"clusterpulse-shard-{identity}", HUB_NAMESPACE)
        annotations = (lease or {}).get("metadata", {}).get("annotations") or {}
        return tuple(json.loads(annotations.get("clusterpulse.io/shard-view", "[]")))

    try:
        eventually(
            lambda: all(len(members(name)) == 3 for name in children),
            "three replicas agree on the ring",
            timeout=FLEET_WAIT,
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{logs()}") from exc
    progress("ring")
    # Created once the ring settled: each cluster starts at once, on its owner only.
    for name in names:
        hub.create(cluster_connection(name, {"endpoint": managed.url, "credentialsRef": {"name": "fleet-token"}}))
    created = time.time()
    progress("created")

    # The first interval: every object reconciled, each by exactly one replica, all three working.
    try:
        eventually(
            lambda: all(writers_since(status_writes(hub), created, names).values()),
            "every cluster reconciled once",
            timeout=FLEET_WAIT,
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{logs()}") from exc
    assert all(c.poll() is None for c in children.values()), logs()
    progress("all reconciled")
    writers = writers_since(status_writes(hub), created, names)
    assert all(len(w) == 1 for w in writers.values()), {n: w for n, w in writers.items() if len(w) != 1}
    counts = {name: sum(1 for w in writers.values() if name in w) for name in children}
    assert sum(counts.values()) == FLEET and all(count >= FLEET // 6 for count in counts.values()), counts

    # A replica dies without releasing its Lease. The handover protocol's latency is the Lease
    # duration (the others count it gone), a few rounds (they agree on the new ring) and the
    # handover delay: the first taken-over object is reconciled within that (twice, for a loaded
    # machine). Reconciling all of the ~100 taken-over objects is throughput (workers, machine
    # load), bounded only by the wait.
    lost = [name for name, w in writers.items() if "replica-b" in w]
    children["replica-b"].kill()
    children["replica-b"].wait(10)
    killed_at = time.time()

    def takeovers() -> list[float]:
        found = status_writes(hub)
        return [
            min((at for who, at in found.get(name, []) if at > killed_at and who != "replica-b"), default=0.0)
            for name in lost
        ]

    eventually(lambda: all(takeovers()), "the dead replica's objects are reconciled by the others", timeout=FLEET_WAIT)
    first, last = min(takeovers()) - killed_at, max(takeovers()) - killed_at
    progress(f"taken over: first after {first:.1f} s, all {len(lost)} after {last:.1f} s")
    protocol = LEASE_DURATION + 4 * RETRY_PERIOD + INTERVAL
    assert first < 2 * protocol, f"the first takeover took {first:.1f} s (protocol latency {protocol:.1f} s)"

    # A replica joins: ownership rebalances to it.
    children["replica-d"] = joining
    (tmp_path / "replica-d.go").touch()
    progress("joined")

    # Once the three live members publish the same view, the old owners have let go of what
    # moved; from then on every object is reconciled by its one new owner (the newcomer starts
    # what it gained one handover delay later).
    live = ("replica-a", "replica-c", "replica-d")
    eventually(
        lambda: all(members(name) == live for name in live), "the members agree on the new ring", timeout=FLEET_WAIT
    )
    agreed = time.time()
    progress("agreed")
    eventually(
        lambda: all(writers_since(status_writes(hub), agreed, names).values()),
        "every cluster reconciled on the new ring",
        timeout=FLEET_WAIT,
    )
    writers = writers_since(status_writes(hub), agreed, names)
    assert all(len(w) == 1 for w in writers.values()), {n: w for n, w in writers.items() if len(w) != 1}
    counts = {name: sum(1 for w in writers.values() if name in w) for name in live}
    assert all(count >= FLEET // 6 for count in counts.values()), counts
    progress("rebalanced")

    # Never, in the whole run, did two replicas reconcile one object within one interval of each
    # other (at the same time, or a new owner starting before the handover delay).
    assert too_close(status_writes(hub), INTERVAL) == [], logs()
    # And everything reached the store.
    stored = fleet_client()
    try:
        assert stored.scard("clusters:all") == FLEET
        assert all(stored.exists(f"cluster:{name}:metrics") for name in names[:: FLEET // 10])
    finally:
        stored.close()


@pytest.mark.slow
def test_a_member_paused_past_its_lease_writes_nothing_once_resumed(
    kube_api: Callable[..., Any], redis_url: str, replicas: Callable[..., subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    """SIGSTOP one of two replicas until the other has taken its clusters over, then SIGCONT it.

    Its workers find reconciles due at once (a requeue interval passed during the pause), and
    the hub answers Lease calls slowly, so they run before its member round can notice the lapse:
    only the write fence, fed by the member Lease's renewals, keeps them from writing.
    """
    hub = kube_api(request_log_limit=50_000)
    kind = CLUSTER_CONNECTION
    hub.add_crd(kind.group, kind.version, kind.kind, kind.plural, short_names=kind.short_names)
    hub.seed(hub_objects())
    managed = kube_api(objects=three_node.NODES[:1], version=three_node.VERSION, require_token=three_node.TOKEN)
    hub.create(secret("fleet-token", three_node.TOKEN))
    names = [f"p{index}" for index in range(12)]
    logs = lambda: "\n".join(p.read_text()[-3000:] for p in sorted(tmp_path.glob("*.log")))  # noqa: E731
    paused = replicas(hub.url, redis_url, "replica-a")
    survivor = replicas(hub.url, redis_url, "replica-b")

    def view(identity: str) -> tuple[str, ...]:
        lease = hub.get("coordination.k8s.io/v1", "leases", f"clusterpulse-shard-{identity}", HUB_NAMESPACE)
        annotations = (lease or {}).get("metadata", {}).get("annotations") or {}
        return tuple(json.loads(annotations.get("clusterpulse.io/shard-view", "[]")))

    both = ("replica-a", "replica-b")
    eventually(lambda: view("replica-a") == view("replica-b") == both, "the two replicas agree", timeout=FLEET_WAIT)
    for name in names:
        hub.create(cluster_connection(name, {"endpoint": managed.url, "credentialsRef": {"name": "fleet-token"}}))
    created = time.time()
    eventually(
        lambda: all(writers_since(status_writes(hub), created, names).values()),
        "every cluster reconciled",
        timeout=FLEET_WAIT,
    )
    held = [name for name, who in writers_since(status_writes(hub), created, names).items() if "replica-a" in who]
    assert held, "replica-a got no clusters"

    hub.delay(r"/leases", RENEW_DEADLINE / 4)  # slow, but within the bound of a Lease call
    paused.send_signal(signal.SIGSTOP)
    paused_at = time.time()
    try:
        eventually(
            lambda: all(
                any(who == "replica-b" and at > paused_at for who, at in status_writes(hub)[name]) for name in held
            ),
            "replica-b reconciling replica-a's clusters",
            timeout=FLEET_WAIT,
        )
    finally:
        paused.send_signal(signal.SIGCONT)
    resumed_at = time.time()
    code = paused.wait(FLEET_WAIT)
    late = [
        w
        for w in hub.writes
        if w.user_agent == "clusterpulse/replica-a" and w.time > paused_at and "/leases" not in w.path
    ]
    print(
        f"\npaused {resumed_at - paused_at:.1f} s (Lease {LEASE_DURATION} s); replica-a exited {code}; its "
        f"writes after the pause: {len(late)}"
    )
    assert not late, f"replica-a wrote after its Lease lapsed: {late}\n{logs()}"
    assert code == 1, logs()
    log = (tmp_path / "replica-a.log").read_text()
    assert "could not renew lease" in log, log[-3000:]
    assert survivor.poll() is None, logs()


if __name__ == "__main__":
    sys.exit(replica_main(*sys.argv[1:5]) if len(sys.argv) == 5 else os.EX_USAGE)
