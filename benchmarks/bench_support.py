"""What several benchmarks set up the same way: the hub's objects, an emulator process, /proc figures.

* :func:`hub_objects`: the ClusterConnection CRD, the namespace and the token Secret a hub
  emulator needs before any ClusterConnection (the emulators serve plain HTTP, so the Secret
  carries the explicit ``insecure-allow-http`` opt-out of docs/security.md);
* :func:`start_emulator`: a Kubernetes API emulator in its own process (its CPU is not the
  benchmark's);
* :func:`proc_status`, :func:`cpu_seconds`, :func:`peak_rss_mib`: a process's figures from ``/proc``.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from clusterpulse_cluster.crd import CLUSTER_CONNECTION

TICKS = os.sysconf("SC_CLK_TCK")


def hub_objects(namespace: str, secret: str) -> list[dict[str, Any]]:
    """The ClusterConnection CRD, ``namespace`` and the bearer-token Secret ``secret`` in it."""
    kind = CLUSTER_CONNECTION
    return [
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": kind.crd_name},
            "spec": {
                "group": kind.group,
                "scope": "Namespaced",
                "names": {
                    "kind": kind.kind,
                    "plural": kind.plural,
                    "singular": kind.singular,
                    "listKind": f"{kind.kind}List",
                },
                "versions": [
                    {
                        "name": kind.version,
                        "served": True,
                        "storage": True,
                        "subresources": {"status": {}},
                        "schema": {"openAPIV3Schema": dict(kind.schema)},
                    }
                ],
            },
        },
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": secret, "namespace": namespace},
            "data": {
                "token": base64.b64encode(b"bench").decode(),
                # the emulator subprocess serves plain HTTP: the explicit opt-out (docs/security.md)
                "insecure-allow-http": base64.b64encode(b"true").decode(),
            },
        },
    ]


def start_emulator(folder: Path | None, kubeconfig: Path | None = None) -> tuple[subprocess.Popen[str], str]:
    """An emulator serving the objects of ``folder`` in its own process (``kubeconfig``: also write
    one for it there); returns the process and its URL."""
    code = (
        "import sys; from clusterpulse_testing.kube_api import serve; "
        "serve(sys.argv[1] or None, 0, sys.argv[2] or None)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(folder or ""), str(kubeconfig or "")], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url.startswith("http"):
        process.kill()
        raise RuntimeError("an emulator did not start")
    return process, url


def proc_status(pid: int | str, key: str) -> int:
    """A ``kB`` line of ``/proc/<pid>/status`` (``pid`` may be ``"self"``), in bytes; 0 when absent."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def peak_rss_mib(pid: int | str = "self") -> float:
    """A process's peak RSS (``VmHWM``: unlike ``ru_maxrss``, not inherited at fork), MiB."""
    return proc_status(pid, "VmHWM") / 2**20


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (and its reaped children), seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / TICKS
