"""Kubernetes names that go into storage keys, validated before they are used.

A name read from a managed cluster is not trusted: a node called ``edge-01:metrics`` would
land on another node's key. Every name that becomes part of a key must be the kind of
Kubernetes name the API server itself enforces (a node or ClusterOperator name is a DNS-1123
subdomain). :class:`NameGuard` skips the others with one warning per name and counts them in
``clusterpulse_invalid_names_total``.
"""

from __future__ import annotations

import logging
import re
import threading

from prometheus_client import CollectorRegistry, Counter

log = logging.getLogger(__name__)

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_DNS_LABEL = re.compile(_LABEL)
#: Warnings remembered per guard (each invalid name is warned about once).
_WARNED_LIMIT = 10_000


def is_dns1123_subdomain(name: str) -> bool:
    """Lower-case alphanumerics, ``-`` and ``.``, alphanumeric at both ends, at most 253 characters."""
    return 0 < len(name) <= 253 and _SUBDOMAIN.fullmatch(name) is not None


def is_dns1123_label(name: str) -> bool:
    """Lower-case alphanumerics and ``-``, alphanumeric at both ends, at most 63 characters."""
    return 0 < len(name) <= 63 and _DNS_LABEL.fullmatch(name) is not None


class NameGuard:
    """Checks names before they go into keys; counts and warns about the invalid ones."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._warned: set[tuple[str, str, str]] = set()
        self._counter: Counter | None = None
        self.skipped = 0

    def register_metrics(self, registry: CollectorRegistry) -> None:
        """Count skipped names in ``clusterpulse_invalid_names_total{kind}`` of ``registry``."""
        self._counter = Counter(
            "clusterpulse_invalid_names_total",
            "Names skipped because they are not valid Kubernetes names",
            ["kind"],
            registry=registry,
        )

    def subdomain(self, kind: str, cluster: str, name: str) -> bool:
        """Whether ``name`` (a ``kind`` of cluster ``cluster``) is a DNS-1123 subdomain; else skip it."""
        if is_dns1123_subdomain(name):
            return True
        self._skip(kind, cluster, name)
        return False

    def _skip(self, kind: str, cluster: str, name: str) -> None:
        with self._lock:
            self.skipped += 1
            first = (kind, cluster, name) not in self._warned
            if first and len(self._warned) < _WARNED_LIMIT:
                self._warned.add((kind, cluster, name))
        if self._counter is not None:
            self._counter.labels(kind=kind).inc()
        if first:
            log.warning(
                "cluster %s: skipping %s %r: not a valid Kubernetes name (DNS-1123 subdomain)",
                cluster,
                kind,
                name[:300],
            )
