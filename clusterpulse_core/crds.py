"""CRD manifests generated from the kinds plugins declare (``clusterpulse crds``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from clusterpulse_core.kinds import ResourceKind


def crd_manifest(kind: ResourceKind) -> dict[str, Any]:
    """The ``apiextensions.k8s.io/v1`` CustomResourceDefinition of one kind."""
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.singular or kind.kind.lower(),
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    if kind.categories:
        names["categories"] = list(kind.categories)
    version: dict[str, Any] = {
        "name": kind.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": kind.schema},
    }
    if kind.status_subresource:
        version["subresources"] = {"status": {}}
    if kind.printer_columns:
        version["additionalPrinterColumns"] = [
            {
                "name": c.name,
                "type": c.type,
                "jsonPath": c.json_path,
                **({"description": c.description} if c.description else {}),
                **({"priority": c.priority} if c.priority else {}),
            }
            for c in kind.printer_columns
        ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": kind.crd_name},
        "spec": {
            "group": kind.group,
            "names": names,
            "scope": "Namespaced" if kind.namespaced else "Cluster",
            "versions": [version],
        },
    }


class _PlainDumper(yaml.SafeDumper):
    """Writes shared sub-schemas out in full (no ``&id001`` anchors in a manifest)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def crds_yaml(kinds: Iterable[ResourceKind]) -> str:
    """Multi-document YAML of the CRDs of ``kinds``."""
    return yaml.dump_all(
        [crd_manifest(k) for k in kinds], Dumper=_PlainDumper, sort_keys=False, default_flow_style=False
    )
