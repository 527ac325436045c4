"""``[plugins.registry]``: where the registry client may send a RegistryConnection's credentials."""

from __future__ import annotations

import ipaddress
import re

import attrs

from clusterpulse_core.config import setting

#: A DNS host name (RFC 1123 labels), without a scheme, port or path.
_HOST_NAME = re.compile(r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")


def check_realm_host(entry: str) -> None:
    """``entry`` is a host name or an IP address (no scheme, port, path or wildcard); ``ValueError`` otherwise."""
    try:
        ipaddress.ip_address(entry)
        return
    except ValueError:
        pass
    if not _HOST_NAME.match(entry.lower()):
        raise ValueError(
            f"{entry!r} is not a host name or an IP address (write auth.docker.io, not a URL, a port or a pattern)"
        )


def _realm_hosts(entries: tuple[str, ...]) -> None:
    for entry in entries:
        check_realm_host(entry)


@attrs.frozen
class RegistrySettings:
    """``[plugins.registry]``: the token services besides each registry's own origin that get its credentials."""

    token_realm_hosts: tuple[str, ...] = setting(
        (),
        check=_realm_hosts,
        help="hosts of Bearer token services (realms) outside a registry's own origin that may receive its "
        'credentials, e.g. ["auth.docker.io"] for Docker Hub; empty = the registry\'s origin only '
        "(docs/security.md#registries)",
    )

    def realm_hosts(self) -> frozenset[str]:
        """The listed hosts, lower-cased (host names compare case-insensitively)."""
        return frozenset(host.lower() for host in self.token_realm_hosts)
