"""Registry credentials from the Secret a RegistryConnection references (docs/compatibility.md#registry-checks)."""

from __future__ import annotations

from clusterpulse_core.kube.client import KubeClient, NotFoundError
from clusterpulse_core.kube.credentials import CredentialsError, SecretCache, read_secret
from clusterpulse_registry.auth import Credentials
from clusterpulse_registry.client import Log
from clusterpulse_registry.resource import CredentialsRef


def registry_credentials(
    hub: KubeClient, ref: CredentialsRef | None, namespace: str, log: Log, cache: SecretCache | None = None
) -> Credentials:
    """Keys ``username`` and ``password`` of the Secret; anonymous without a reference or Secret.

    A missing Secret is tolerated (anonymous access, as upstream); any other failure to read
    it raises :class:`CredentialsError` so the reconcile is retried. With ``cache``, a hub that
    cannot be reached answers from the last good read.
    """
    if ref is None or not ref.name:
        return Credentials()
    secret_namespace = ref.namespace or namespace
    source = f"Secret {secret_namespace}/{ref.name}"
    try:
        data = read_secret(hub, secret_namespace, ref.name, cache)
    except CredentialsError as exc:
        if isinstance(exc.__cause__, NotFoundError):
            log.warning("%s not found: checking the registry anonymously", source)
            return Credentials(source=source)
        raise
    credentials = Credentials(data.get("username", ""), data.get("password", ""), source)
    if not credentials.complete:
        log.warning("%s lacks a non-empty username or password: checking the registry anonymously", source)
    return credentials
