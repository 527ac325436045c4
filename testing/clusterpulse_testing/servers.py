"""Starting real server binaries (redis-server, victoria-metrics, docker-registry) for tests."""

from __future__ import annotations

import json
import secrets
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusterpulse_testing.tls import Certificates


class ServerUnavailable(Exception):
    """A server binary is missing or the server did not come up."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def require_binary(name: str, apt_package: str, extra_paths: Sequence[str] = ()) -> str:
    """The path of ``name``; fails the test with the install command when it is missing."""
    found = shutil.which(name)
    for candidate in extra_paths:
        if not found and Path(candidate).exists():
            found = candidate
    if not found:
        import pytest  # only here: `clusterpulse demo` uses this module without the testing extra

        pytest.fail(
            f"{name} is not installed: run `sudo apt-get install -y {apt_package}` "
            f"(or `bash scripts/test.sh`, which installs it)",
            pytrace=False,
        )
    return found


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


class ServerProcess:
    """One server process on a fixed loopback port that can be stopped and restarted.

    ``argv`` is built by ``command(port, workdir)``; ``ready(port)`` says when it serves.
    """

    def __init__(
        self,
        name: str,
        command: Callable[[int, Path], list[str]],
        ready: Callable[[int], bool] | None = None,
        port: int | None = None,
        startup_timeout: float = 20.0,
    ) -> None:
        self.name = name
        self.port = port or free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix=f"clusterpulse-{name}-"))
        self._command = command
        self._ready = ready or port_open
        self._timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self._log = self.workdir / "server.log"

    def start(self) -> ServerProcess:
        """Start the server and wait (bounded) until it is ready."""
        if self.process is not None and self.process.poll() is None:
            return self
        with self._log.open("ab") as log:
            self.process = subprocess.Popen(
                self._command(self.port, self.workdir), stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir
            )
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerUnavailable(f"{self.name} exited with {self.process.returncode}: {self.log_tail()}")
            if self._ready(self.port):
                return self
            time.sleep(0.05)
        self.stop()
        raise ServerUnavailable(f"{self.name} did not become ready in {self._timeout}s: {self.log_tail()}")

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s) and wait until the port is free."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None
        deadline = time.monotonic() + 5
        while port_open(self.port) and time.monotonic() < deadline:
            time.sleep(0.05)

    def restart(self) -> ServerProcess:
        """Stop and start again on the same port."""
        self.stop()
        return self.start()

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the server printed."""
        try:
            return "\n".join(self._log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def cleanup(self) -> None:
        """Stop and remove the work directory."""
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def redis_process(
    binary: str, port: int | None = None, password: str = "", tls: Certificates | None = None
) -> ServerProcess:
    """A redis-server without persistence on a loopback port; with ``tls``, that port speaks TLS only.

    The TLS server presents ``tls.cert_file`` and does not ask clients for certificates.
    """

    def command(p: int, workdir: Path) -> list[str]:
        argv = [
            binary,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
            "--protected-mode",
            "no",
        ]
        if tls is None:
            argv += ["--port", str(p)]
        else:
            argv += [
                "--port",
                "0",
                "--tls-port",
                str(p),
                "--tls-cert-file",
                str(tls.cert_file),
                "--tls-key-file",
                str(tls.key_file),
                "--tls-ca-cert-file",
                str(tls.ca_file),
                "--tls-auth-clients",
                "no",
            ]
        if password:
            argv += ["--requirepass", password]
        return argv

    def ready(p: int) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", p), timeout=0.5) as raw:
                sock = raw
                if tls is not None:
                    context = ssl.create_default_context(cafile=str(tls.ca_file))
                    context.check_hostname = False  # readiness only: the tests check the name
                    sock = context.wrap_socket(raw)
                if password:
                    sock.sendall(f"AUTH {password}\r\n".encode())
                    sock.recv(64)
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    return ServerProcess("redis-server", command, ready, port)


def _redis_command(port: int, *args: str) -> bytes:
    """One inline command to a local redis-server; its raw reply (bounded read)."""
    with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
        sock.sendall((" ".join(args) + "\r\n").encode())
        reply = b""
        while not _reply_complete(reply):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
        return reply


def _reply_complete(reply: bytes) -> bool:
    """Whether ``reply`` holds one whole simple or bulk RESP reply."""
    head, sep, _rest = reply.partition(b"\r\n")
    if not sep:
        return False
    if not head.startswith(b"$") or int(head[1:]) < 0:
        return True
    return len(reply) >= len(head) + 2 + int(head[1:]) + 2


class RedisClusterProcesses:
    """A Redis Cluster of ``count`` primaries (no replicas) on loopback ports.

    Each node is a :class:`ServerProcess` with ``--cluster-enabled yes``; its ``nodes.conf``
    lives in its work directory, so :meth:`restart` brings a node back with its id and slots.
    ``cluster-require-full-coverage no`` keeps the other nodes' slots writable while one is down.
    """

    def __init__(self, server: str, cli: str, count: int = 3, node_timeout_ms: int = 1000) -> None:
        self._cli = cli
        # The bus port is chosen too (the default, port + 10000, may be taken or beyond 65535).
        bus_ports: dict[int, int] = {}

        def command(p: int, workdir: Path) -> list[str]:
            bus = bus_ports.setdefault(p, free_port())
            return [
                server,
                "--port",
                str(p),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(workdir),
                "--protected-mode",
                "no",
                "--cluster-enabled",
                "yes",
                "--cluster-port",
                str(bus),
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                str(node_timeout_ms),
                "--cluster-require-full-coverage",
                "no",
            ]

        self.nodes = [ServerProcess(f"redis-cluster-{i}", command) for i in range(count)]

    @property
    def ports(self) -> list[int]:
        """Every node's port."""
        return [node.port for node in self.nodes]

    @property
    def url(self) -> str:
        """``redis+cluster://127.0.0.1:<first node>`` (one startup node is enough)."""
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    def start(self, timeout: float = 30.0) -> RedisClusterProcesses:
        """Start the nodes, join them (``redis-cli --cluster create``), wait for ``cluster_state:ok``."""
        for node in self.nodes:
            node.start()
        addresses = [f"127.0.0.1:{port}" for port in self.ports]
        created = subprocess.run(
            [self._cli, "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        if created.returncode != 0:
            raise ServerUnavailable(
                f"redis-cli --cluster create failed: {created.stdout[-500:]!r} {created.stderr[-500:]!r}"
            )
        self.wait_ok(timeout)
        return self

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Wait (bounded) until every node reports ``cluster_state:ok`` and knows every other node."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if all(self._node_ok(port) for port in self.ports):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise ServerUnavailable(f"redis cluster not ok after {timeout} s")

    def _node_ok(self, port: int) -> bool:
        info = _redis_command(port, "CLUSTER", "INFO")
        nodes = _redis_command(port, "CLUSTER", "NODES")
        connected = nodes.count(b" connected")
        return b"cluster_state:ok" in info and connected >= len(self.nodes) and b"fail" not in nodes

    def flush(self) -> None:
        """``FLUSHALL`` on every node."""
        for port in self.ports:
            _redis_command(port, "FLUSHALL")

    def restart(self, index: int) -> None:
        """Stop node ``index`` and start it again (same port, same ``nodes.conf``), then wait for ok."""
        self.nodes[index].restart()
        self.wait_ok()

    def cleanup(self) -> None:
        """Stop every node and remove the work directories."""
        for node in self.nodes:
            node.cleanup()


def docker_registry_process(binary: str, port: int | None = None) -> ServerProcess:
    """An anonymous, plain-HTTP docker-registry (CNCF distribution) with storage in its work dir."""

    def command(p: int, workdir: Path) -> list[str]:
        config = workdir / "config.yml"
        # JSON is YAML: no YAML writer needed for this fixed shape.
        config.write_text(
            json.dumps(
                {
                    "version": 0.1,
                    "log": {"level": "warn", "accesslog": {"disabled": True}},
                    "storage": {"filesystem": {"rootdirectory": str(workdir / "data")}},
                    "http": {"addr": f"127.0.0.1:{p}", "secret": secrets.token_hex(16)},
                    "health": {"storagedriver": {"enabled": False}},
                }
            )
        )
        return [binary, "serve", str(config)]

    return ServerProcess("docker-registry", command, port=port)


def haproxy_sni_process(binary: str, routes: Mapping[str, int], port: int | None = None) -> ServerProcess:
    """HAProxy in TCP mode on a loopback port routing TLS connections, without terminating them, on their
    SNI: ``routes`` maps a server name to a loopback port (TLS passthrough, as an OpenShift passthrough
    Route); a connection with another or no SNI is closed."""

    def command(p: int, workdir: Path) -> list[str]:
        lines = [
            "global",
            "  maxconn 256",
            "defaults",
            "  mode tcp",
            "  timeout connect 5s",
            "  timeout client 60s",
            "  timeout server 60s",
            "frontend passthrough",
            f"  bind 127.0.0.1:{p}",
            "  tcp-request inspect-delay 5s",
            "  tcp-request content accept if { req_ssl_hello_type 1 }",
        ]
        backends: list[str] = []
        for index, (name, target) in enumerate(sorted(routes.items())):
            lines.append(f"  use_backend route{index} if {{ req_ssl_sni -i {name} }}")
            backends += [f"backend route{index}", f"  server upstream{index} 127.0.0.1:{target}"]
        config = workdir / "haproxy.cfg"
        config.write_text("\n".join(lines + backends) + "\n")
        return [binary, "-db", "-f", str(config)]

    return ServerProcess("haproxy", command, port=port)
