"""``clusterpulse policy can-i`` against a real redis-server holding compiled policies: a table of
(principal, cluster, resource) -> decision and deciding policy, by the API's rules."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from clusterpulse_redis import RedisStore
from policy_support import NAMESPACE, piece

from clusterpulse_core.cli import main
from clusterpulse_core.serde import format_time

NOW = datetime.now(UTC).replace(microsecond=0)


def _policy(
    subjects: dict[str, Any],
    effect: str,
    priority: int,
    rules: list[dict[str, Any]],
    default: str = "none",
    enabled: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "identity": {"subjects": subjects, "priority": priority},
        "access": {"effect": effect, "enabled": enabled},
        "scope": {"clusters": {"default": default, "rules": rules}},
        **extra,
    }


POLICIES = {
    "admins": _policy(
        {"groups": ["platform-admins"]},
        "Allow",
        1000,
        [{"selector": {"matchPattern": ".*"}, "permissions": {"view": True, "viewMetrics": True}}],
    ),
    "staging-team": _policy(
        {"groups": ["team-a"]},
        "Allow",
        100,
        [
            {
                "selector": {"matchNames": ["staging"]},
                "resources": [{"type": "pods", "visibility": "none"}, {"type": "nodes", "visibility": "all"}],
            }
        ],
    ),
    "certs": _policy(
        {"groups": ["team-a"]},
        "Allow",
        90,
        [
            {
                "selector": {"matchNames": ["staging"]},
                "resources": [
                    {
                        "type": "certificates",
                        "visibility": "filtered",
                        "filters": {"fields": {"issuer": {"allowed": ["corp-*"]}}},
                    }
                ],
            }
        ],
    ),
    "deny-prod": _policy({"groups": ["contractors"]}, "Deny", 500, [{"selector": {"matchNames": ["prod"]}}]),
    "contractors": _policy({"groups": ["contractors"]}, "Allow", 100, [{"selector": {"matchPattern": ".*"}}]),
    "dana-qa": _policy({"users": ["dana"]}, "Allow", 50, [{"selector": {"matchNames": ["qa"]}}], default="allow"),
    "erin-off": _policy({"users": ["erin"]}, "Allow", 50, [{"selector": {"matchPattern": ".*"}}], enabled=False),
    "frank-old": _policy(
        {"users": ["frank"]},
        "Allow",
        50,
        [{"selector": {"matchPattern": ".*"}}],
        lifecycle={"validity": {"notAfter": format_time(NOW - timedelta(days=1))}},
    ),
    "robots": _policy(
        {"serviceAccounts": [{"name": "scraper", "namespace": "monitoring"}]},
        "Allow",
        10,
        [{"selector": {"matchPattern": "^prod"}}],
    ),
}

TABLE = [
    # (principal options, cluster, resource, decision, deciding policy)
    (["--user", "alice", "--group", "platform-admins"], "prod", None, "allow", "admins"),
    (["--user", "alice", "--group", "platform-admins"], "prod", "pods", "allow", "admins"),
    (["--user", "bob", "--group", "team-a"], "staging", None, "allow", "staging-team"),
    (["--user", "bob", "--group", "team-a"], "staging", "pods", "deny", "staging-team"),
    (["--user", "bob", "--group", "team-a"], "staging", "nodes", "partial", "staging-team"),
    (["--user", "bob", "--group", "team-a"], "prod", None, "deny", ""),
    (["--user", "bob", "--group", "team-a"], "staging", "certificates", "partial", "certs"),
    (["--user", "bob", "--group", "team-a"], "prod", "certificates", "deny", ""),
    (["--user", "alice", "--group", "platform-admins"], "prod", "certificates", "deny", ""),
    (["--user", "carl", "--group", "contractors"], "prod", None, "deny", "deny-prod"),  # Deny 500 over Allow 100
    (["--user", "carl", "--group", "contractors"], "prod", "pods", "deny", "deny-prod"),
    (["--user", "carl", "--group", "contractors"], "staging", None, "allow", "contractors"),
    (["--user", "dana"], "qa", None, "allow", "dana-qa"),
    (["--user", "dana"], "prod", None, "deny", ""),  # default access never applies to the cluster itself
    (["--user", "dana"], "prod", "pods", "allow", "dana-qa"),  # ... but does to what is in it
    (["--user", "erin"], "prod", None, "deny", ""),  # disabled
    (["--user", "frank"], "prod", None, "deny", ""),  # expired
    (["--service-account", "monitoring/scraper"], "prod-east", None, "allow", "robots"),
    (["--service-account", "monitoring/scraper"], "staging", None, "deny", ""),
    (["--user", "system:serviceaccount:monitoring:scraper"], "prod", None, "allow", "robots"),
    (["--group", "platform-admins", "--group", "contractors"], "prod", None, "allow", "admins"),
]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``clusterpulse ARGS`` in this process (plugin commands included): exit status, stdout, stderr."""
    capsys.readouterr()
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def config(store: RedisStore, redis_url: str, tmp_path: Path) -> Path:
    store.store([piece(name, body, NOW) for name, body in POLICIES.items()])
    path = tmp_path / "clusterpulse.toml"
    path.write_text(f'[clusterpulse]\nplugins = ["redis", "policy"]\n[plugins.redis]\nurl = "{redis_url}"\n')
    return path


@pytest.mark.parametrize(("who", "cluster", "resource", "decision", "policy"), TABLE)
def test_can_i_table(
    config: Path,
    who: list[str],
    cluster: str,
    resource: str | None,
    decision: str,
    policy: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--config", str(config), "policy", "can-i", cluster, *([resource] if resource else []), *who, "--json"]
    code, out, err = run(args, capsys)
    assert code == 0, err
    answer = json.loads(out)
    assert (answer["decision"], answer["policy"]) == (decision, f"policy:{NAMESPACE}:{policy}" if policy else "")
    assert answer["reason"]


def test_the_text_output_names_the_policy_and_why(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        ["--config", str(config), "policy", "can-i", "prod", "--user", "carl", "--group", "contractors"], capsys
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:3] == [
        "deny",
        "policy: clusterpulse/deny-prod (priority 500)",
        "why: Deny policy matches by rule 0 (matchNames contains 'prod')",
    ]
    assert "  policy:clusterpulse:deny-prod (500): decides: Deny by rule 0 (matchNames contains 'prod')" in lines


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "error: give --user, --group or --service-account"),
        (["--service-account", "scraper"], "error: --service-account: expected <namespace>/<name>, got 'scraper'"),
        (["--user", "a\tb"], "error: --user: 'a\\tb' is not a usable name"),
    ],
)
def test_bad_principals_are_one_error_line(
    config: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _out, err = run(["--config", str(config), "policy", "can-i", "prod", *args], capsys)
    assert code == 1
    assert err.startswith(message) and len(err.splitlines()) == 1, err


def test_an_unreachable_redis_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from clusterpulse_testing.servers import free_port

    path = tmp_path / "clusterpulse.toml"
    path.write_text(
        f'[clusterpulse]\nplugins = ["redis", "policy"]\n[plugins.redis]\nurl = "redis://127.0.0.1:{free_port()}/0"\n'
    )
    code, _out, err = run(["--config", str(path), "policy", "can-i", "prod", "--user", "x"], capsys)
    assert code == 1
    assert err.startswith("error: cannot read policies: ConnectionError") and len(err.splitlines()) == 1, err
