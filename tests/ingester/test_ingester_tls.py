"""TLS on by default (docs/push-mode.md#tls): the hub's own CA and server certificate, renewed before they expire.

The certificates are made against the hub emulator (real Secrets and ConfigMaps over the real
client), the clock is moved through the lifetimes, and agents connect over real gRPC TLS.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from clusterpulse_ingester import certs
from clusterpulse_ingester.certs import CertificateError, CertificateKeeper, leaf_names, service_names
from clusterpulse_ingester.settings import IngesterSettings
from clusterpulse_testing.polling import eventually
from cryptography import x509
from push_support import HUB_NAMESPACE, WAIT, agent_register, ingester_port

from clusterpulse_core.context import Runtime
from clusterpulse_core.kube.client import KubeClient

CA_LIFE, CERT_LIFE = dt.timedelta(days=3650), dt.timedelta(days=90)
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SERVER_NAME = f"clusterpulse-ingester.{HUB_NAMESPACE}.svc"


def _data(hub: Any, kind: str, name: str) -> dict[str, str]:
    found = hub.get("v1", kind, name, HUB_NAMESPACE)
    assert found is not None, f"{kind} {name} was not made"
    data = found.get("data") or {}
    return {k: base64.b64decode(v).decode() for k, v in data.items()} if kind == "secrets" else dict(data)


def _certs(bundle: str) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(bundle.encode())


def test_the_hub_makes_its_ca_and_certificate_and_renews_them_before_they_expire(hub: Any) -> None:
    names = [*service_names("clusterpulse-ingester", HUB_NAMESPACE), "ingester.example.com", "192.0.2.7"]
    keeper = CertificateKeeper(
        KubeClient(hub.api_client()),
        HUB_NAMESPACE,
        names,
        CA_LIFE,
        CERT_LIFE,
        (HUB_NAMESPACE, "ingester-ca", "service-ca.crt"),
    )
    first = keeper.ensure(T0)
    ca = _data(hub, "secrets", certs.CA_SECRET)
    served = _data(hub, "secrets", certs.SERVER_SECRET)
    assert (served["tls.crt"], served["tls.key"], served["ca.crt"]) == (first.cert_pem, first.key_pem, first.ca_bundle)
    assert hub.get("v1", "secrets", certs.SERVER_SECRET, HUB_NAMESPACE)["type"] == "kubernetes.io/tls"
    # The agents' CA bundle is published where the agent deploy copies it from.
    assert _data(hub, "configmaps", "ingester-ca")["service-ca.crt"] == first.ca_bundle == ca["ca.crt"]
    leaf = x509.load_pem_x509_certificate(first.cert_pem.encode())
    (root,) = _certs(first.ca_bundle)
    leaf.verify_directly_issued_by(root)
    assert leaf_names(leaf) == set(names)
    assert leaf.not_valid_after_utc == T0 + CERT_LIFE

    # Nothing is due: the same material, nothing written.
    hub.clear_requests()
    assert keeper.ensure(T0 + dt.timedelta(days=59)) == first
    assert [m for m, _, _ in hub.requests if m != "GET"] == []

    # Past two thirds of its life the server certificate is renewed, by the same CA.
    renewed = keeper.ensure(T0 + dt.timedelta(days=61))
    assert renewed.cert_pem != first.cert_pem and renewed.ca_bundle == first.ca_bundle
    x509.load_pem_x509_certificate(renewed.cert_pem.encode()).verify_directly_issued_by(root)

    # Past two thirds of the CA's life a new CA is published next to the old one, but the old one
    # keeps issuing while it outlives a server certificate (agents have time to get the new bundle).
    later = T0 + CA_LIFE * 2 / 3 + dt.timedelta(days=1)
    overlap = keeper.ensure(later)
    new_root, old_root = _certs(overlap.ca_bundle)
    assert old_root == root and new_root != root
    assert _data(hub, "configmaps", "ingester-ca")["service-ca.crt"] == overlap.ca_bundle
    x509.load_pem_x509_certificate(overlap.cert_pem.encode()).verify_directly_issued_by(old_root)

    # Once the old CA would not outlive a new certificate, the new CA issues it.
    switch = T0 + CA_LIFE - CERT_LIFE + dt.timedelta(days=1)
    switched = keeper.ensure(switch)
    switched_leaf = x509.load_pem_x509_certificate(switched.cert_pem.encode())
    switched_leaf.verify_directly_issued_by(new_root)
    assert switched_leaf.not_valid_after_utc <= new_root.not_valid_after_utc

    # The expired old CA leaves the bundle.
    assert _certs(keeper.ensure(T0 + CA_LIFE + dt.timedelta(days=1)).ca_bundle) == [new_root]
    assert set(_data(hub, "secrets", certs.CA_SECRET)) == {"ca.crt", "ca.key"}


def test_a_ca_configmap_the_hub_did_not_make_is_not_overwritten(hub: Any) -> None:
    hub.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "ingester-ca", "namespace": HUB_NAMESPACE},
            "data": {"service-ca.crt": "someone else's CA"},
        }
    )
    keeper = CertificateKeeper(
        KubeClient(hub.api_client()),
        HUB_NAMESPACE,
        ["ingester"],
        CA_LIFE,
        CERT_LIFE,
        (HUB_NAMESPACE, "ingester-ca", "service-ca.crt"),
    )
    with pytest.raises(CertificateError, match=f"ConfigMap {HUB_NAMESPACE}/ingester-ca exists and was not made"):
        keeper.ensure(T0)
    assert _data(hub, "configmaps", "ingester-ca") == {"service-ca.crt": "someone else's CA"}


def test_two_replicas_share_one_ca(hub: Any) -> None:
    keepers = [
        CertificateKeeper(KubeClient(hub.api_client()), HUB_NAMESPACE, ["ingester"], CA_LIFE, CERT_LIFE)
        for _ in range(2)
    ]
    one, two = (keeper.ensure(T0) for keeper in keepers)
    assert one == two


def test_tls_is_on_by_default_with_the_hubs_own_ca(
    start_ingester: Callable[..., tuple[Runtime, Any]], hub: Any, tmp_path: Path
) -> None:
    assert IngesterSettings().tls_enabled is True
    # No INGESTER_TLS_CERT file: the hub makes its own certificate.
    runtime, _ = start_ingester(tls_enabled=None, tls_cert=str(tmp_path / "absent.crt"))
    port = ingester_port(runtime)
    ca = tmp_path / "ca.crt"
    ca.write_text(_data(hub, "configmaps", "ingester-ca")["service-ca.crt"])
    good = IngesterSettings(ingester_address=f"127.0.0.1:{port}", tls_ca=str(ca), tls_server_name=SERVER_NAME)
    assert asyncio.run(agent_register(good)).WhichOneof("payload") == "config"
    refused = [
        IngesterSettings(ingester_address=f"127.0.0.1:{port}", tls_enabled=False),  # plaintext
        IngesterSettings(ingester_address=f"127.0.0.1:{port}", tls_server_name=SERVER_NAME),  # system roots only
        IngesterSettings(ingester_address=f"127.0.0.1:{port}", tls_ca=str(ca), tls_server_name="other.example"),
    ]
    for bad in refused:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            asyncio.run(agent_register(bad))
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_renewed_certificate_is_served_without_a_restart(
    start_ingester: Callable[..., tuple[Runtime, Any]], hub: Any, tmp_path: Path
) -> None:
    runtime, _ = start_ingester(tls_enabled=None, tls_certificates="hub", tls_renew_check_interval=0.2)
    port = ingester_port(runtime)
    ca = tmp_path / "ca.crt"
    ca.write_text(_data(hub, "configmaps", "ingester-ca")["service-ca.crt"])
    settings = IngesterSettings(ingester_address=f"127.0.0.1:{port}", tls_ca=str(ca), tls_server_name=SERVER_NAME)
    assert asyncio.run(agent_register(settings)).WhichOneof("payload") == "config"
    # Another replica renews the certificate (here: its Secret is deleted, so it is issued again).
    before = _data(hub, "secrets", certs.SERVER_SECRET)["tls.crt"]
    hub.delete("v1", "secrets", certs.SERVER_SECRET, HUB_NAMESPACE)
    after = eventually(
        lambda: (hub.get("v1", "secrets", certs.SERVER_SECRET, HUB_NAMESPACE) or {}).get("data"),
        "the server certificate to be issued again",
        timeout=WAIT,
    )
    assert base64.b64decode(after["tls.crt"]).decode() != before

    def presented() -> str:
        import ssl

        return ssl.get_server_certificate(("127.0.0.1", port))

    eventually(
        lambda: (
            x509.load_pem_x509_certificate(presented().encode())
            == x509.load_pem_x509_certificate(base64.b64decode(after["tls.crt"]))
        ),
        "the ingester to present the new certificate",
        timeout=WAIT,
    )
    assert asyncio.run(agent_register(settings)).WhichOneof("payload") == "config"


def test_a_client_certificate_whose_key_is_another_is_issued_again(hub: Any) -> None:
    """A managed cluster's Secret read back with a ``tls.key`` not of its ``tls.crt``: the agent could not
    sign in with that pair, so a new one is issued rather than kept until renewal."""
    keeper = CertificateKeeper(KubeClient(hub.api_client()), HUB_NAMESPACE, ["ingester"], CA_LIFE, CERT_LIFE)
    issued = keeper.client_certificate("edge", None, T0, CERT_LIFE)
    assert keeper.client_certificate("edge", issued, T0, CERT_LIFE) is issued, "a matching pair is kept"
    another = keeper.client_certificate("edge", None, T0, CERT_LIFE)
    mismatched = certs.KeyPair(issued.cert_pem, another.key_pem)

    renewed = keeper.client_certificate("edge", mismatched, T0, CERT_LIFE)

    assert renewed.cert_pem not in (issued.cert_pem, another.cert_pem)
    assert certs.key_matches(renewed.cert, renewed.private_key())
    assert leaf_names(renewed.cert) == {"edge"}


def test_a_ca_rotated_in_the_same_second_has_a_subject_of_its_own(hub: Any) -> None:
    """Clients pick a certificate's issuer by name: a CA made within the second its predecessor was
    (a rotation right after a start) must not share its subject, or the old CA's name would also
    name the new one (the agent-deploy end-to-end test compared issuers and passed too early)."""
    keeper = CertificateKeeper(
        KubeClient(hub.api_client()),
        HUB_NAMESPACE,
        [SERVER_NAME],
        CA_LIFE,
        CERT_LIFE,
        (HUB_NAMESPACE, "ingester-ca", "service-ca.crt"),
    )
    first = keeper.ensure(T0)
    keeper.rotate_ca(T0, dt.timedelta(0))  # the same instant, no grace: the new CA issues at once
    second = keeper.ensure(T0)

    old, new = _certs(first.ca_bundle)[0], _certs(second.ca_bundle)[0]
    assert old.subject != new.subject
    leaf = x509.load_pem_x509_certificate(second.cert_pem.encode())
    assert leaf.issuer == new.subject
    leaf.verify_directly_issued_by(new)
    with pytest.raises(ValueError):  # not its issuer (by name, then by signature)
        leaf.verify_directly_issued_by(old)
