"""Access policies in Redis: ``policy:<ns>:<name>``, its indexes, events and the APIs' caches.

Layout (the upstream contract the ClusterPulse APIs read; ``docs/policies.md``)::

    policy:<ns>:<name>                 hash: data, priority, effect, enabled, hash, compiled_at, status
    policy:{user,group,sa,customtype}:<x>          set of policy keys (enabled policies only)
    policy:{user,group,sa,customtype}:<x>:sorted   zset policy key -> priority
    policies:all, policies:enabled, policies:effect:<allow|deny>   sets of policy keys
    policies:by:priority               zset policy key -> priority

No policy key has a TTL. Storing reads the previous ``data`` first, so the indexes the old
version had and the new one has not are cleaned up in the same pipeline; the API caches of
every subject of both versions are then dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

from clusterpulse_model.pieces import (
    PolicyDeletion,
    PolicyErrorPiece,
    PolicyEvalCacheReset,
    PolicyEventPiece,
    PolicyPiece,
    PolicyValidation,
)
from clusterpulse_model.policy import (
    EXPIRED,
    CompiledPolicy,
    PolicyValidatedRecord,
    StoredPolicy,
    policy_state,
)

from clusterpulse_core.serde import dumps, loads, unstructure
from clusterpulse_redis.resp import CommandBatch
from clusterpulse_redis.stored import PolicyChange, PolicyEvent, PolicyHashFields

log = logging.getLogger(__name__)

POLICIES_ALL = "policies:all"
POLICIES_ENABLED = "policies:enabled"
POLICIES_BY_PRIORITY = "policies:by:priority"
POLICY_CHANGES_CHANNEL = "policy-changes"
POLICY_EVENTS_CHANNEL = "policy-events"
#: Keys examined per SCAN step (the caches are looked for in the whole keyspace).
SCAN_COUNT = 1000
#: Keys per multi-key DEL of stale caches.
DELETE_BATCH = 1000
#: Index kinds and the compiled field each is built from.
INDEX_KINDS = (
    ("user", "users"),
    ("group", "groups"),
    ("sa", "service_accounts"),
    ("customtype", "custom_resource_types"),
)


def policy_key(namespace: str, name: str) -> str:
    """``policy:<ns>:<name>``."""
    return f"policy:{namespace}:{name}"


def index_key(kind: str, subject: str, sorted_index: bool = False) -> str:
    """``policy:<kind>:<subject>`` or its ``:sorted`` zset."""
    return f"policy:{kind}:{subject}" + (":sorted" if sorted_index else "")


def effect_key(effect: str) -> str:
    """``policies:effect:<lower-case effect>``."""
    return f"policies:effect:{effect.lower()}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _strings(value: Any) -> set[str]:
    return {item for item in value if isinstance(item, str)} if isinstance(value, list) else set()


def _indexed(data: dict[str, Any] | None, enabled_only: bool) -> set[tuple[str, str]]:
    """``(kind, subject)`` pairs a stored ``data`` is indexed under (none if disabled and ``enabled_only``)."""
    if data is None or (enabled_only and data.get("enabled") is False):
        return set()
    return {(kind, subject) for kind, field in INDEX_KINDS for subject in _strings(data.get(field))}


def _stored_data(client: Any, key: str) -> dict[str, Any] | None:
    """The stored ``data`` JSON of a policy; ``None`` when absent or undecodable."""
    raw = client.hget(key, "data")
    if raw is None:
        return None
    try:
        data = loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def store_policy(client: Any, piece: PolicyPiece) -> None:
    """Hash, stale-index clean-up, indexes, global sets, status; then the subjects' caches."""
    policy = piece.policy
    key = policy.key
    old = _stored_data(client, key)
    data = unstructure(policy)
    new_indexed = _indexed(data, enabled_only=True)
    pipe = client.pipeline(transaction=False)
    fields = PolicyHashFields(
        dumps(policy),
        str(policy.priority),
        policy.effect,
        "true" if policy.enabled else "false",
        policy.hash,
        policy.compiled_at,
    )
    pipe.hset(key, mapping=unstructure(fields))
    for kind, subject in sorted(_indexed(old, enabled_only=True) - new_indexed):
        pipe.srem(index_key(kind, subject), key)
        pipe.zrem(index_key(kind, subject, sorted_index=True), key)
    for kind, subject in sorted(new_indexed):
        pipe.sadd(index_key(kind, subject), key)
        pipe.zadd(index_key(kind, subject, sorted_index=True), {key: policy.priority})
    pipe.sadd(POLICIES_ALL, key)
    pipe.zadd(POLICIES_BY_PRIORITY, {key: policy.priority})
    if policy.enabled:
        pipe.sadd(POLICIES_ENABLED, key)
    else:
        pipe.srem(POLICIES_ENABLED, key)
    pipe.sadd(effect_key(policy.effect), key)
    old_effect = old.get("effect") if old else None
    if isinstance(old_effect, str) and old_effect and old_effect.lower() != policy.effect.lower():
        pipe.srem(effect_key(old_effect), key)
    pipe.hset(key, "status", dumps(piece.status))
    pipe.execute()
    invalidate(client, _subjects(old, policy))


def _subjects(old: dict[str, Any] | None, new: CompiledPolicy | None) -> tuple[set[str], set[str], set[str]]:
    """Users, groups and service accounts of both versions."""
    users, groups, accounts = set(), set(), set()
    if old is not None:
        users |= _strings(old.get("users"))
        groups |= _strings(old.get("groups"))
        accounts |= _strings(old.get("service_accounts"))
    if new is not None:
        users |= set(new.users)
        groups |= set(new.groups)
        accounts |= set(new.service_accounts)
    return users, groups, accounts


def _scan(client: Any, pattern: str) -> Iterator[bytes]:
    yield from client.scan_iter(match=pattern, count=SCAN_COUNT)


def group_cache_hit(suffix: str, groups: set[str]) -> bool:
    """Whether a cache key suffix names one of ``groups`` (any ``:`` segment, split on ``,``)."""
    return any(item in groups for segment in suffix.split(":") for item in segment.split(","))


def _names_principal(rest: str, principals: set[str]) -> bool:
    """Whether ``rest`` starts with ``<principal>:`` for one of ``principals`` (names may hold ``:``)."""
    index = rest.find(":")
    while index != -1:
        if rest[:index] in principals:
            return True
        index = rest.find(":", index + 1)
    return False


def stale_cache_keys(client: Any, subjects: tuple[set[str], set[str], set[str]]) -> list[bytes | str]:
    """Every API cache key of the given users, groups and service accounts.

    The keys the Go controller deletes: ``policy:eval:<u>:*``, ``user:permissions:<u>``,
    ``rbac:decision:<u>:*`` and ``rbac:custom:<u>:*`` per user (the same but ``user:permissions``
    per service account), the ``rbac:*`` keys whose suffix names a group in any ``:`` segment
    (split on ``,``) and ``policy:eval:*:group:<g>:*``. Found with two ``SCAN`` passes whatever the
    number of subjects (the Go controller scans once per subject), matched here.
    """
    users, groups, accounts = subjects
    principals = users | accounts
    if not principals and not groups:
        return []
    found: list[bytes | str] = [f"user:permissions:{user}" for user in sorted(users)]
    group_marks = [f":group:{group}:" for group in sorted(groups)]
    for key in _scan(client, "policy:eval:*"):
        rest = _text(key)[len("policy:eval:") :]
        if _names_principal(rest, principals) or any(mark in rest for mark in group_marks):
            found.append(key)
    for key in _scan(client, "rbac:*"):
        text = _text(key)
        for prefix in ("rbac:decision:", "rbac:custom:"):
            if text.startswith(prefix):
                rest = text[len(prefix) :]
                if _names_principal(rest, principals) or (groups and group_cache_hit(rest, groups)):
                    found.append(key)
                break
    return found


def invalidate(client: Any, subjects: tuple[set[str], set[str], set[str]]) -> None:
    """Delete the API caches of the subjects (multi-key ``DEL``s of at most :data:`DELETE_BATCH` keys)."""
    stale = stale_cache_keys(client, subjects)
    for start in range(0, len(stale), DELETE_BATCH):
        client.delete(*stale[start : start + DELETE_BATCH])


def delete_policy(client: Any, piece: PolicyDeletion) -> None:
    """Every index naming the policy, the global sets and the hash; caches; ``deleted`` event.

    Without stored ``data`` nothing is removed (a status-only hash stays, as upstream).
    """
    key = policy_key(piece.namespace, piece.name)
    old = _stored_data(client, key)
    if old is None:
        log.warning("policy %s/%s: no stored data, nothing to remove", piece.namespace, piece.name)
        return
    pipe = client.pipeline(transaction=False)
    for kind, subject in sorted(_indexed(old, enabled_only=False)):
        pipe.srem(index_key(kind, subject), key)
        pipe.zrem(index_key(kind, subject, sorted_index=True), key)
    pipe.srem(POLICIES_ALL, key)
    pipe.zrem(POLICIES_BY_PRIORITY, key)
    pipe.srem(POLICIES_ENABLED, key)
    effect = old.get("effect")
    if isinstance(effect, str) and effect:
        pipe.srem(effect_key(effect), key)
    pipe.delete(key)
    pipe.execute()
    invalidate(client, _subjects(old, None))
    _publish(client, PolicyEventPiece("deleted", piece.namespace, piece.name, piece.timestamp))


def _publish(client: Any, piece: PolicyEventPiece) -> None:
    """Publish one event on both channels (outside a pipeline: a Redis Cluster pipeline refuses PUBLISH)."""
    _queue_event(client, piece)


def _queue_event(target: Any, piece: PolicyEventPiece) -> None:
    policy = f"{piece.namespace}/{piece.name}"
    target.publish(POLICY_CHANGES_CHANNEL, dumps(PolicyChange(piece.action, policy, piece.timestamp)))
    target.publish(POLICY_EVENTS_CHANNEL, dumps(PolicyEvent(f"policy.{piece.action}", policy, piece.timestamp)))


def write_policy_event(batch: CommandBatch, piece: PolicyEventPiece, _ctx: Any) -> None:
    """Publish on ``policy-changes`` and ``policy-events`` (no list keeps them)."""
    _queue_event(batch, piece)


def write_policy_error(batch: CommandBatch, piece: PolicyErrorPiece, _ctx: Any) -> None:
    """``status`` = the error; ``data`` and the indexes stay as they are."""
    batch.hset(policy_key(piece.namespace, piece.name), {"status": dumps(piece.status)})


def parse_policy_key(key: str) -> tuple[str, str] | None:
    """``(namespace, name)`` of ``policy:<ns>:<rest>`` (split at the first ``:``), else ``None``."""
    if not key.startswith("policy:"):
        return None
    namespace, sep, name = key[len("policy:") :].partition(":")
    if not sep or not namespace or not name:
        return None
    return namespace, name


def validate_policies(client: Any, piece: PolicyValidation) -> None:
    """Restate every policy of ``policies:all`` at ``piece.now``; publish ``expired`` for the expired."""
    for member in sorted(_text(m) for m in client.smembers(POLICIES_ALL)):
        parsed = parse_policy_key(member)
        if parsed is None:
            continue
        data = _stored_data(client, member)
        if data is None:
            continue
        enabled = data.get("enabled") is not False
        not_before, not_after = data.get("not_before"), data.get("not_after")
        state, message = policy_state(
            enabled,
            not_before if isinstance(not_before, str) else None,
            not_after if isinstance(not_after, str) else None,
            piece.now,
        )
        client.hset(member, "status", dumps(PolicyValidatedRecord(state, message, piece.now)))
        if state == EXPIRED:
            log.info("policy %s/%s has expired", *parsed)
            _publish(client, PolicyEventPiece("expired", parsed[0], parsed[1], piece.now))


def reset_eval_cache(client: Any, _piece: PolicyEvalCacheReset) -> None:
    """Delete every ``policy:eval:*`` key."""
    stale = list(_scan(client, "policy:eval:*"))
    for start in range(0, len(stale), DELETE_BATCH):
        client.delete(*stale[start : start + DELETE_BATCH])


def stored_policies(client: Any, user: str, groups: Iterable[str], service_account: bool) -> list[StoredPolicy]:
    """The policies the Go API considers for a principal, highest priority first.

    Reads ``policy:user:<u>:sorted``, each ``policy:group:<g>:sorted`` and, for a service account,
    ``policy:sa:<u>:sorted``; keeps the highest score per key (ties by key, for a stable answer);
    ``data`` is ``None`` when missing or undecodable (the API skips those).
    """
    sources = [index_key("user", user, True)] if user else []
    sources += [index_key("group", group, True) for group in groups]
    if service_account and user:
        sources.append(index_key("sa", user, True))
    best: dict[str, float] = {}
    for source in sources:
        for member, score in client.zrevrange(source, 0, -1, withscores=True):
            name = _text(member)
            best[name] = max(float(score), best.get(name, float(score)))
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    return [StoredPolicy(name, score, _stored_data(client, name)) for name, score in ranked]
