"""``clusterpulse policy can-i``: what a user, group or service account sees, from the compiled policies."""

from __future__ import annotations

import json

import click

from clusterpulse_core.cliutils import fail
from clusterpulse_core.clock import utcnow
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.serde import unstructure
from clusterpulse_policy.compiler import CompileError, check_subject
from clusterpulse_policy.evaluate import Decision, can_i

SA_PREFIX = "system:serviceaccount:"


def principal(user: str | None, groups: tuple[str, ...], service_account: str | None) -> tuple[str, bool]:
    """The user name to look up and whether it is a service account; ``CompileError`` for a bad name."""
    if service_account:
        namespace, sep, name = service_account.partition("/")
        if not sep or not namespace or not name:
            raise CompileError(f"--service-account: expected <namespace>/<name>, got {service_account!r}")
        if user:
            raise CompileError("--service-account: give either --user or --service-account")
        user = f"{SA_PREFIX}{namespace}:{name}"
    for group in groups:
        check_subject(group, "--group")
    if not user and not groups:
        raise CompileError("give --user, --group or --service-account")
    if user:
        check_subject(user, "--user")
    return user or "", bool(user and user.startswith(SA_PREFIX))


def format_decision(decision: Decision) -> str:
    """The decision, the deciding policy, why, and every policy looked at."""
    deciding = decision.policy.removeprefix("policy:").replace(":", "/", 1) if decision.policy else "none"
    lines = [
        f"{decision.decision}",
        f"policy: {deciding}" + ("" if decision.priority is None else f" (priority {decision.priority:g})"),
        f"why: {decision.reason}",
    ]
    if decision.permissions:
        lines.append(f"permissions: {', '.join(decision.permissions)}")
    if decision.filter is not None:
        lines.append(f"filter: {json.dumps(decision.filter, sort_keys=True)}")
    if decision.considered:
        lines.append("considered (highest priority first):")
        lines += [f"  {c.policy} ({c.priority:g}): {c.outcome}" for c in decision.considered]
    return "\n".join(lines)


def make_policy_command(plugins: PluginHost) -> click.Group:
    """The ``policy`` group, reading through ``clusterpulse_stored_policies`` (the redis plugin answers)."""

    @click.group("policy")
    def policy_cmd() -> None:
        """Access policies (MonitorAccessPolicy) as the ClusterPulse API applies them."""

    @policy_cmd.command("can-i")
    @click.argument("cluster")
    @click.argument("resource", required=False)
    @click.option("--user", default=None, help="user name (as the API's authenticating proxy gives it)")
    @click.option("--group", "groups", multiple=True, help="a group of the user (repeat for several)")
    @click.option("--service-account", default=None, help="a service account, <namespace>/<name>")
    @click.option("--json", "as_json", is_flag=True, help="machine-readable output")
    def can_i_cmd(
        cluster: str,
        resource: str | None,
        user: str | None,
        groups: tuple[str, ...],
        service_account: str | None,
        as_json: bool,
    ) -> None:
        """May this principal see CLUSTER (or RESOURCE in it: nodes, pods, operators, namespaces or a
        custom type)? Evaluates the compiled policies in Redis as the ClusterPulse API does."""
        try:
            name, is_sa = principal(user, groups, service_account)
        except CompileError as exc:
            fail(str(exc))
        hook = plugins.hook("clusterpulse_stored_policies")
        if hook is None or not hook.get_hookimpls():
            fail("no enabled plugin stores policies (enable redis)")
        try:
            found = [p for answer in hook(user=name, groups=list(groups), service_account=is_sa) for p in answer or ()]
        except Exception as exc:
            fail(f"cannot read policies: {type(exc).__name__}: {exc}")
        decision = can_i(found, cluster, resource, utcnow())
        if as_json:
            click.echo(json.dumps(unstructure(decision), indent=2))
        else:
            click.echo(format_decision(decision))

    return policy_cmd
