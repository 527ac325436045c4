"""What the writer sends over HTTP, checked on a recording loopback peer."""

from __future__ import annotations

import base64
from typing import Any

from clusterpulse_model.pieces import ClusterMetricsPiece
from clusterpulse_testing.servers import free_port
from clusterpulse_vmwriter import VMSettings, VMWriterBackend


def backend_for(url: str, **overrides: Any) -> VMWriterBackend:
    options: dict[str, Any] = {"retry_backoff": 0.05, "retry_backoff_max": 0.2, "flush_timeout": 5.0}
    return VMWriterBackend(VMSettings(endpoint=url, enabled=True, **{**options, **overrides}))


def value(backend: VMWriterBackend, name: str) -> float:
    sample = backend.metrics.registry.get_sample_value(name)
    assert sample is not None
    return sample


def test_store_never_waits_for_victoria_metrics(recorder: Any, pieces: Any) -> None:
    recorder.gate.clear()
    backend = backend_for(recorder.url)
    backend.store(pieces.reconcile("c1", pieces.at(3)))
    assert recorder.arrived.wait(10)
    # The peer is holding the first request: later cycles are queued, not blocked on.
    backend.store(pieces.reconcile("c1", pieces.at(2)))
    backend.store(pieces.reconcile("c1", pieces.at(1)))
    assert len(recorder.requests) == 1 and not recorder.gate.is_set()
    assert value(backend, "clusterpulse_vm_queue_batches") == 3
    recorder.gate.set()
    assert backend.flush(10)
    backend.close()
    assert len(recorder.requests) == 3
    assert value(backend, "clusterpulse_vm_samples_written_total") == 3 * (2 * 17 + 8 + 2 + 4 + 2)
    assert value(backend, "clusterpulse_vm_queue_batches") == 0


def test_bearer_token_header(recorder: Any, pieces: Any) -> None:
    backend = backend_for(recorder.url, bearer_token="s3cret")
    backend.store([ClusterMetricsPiece("c", pieces.cluster_metrics(pieces.at(1)))])
    backend.close()
    assert recorder.requests[0].headers["authorization"] == "Bearer s3cret"


def test_basic_auth_header(recorder: Any, pieces: Any) -> None:
    backend = backend_for(recorder.url, username="writer", password="pw:1")
    backend.store([ClusterMetricsPiece("c", pieces.cluster_metrics(pieces.at(1)))])
    backend.close()
    expected = "Basic " + base64.b64encode(b"writer:pw:1").decode()
    assert recorder.requests[0].headers["authorization"] == expected


def test_large_bodies_are_gzipped_small_ones_not(recorder: Any, pieces: Any) -> None:
    backend = backend_for(recorder.url, compress_above=2000)
    backend.store([ClusterMetricsPiece("c", pieces.cluster_metrics(pieces.at(1)))])
    backend.store(pieces.reconcile("c", pieces.at(1), nodes=20))
    backend.close()
    small, large = recorder.requests
    assert "content-encoding" not in small.headers and small.raw_body == small.body
    assert large.headers["content-encoding"] == "gzip" and len(large.raw_body) < len(large.body)
    assert len(large.body.splitlines()) == 20 * 17 + 8 + 2 + 4 + 2


def test_one_request_per_store_call_split_at_batch_size(recorder: Any, pieces: Any) -> None:
    backend = backend_for(recorder.url, batch_size=5)
    backend.store([ClusterMetricsPiece("c", pieces.cluster_metrics(pieces.at(1)))])
    backend.close()
    assert [len(req.body.splitlines()) for req in recorder.requests] == [5, 3]
    assert all(req.body.endswith(b"\n") for req in recorder.requests)


def test_a_refused_body_is_dropped_and_counted(recorder: Any, pieces: Any) -> None:
    recorder.status = 400
    backend = backend_for(recorder.url)
    backend.store([ClusterMetricsPiece("c", pieces.cluster_metrics(pieces.at(1)))])
    assert backend.flush(10)
    recorder.status = 204
    backend.store([ClusterMetricsPiece("c", pieces.cluster_metrics(pieces.at(0)))])
    backend.close()
    assert len(recorder.requests) == 2
    assert value(backend, "clusterpulse_vm_dropped_samples_total") == 8
    assert value(backend, "clusterpulse_vm_samples_written_total") == 8


def test_close_gives_up_after_flush_timeout_and_counts_the_rest(pieces: Any) -> None:
    backend = backend_for(f"http://127.0.0.1:{free_port()}", flush_timeout=0.3)
    backend.store([ClusterMetricsPiece("c", pieces.cluster_metrics(pieces.at(1)))])
    backend.close()
    assert value(backend, "clusterpulse_vm_dropped_samples_total") == 8
    assert value(backend, "clusterpulse_vm_queue_batches") == 0
    backend.store([ClusterMetricsPiece("c", pieces.cluster_metrics(pieces.at(0)))])  # closed: ignored
    assert len(backend.queue) == 0


def test_credentials_from_files_mounted_from_a_secret(recorder: Any, pieces: Any, tmp_path: Any) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("from-file\n")  # a Secret key written by hand often ends with a newline
    backend = backend_for(recorder.url, bearer_token_file=str(token_file))
    backend.store([ClusterMetricsPiece("c", pieces.cluster_metrics(pieces.at(1)))])
    backend.close()
    password_file = tmp_path / "password"
    password_file.write_text("pw-file")
    backend = backend_for(recorder.url, username="writer", password_file=str(password_file))
    backend.store([ClusterMetricsPiece("c", pieces.cluster_metrics(pieces.at(1)))])
    backend.close()
    assert [request.headers["authorization"] for request in recorder.requests] == [
        "Bearer from-file",
        "Basic " + base64.b64encode(b"writer:pw-file").decode(),
    ]
