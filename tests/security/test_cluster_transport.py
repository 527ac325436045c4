"""Finding 1: a managed cluster's TLS is verified by default and its token never goes over plain http.

Each hostile server is a real API emulator on loopback that records every request it serves: an
HTTPS server whose certificate chains to a CA the hub was not given, and a plain-HTTP server. The
token must never reach either unless the credentials Secret opts out, visibly.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clusterpulse_testing.tls import make_certificates
from security_support import TOKEN, ClusterHub, condition, managed_objects

SKIP_TLS_VERIFY_KEY = "insecure-skip-tls-verify"
ALLOW_HTTP_KEY = "insecure-allow-http"


def _impostor(kube_api: Callable[..., Any], tmp_path: Path) -> Any:
    """An HTTPS API server whose certificate is valid for 127.0.0.1 but signed by an unknown CA."""
    made = make_certificates(tmp_path / "impostor", "localhost", ip="127.0.0.1", ca_name="impostor CA")
    return kube_api(
        objects=managed_objects(),
        require_token=TOKEN,
        tls_cert=made.cert_file,
        tls_key=made.key_file,
        tls_ca=made.ca_file,
    )


def test_without_ca_crt_the_system_trust_store_decides_and_an_unknown_ca_is_refused(
    cluster_hub: ClusterHub, kube_api: Callable[..., Any], tmp_path: Path
) -> None:
    impostor = _impostor(kube_api, tmp_path)
    cluster_hub.add("east", impostor.url, {"token": TOKEN})
    status = cluster_hub.reconcile("east")
    assert status["phase"] == "Error"
    assert "CERTIFICATE_VERIFY_FAILED" in status["message"], status["message"]
    assert impostor.requests == [], "the hub sent a request (and its token) to an unverified server"
    assert condition(status, "InsecureTransport") is None


def test_the_secrets_ca_crt_is_the_only_trust_root(
    cluster_hub: ClusterHub, kube_api: Callable[..., Any], tmp_path: Path
) -> None:
    impostor = _impostor(kube_api, tmp_path)
    genuine = kube_api(objects=managed_objects(), require_token=TOKEN)  # the loopback CA
    cluster_hub.add("east", genuine.url, {"token": TOKEN, "ca.crt": genuine.ca_pem})
    cluster_hub.add("west", impostor.url, {"token": TOKEN, "ca.crt": genuine.ca_pem})
    east, west = cluster_hub.reconcile("east"), cluster_hub.reconcile("west")
    assert (east["phase"], west["phase"]) == ("Connected", "Error")
    assert [c["type"] for c in east["conditions"]] == ["Ready"]
    assert "CERTIFICATE_VERIFY_FAILED" in west["message"]
    assert impostor.requests == []


def test_skipping_verification_is_an_explicit_visible_opt_out(
    cluster_hub: ClusterHub, kube_api: Callable[..., Any], tmp_path: Path
) -> None:
    impostor = _impostor(kube_api, tmp_path)
    cluster_hub.add("east", impostor.url, {"token": TOKEN, SKIP_TLS_VERIFY_KEY: "true"})
    status = cluster_hub.reconcile("east")
    assert status["phase"] == "Connected"
    warning = condition(status, "InsecureTransport")
    assert warning is not None and (warning["status"], warning["reason"]) == ("True", "TLSVerificationSkipped")
    assert SKIP_TLS_VERIFY_KEY in warning["message"] and "clusterpulse/east-token" in warning["message"]
    assert sorted((t, r) for t, r, _m in cluster_hub.events("east")) == [
        ("Normal", "Connected"),
        ("Warning", "InsecureTransport"),
    ]
    again = cluster_hub.reconcile("east")  # no second Event for the same opt-out
    assert condition(again, "InsecureTransport")["lastTransitionTime"] == warning["lastTransitionTime"]
    assert [r for _t, r, _m in cluster_hub.events("east")].count("InsecureTransport") == 1


def test_a_token_never_goes_to_plain_http_unless_the_secret_allows_it(
    cluster_hub: ClusterHub, kube_api: Callable[..., Any]
) -> None:
    plain = kube_api(objects=managed_objects(), require_token=TOKEN, tls=False)
    assert plain.url.startswith("http://")
    cluster_hub.add("east", plain.url, {"token": TOKEN})
    status = cluster_hub.reconcile("east")
    assert status["phase"] == "Error"
    assert "refusing to send the bearer token over plain http://" in status["message"]
    assert ALLOW_HTTP_KEY in status["message"]
    assert plain.requests == [], "the token went over plain http"

    cluster_hub.add("west", plain.url, {"token": TOKEN, ALLOW_HTTP_KEY: "true"})
    allowed = cluster_hub.reconcile("west")
    assert allowed["phase"] == "Connected"
    warning = condition(allowed, "InsecureTransport")
    assert warning is not None and warning["reason"] == "PlainHTTP"
    assert ("Warning", "InsecureTransport") in [(t, r) for t, r, _m in cluster_hub.events("west")]


def test_an_opt_out_key_must_be_true_or_false(cluster_hub: ClusterHub, kube_api: Callable[..., Any]) -> None:
    cluster = kube_api(objects=managed_objects(), require_token=TOKEN)
    cluster_hub.add("east", cluster.url, {"token": TOKEN, "ca.crt": cluster.ca_pem, SKIP_TLS_VERIFY_KEY: "yes"})
    status = cluster_hub.reconcile("east")
    assert status["phase"] == "Error"
    assert f'key {SKIP_TLS_VERIFY_KEY} must be "true" or "false"' in status["message"]
    assert cluster.requests == []


def test_removing_the_opt_out_removes_the_warning(cluster_hub: ClusterHub, kube_api: Callable[..., Any]) -> None:
    cluster = kube_api(objects=managed_objects(), require_token=TOKEN)
    cluster_hub.add("east", cluster.url, {"token": TOKEN, SKIP_TLS_VERIFY_KEY: "true"})
    assert condition(cluster_hub.reconcile("east"), "InsecureTransport") is not None
    secret = cluster_hub.hub.get("v1", "secrets", "east-token", "clusterpulse")
    secret["data"] = {"token": secret["data"]["token"], "ca.crt": base64.b64encode(cluster.ca_pem.encode()).decode()}
    cluster_hub.hub.update(secret)
    status = cluster_hub.reconcile("east")
    assert status["phase"] == "Connected"
    assert [c["type"] for c in status["conditions"]] == ["Ready"]
