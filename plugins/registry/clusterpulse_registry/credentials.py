"""Registry credentials from the Secret a RegistryConnection references (docs/compatibility.md#registry-checks)."""

from __future__ import annotations

from clusterpulse_core.kube.client import KubeClient, NotFoundError
from clusterpulse_core.kube.credentials import CredentialsError, SecretCache, read_secret
from clusterpulse_registry.auth import Credentials
from clusterpulse_registry.resource import CredentialsRef


class MissingCredentialsError(Exception):
    """The Secret ``spec.credentialsRef`` names does not exist, or lacks a key; the message names the field.

    Not a reason to check anonymously (upstream did): the reference says credentials are wanted
    (docs/compatibility.md#c15).
    """


def registry_credentials(
    hub: KubeClient, ref: CredentialsRef | None, namespace: str, cache: SecretCache | None = None
) -> Credentials:
    """Keys ``username`` and ``password`` of the Secret; anonymous only without a reference.

    A missing Secret, or one without a non-empty ``username`` and ``password``, raises
    :class:`MissingCredentialsError` naming ``spec.credentialsRef`` and the Secret or key
    (docs/compatibility.md#c15); any other failure to read it raises :class:`CredentialsError` so
    the reconcile is retried. With ``cache``, a hub that cannot be reached answers from the last
    good read.
    """
    if ref is None or not ref.name:
        return Credentials()
    secret_namespace = ref.namespace or namespace
    source = f"Secret {secret_namespace}/{ref.name}"
    try:
        data = read_secret(hub, secret_namespace, ref.name, cache)
    except CredentialsError as exc:
        if isinstance(exc.__cause__, NotFoundError):
            raise MissingCredentialsError(
                f"spec.credentialsRef: {source} does not exist (create it with the keys username and "
                "password, or remove credentialsRef to check the registry anonymously)"
            ) from exc
        raise
    for key in ("username", "password"):
        if not data.get(key):
            raise MissingCredentialsError(f"spec.credentialsRef: {source} has no non-empty key {key!r}")
    return Credentials(data["username"], data["password"], source)
