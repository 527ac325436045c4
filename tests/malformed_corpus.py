"""The malformed-CR corpora's shared parts: a kind's corpus, the check of one case at the controller,
and the API server's verdict on it (the CRD refuses what its schema can).

Importable from every test folder (``tests/`` is on the path through its conftest).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
import kubernetes
import pytest

from clusterpulse_core.crds import crd_manifest
from clusterpulse_core.kinds import ResourceKind
from clusterpulse_core.runtime.bootstrap import Outcome

HUB_NAMESPACE = "clusterpulse"

#: (case id, spec changes, field the error names). ``__spec__`` replaces the whole spec.
Case = tuple[str, Mapping[str, Any], str]


@dataclass(frozen=True)
class Corpus:
    """One kind's part of the malformed-CR corpus: the object every case changes, and what healthy is."""

    kind: ResourceKind
    controller: str  # the plugin whose reconciler ``reconcile_object`` runs
    name: str
    good: Mapping[str, Any]
    state: str = "phase"  # the status field saying Error
    healthy: str = "Active"
    fails: bool = True  # a bad spec fails the reconcile (a policy's does not: it waits for a change)

    def spec(self, changes: Mapping[str, Any]) -> Any:
        """The good spec with ``changes`` applied (``__spec__``: instead of it)."""
        return changes.get("__spec__", {**self.good, **changes})

    def body(self, spec: Any, name: str | None = None) -> dict[str, Any]:
        """The object with ``spec``."""
        return {
            "apiVersion": self.kind.api_version,
            "kind": self.kind.kind,
            "metadata": {"name": name or self.name, "namespace": HUB_NAMESPACE},
            "spec": spec,
        }


def check_malformed(
    corpus: Corpus,
    reconcile: Callable[..., tuple[dict[str, Any], Outcome]],
    case: Case,
    stored: Callable[[], Any],
) -> None:
    """A malformed spec reaching the controller: Error naming its field, what was stored kept, good again after."""
    name, changes, field = case
    before = stored()
    assert before, "nothing stored by the good spec"
    status, outcome = reconcile(corpus.spec(changes))
    print(f"\n{name}: {status.get(corpus.state)}: {str(status.get('message'))[:160]}")
    assert status[corpus.state] == "Error"
    assert field in status["message"]
    assert len(status["message"]) <= 1100
    assert outcome.ok is not corpus.fails
    # What the last good reconcile stored is kept.
    assert stored() == before
    # And the good spec reconciles again.
    assert reconcile()[0][corpus.state] == corpus.healthy


def schema_errors(kind: ResourceKind, spec: Any) -> list[str]:
    """Where ``spec`` breaks the kind's CRD schema, by a validator independent of the emulator.

    jsonschema's Draft 4 is OpenAPI 3.0's dialect (boolean ``exclusiveMinimum``); the Kubernetes
    extensions (``x-kubernetes-*``, ``nullable``) it ignores say nothing the corpus cases reach.
    """
    validator = jsonschema.Draft4Validator(kind.schema["properties"]["spec"])
    return sorted(".".join(["spec", *(str(p) for p in error.absolute_path)]) for error in validator.iter_errors(spec))


def api_server_verdict(hub: Any, corpus: Corpus, case: Case) -> str:
    """Create the case's object through the real client on ``hub`` (serving the kind's real CRD).

    The API server must refuse (422, a ``details.causes`` entry naming the field, or a part of it)
    exactly the cases the CRD schema can refuse, and admit the others; returns "rejected" or
    "admitted" (an admitted object is deleted again).
    """
    name, changes, field = case
    spec = corpus.spec(changes)
    kind = corpus.kind
    expected = schema_errors(kind, spec)
    api = kubernetes.client.CustomObjectsApi(hub.api_client())
    probe = f"probe-{abs(hash(name)) % 10**8}"
    try:
        api.create_namespaced_custom_object(
            kind.group, kind.version, HUB_NAMESPACE, kind.plural, corpus.body(spec, probe)
        )
    except kubernetes.client.ApiException as error:
        body = json.loads(error.body)
        causes = [cause["field"] for cause in body["details"]["causes"]]
        print(f"\n{name}: {error.status} {body['message'][:200]}")
        assert error.status == 422 and body["reason"] == "Invalid", body
        assert expected, f"refused what the CRD schema admits: {body['message'][:300]}"
        assert any(field in cause for cause in causes), (field, causes)
        return "rejected"
    hub.delete(kind.api_version, kind.plural, probe, HUB_NAMESPACE)
    assert not expected, f"admitted what the CRD schema refuses at {expected}"
    return "admitted"


def crd_hub_fixture(*kinds: ResourceKind) -> Any:
    """A module fixture: an API server emulator serving the real CRDs of ``kinds`` and the hub namespace."""

    @pytest.fixture(scope="module")
    def crd_hub() -> Iterator[Any]:
        hub = schema_hub(*kinds)
        yield hub
        hub.stop()

    return crd_hub


def schema_hub(*kinds: ResourceKind) -> Any:
    """An API server emulator (started; stop it) serving the real CRDs of ``kinds`` and the namespace."""
    from clusterpulse_testing.kube_api import KubeAPI

    hub = KubeAPI(tls=False).start()
    hub.seed(
        [
            *(crd_manifest(kind) for kind in kinds),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HUB_NAMESPACE}},
        ]
    )
    return hub
