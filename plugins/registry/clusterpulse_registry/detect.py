"""Registry facts read from the response headers of ``GET /v2/`` (docs/compatibility.md#registry-checks)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

#: ``Server`` header substrings and the feature each one sets; the first match wins.
SERVER_PRODUCTS = (("harbor", "harbor_detected"), ("artifactory", "artifactory_detected"), ("nexus", "nexus_detected"))


@attrs.frozen
class HeaderFacts:
    """The API version (empty when not announced) and the features the headers reveal."""

    version: str = ""
    features: dict[str, bool] = attrs.field(factory=dict)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return None


def detect_headers(headers: Mapping[str, str]) -> HeaderFacts:
    """Version and features from ``Docker-Distribution-Api-Version``, ``Server``, digest and ``Link``."""
    features: dict[str, bool] = {}
    version = _header(headers, "Docker-Distribution-Api-Version") or ""
    if version:
        features["docker_v2_api"] = True
    server = (_header(headers, "Server") or "").lower()
    for needle, feature in SERVER_PRODUCTS:
        if needle in server:
            features[feature] = True
            break
    if _header(headers, "Docker-Content-Digest") is not None:
        features["content_digest"] = True
    if _header(headers, "Link") is not None:
        features["pagination"] = True
    return HeaderFacts(version, features)
