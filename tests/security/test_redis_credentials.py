"""Redis and VictoriaMetrics credentials: ACL user from env, verified TLS with the host name checked,
passwords never shown by ``config show``, insecure choices warned by ``config check``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner
from clusterpulse_redis.connection import connect
from clusterpulse_redis.settings import RedisSettings
from clusterpulse_testing.servers import ServerProcess, redis_process, require_binary
from clusterpulse_testing.tls import Certificates, make_certificates

from clusterpulse_core.cli import cli
from clusterpulse_core.config import ConfigError, build_settings

PASSWORD = "S3cret-redis"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    """A CA and a certificate for ``localhost`` only (no IP address in it)."""
    return make_certificates(tmp_path_factory.mktemp("redis-tls"), "localhost")


@pytest.fixture(scope="module")
def tls_redis(certificates: Certificates) -> Iterator[ServerProcess]:
    """A real redis-server speaking TLS only, with an ACL user ``alice``."""
    server = redis_process(require_binary("redis-server", "redis-server"), tls=certificates).start()
    admin = redis.Redis(host="localhost", port=server.port, ssl=True, ssl_ca_certs=str(certificates.ca_file))
    admin.acl_setuser("alice", enabled=True, passwords=[f"+{PASSWORD}"], keys=["~*"], commands=["+@all"])
    admin.close()
    yield server
    server.cleanup()


def _settings(env: dict[str, str], **file: object) -> RedisSettings:
    settings = build_settings(RedisSettings, file, "plugins.redis", env)
    assert isinstance(settings, RedisSettings)
    return settings


def _whoami(client: redis.Redis) -> str:
    who = client.acl_whoami()  # bytes or str, depending on the redis-py version
    return who.decode() if isinstance(who, bytes) else str(who)


def test_an_acl_user_from_redis_username_and_redis_password(
    tls_redis: ServerProcess, certificates: Certificates
) -> None:
    settings = _settings(
        {
            "REDIS_HOST": "localhost",
            "REDIS_PORT": str(tls_redis.port),
            "REDIS_USERNAME": "alice",
            "REDIS_PASSWORD": PASSWORD,
        },
        tls=True,
        tls_ca_file=str(certificates.ca_file),
    )
    client = connect(settings)
    assert _whoami(client) == "alice"
    client.close()
    # The same user with a rediss:// URL naming no credentials.
    url = _settings(
        {"REDIS_USERNAME": "alice", "REDIS_PASSWORD": PASSWORD},
        url=f"rediss://localhost:{tls_redis.port}/0",
        tls_ca_file=str(certificates.ca_file),
    )
    client = connect(url)
    assert _whoami(client) == "alice"
    client.close()
    wrong = _settings(
        {"REDIS_USERNAME": "alice", "REDIS_PASSWORD": "wrong"},
        host="localhost",
        port=tls_redis.port,
        tls=True,
        tls_ca_file=str(certificates.ca_file),
        retry_attempts=0,
    )
    client = connect(wrong)
    with pytest.raises(redis.AuthenticationError):
        client.ping()
    client.close()


@pytest.mark.parametrize("form", ["host", "url"])
def test_redis_tls_checks_the_host_name(tls_redis: ServerProcess, certificates: Certificates, form: str) -> None:
    # The certificate names localhost, not 127.0.0.1: same server, same CA, only the name differs.
    def settings(host: str) -> RedisSettings:
        if form == "url":
            return RedisSettings(
                url=f"rediss://{host}:{tls_redis.port}/0", tls_ca_file=str(certificates.ca_file), retry_attempts=0
            )
        return RedisSettings(
            host=host, port=tls_redis.port, tls=True, tls_ca_file=str(certificates.ca_file), retry_attempts=0
        )

    good = connect(settings("localhost"))
    assert good.ping()
    good.close()
    bad = connect(settings("127.0.0.1"))
    with pytest.raises(redis.ConnectionError, match=r"(?i)hostname|IP address mismatch|certificate"):
        bad.ping()
    bad.close()


def test_redis_tls_refuses_a_certificate_of_another_ca(tls_redis: ServerProcess, tmp_path: Path) -> None:
    other = make_certificates(tmp_path, "localhost", ca_name="another CA")
    client = connect(
        RedisSettings(host="localhost", port=tls_redis.port, tls=True, tls_ca_file=str(other.ca_file), retry_attempts=0)
    )
    with pytest.raises(redis.ConnectionError, match=r"(?i)certificate verify failed"):
        client.ping()
    client.close()


def test_credentials_given_twice_are_refused_naming_both_keys() -> None:
    with pytest.raises(ConfigError, match=r"plugins\.redis\.url: has a password and password \(REDIS_PASSWORD\)"):
        _settings({"REDIS_PASSWORD": "p"}, url="rediss://alice:other@localhost:6380/0")
    with pytest.raises(ConfigError, match=r"plugins\.redis\.url: names a user and username \(REDIS_USERNAME\)"):
        _settings({"REDIS_USERNAME": "bob"}, url="rediss://alice@localhost:6380/0")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "clusterpulse.toml"
    path.write_text(text)
    return path


def test_config_show_masks_every_password_inside_urls(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[clusterpulse]\nplugins = ["redis", "vmwriter"]\n'
        '[plugins.redis]\nurl = "rediss://alice:S3cret-url@redis.example:6380/0"\n'
        '[plugins.vmwriter]\nendpoint = "https://writer:S3cret-vm@vm.example:8428"\n',
    )
    result = CliRunner().invoke(
        cli,
        ["--config", str(path), "config", "show"],
        env={"VM_BEARER_TOKEN": "", "VM_PASSWORD": "", "REDIS_PASSWORD": ""},
    )
    assert result.exit_code == 0, result.output
    assert "S3cret" not in result.output
    shown = json.loads(result.output)
    assert shown["plugins"]["redis"]["url"] == "rediss://alice:********@redis.example:6380/0"
    assert shown["plugins"]["vmwriter"]["endpoint"] == "https://writer:********@vm.example:8428"


def test_config_show_masks_credentials_from_the_environment(tmp_path: Path) -> None:
    path = _write(tmp_path, '[clusterpulse]\nplugins = ["redis", "vmwriter"]\n')
    result = CliRunner().invoke(
        cli,
        ["--config", str(path), "config", "show"],
        env={
            "REDIS_USERNAME": "alice",
            "REDIS_PASSWORD": "S3cret-env",
            "VM_PASSWORD": "S3cret-vm-env",
            "VM_USERNAME": "writer",
        },
    )
    assert result.exit_code == 0, result.output
    assert "S3cret" not in result.output
    shown = json.loads(result.output)
    assert shown["plugins"]["redis"]["username"] == "alice"
    assert shown["plugins"]["redis"]["password"] == "********"
    assert shown["plugins"]["vmwriter"]["password"] == "********"


def test_config_check_warns_about_credentials_over_plain_transport(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[clusterpulse]\nplugins = ["redis", "vmwriter"]\n'
        '[plugins.redis]\npassword = "p"\n'
        '[plugins.vmwriter]\nendpoint = "http://vm:8428"\nbearer_token = "t"\n',
    )
    result = CliRunner().invoke(cli, ["--config", str(path), "config", "check"], env={"REDIS_PASSWORD": ""})
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert any("plugins.redis.password: sent to Redis over plain TCP" in line for line in warnings), warnings
    assert any(
        "plugins.vmwriter.endpoint: credentials are sent to VictoriaMetrics over plain http://" in line
        for line in warnings
    ), warnings
    secure = _write(
        tmp_path,
        '[clusterpulse]\nplugins = ["redis", "vmwriter"]\n'
        '[plugins.redis]\npassword = "p"\ntls = true\n'
        '[plugins.vmwriter]\nendpoint = "https://vm:8428"\nbearer_token = "t"\n',
    )
    result = CliRunner().invoke(cli, ["--config", str(secure), "config", "check"], env={"REDIS_PASSWORD": ""})
    assert result.exit_code == 0, result.output
    assert "warning:" not in result.output
