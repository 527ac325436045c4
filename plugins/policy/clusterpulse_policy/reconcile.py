"""The MonitorAccessPolicy reconcile and deletion (docs/policies.md).

A policy that compiles is stored (data, indexes, status, ``compiled`` event) and its CR status
merge-patched; one that does not gets ``state: Error`` naming the field, on the CR and in the
Redis ``status`` field, while the last good data stays in force. A policy with a validity window
comes back at its next bound so that the CR status changes on time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from clusterpulse_model.pieces import PolicyDeletion, PolicyErrorPiece, PolicyEventPiece, PolicyPiece
from clusterpulse_model.policy import (
    ACTIVE,
    ERROR,
    CompiledPolicy,
    PolicyErrorRecord,
    PolicyStatusRecord,
    next_transition,
    policy_state,
)

from clusterpulse_core.conditions import ready_condition
from clusterpulse_core.context import MAX_STATUS_MESSAGE, ReconcileContext, Runtime
from clusterpulse_core.kinds import ObjectRef, ReconcileResult, stored_refs
from clusterpulse_core.logs import clip
from clusterpulse_core.serde import unstructure
from clusterpulse_core.store import StoreError
from clusterpulse_policy.compiler import CompileError, compile_policy
from clusterpulse_policy.kind import MONITOR_ACCESS_POLICY
from clusterpulse_policy.spec import SpecError, parse_spec

#: Seconds before a policy that failed to compile is tried again.
ERROR_REQUEUE = 30.0
#: Seconds after a validity bound before the state is recomputed (``notAfter`` is exclusive).
BOUND_MARGIN = 1.0


def _generation(obj: Mapping[str, Any]) -> int:
    generation = (obj.get("metadata") or {}).get("generation")
    return generation if isinstance(generation, int) else 0


def _conditions(obj: Mapping[str, Any]) -> list[Any] | None:
    previous = (obj.get("status") or {}).get("conditions")
    return previous if isinstance(previous, list) else None


class PolicyReconciler:
    """Reconciles MonitorAccessPolicies (the :class:`~clusterpulse_core.kinds.Reconciler` the kind
    declares): compiles one policy per call."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self.clock = clock

    def reconcile(self, obj: Mapping[str, Any], ctx: ReconcileContext) -> ReconcileResult:
        """Compile, store, patch the status; come back at the next validity bound (if any)."""
        now = self.clock()
        ref = ctx.ref
        try:
            policy = compile_policy(ref.name, ref.namespace, parse_spec(obj), now)
        except (SpecError, CompileError) as exc:
            return self._fail(obj, ctx, f"Compilation failed: validation failed: {exc}", now)
        state, message = policy_state(policy.enabled, policy.not_before, policy.not_after, now)
        status = PolicyStatusRecord.of(policy, state, message)
        try:
            ctx.store(PolicyPiece(policy, status), PolicyEventPiece("compiled", ref.namespace, ref.name, now))
        except StoreError as exc:
            return self._fail(obj, ctx, f"Compilation failed: failed to store policy: {exc}", now)
        ready = ready_condition(state == ACTIVE, state, message, _generation(obj), now, _conditions(obj))
        ctx.patch_status({**unstructure(status), "conditions": [unstructure(ready)]})
        ctx.log.info("policy compiled: %s (%s, priority %d)", state, policy.effect, policy.priority)
        return ReconcileResult(requeue_after=self._next_bound(policy, now))

    def _next_bound(self, policy: CompiledPolicy, now: datetime) -> float | None:
        bound = next_transition(policy.not_before, policy.not_after, now)
        return None if bound is None else (bound - now).total_seconds() + BOUND_MARGIN

    def _fail(self, obj: Mapping[str, Any], ctx: ReconcileContext, message: str, now: datetime) -> ReconcileResult:
        """``state: Error`` on the CR and in Redis; the stored data (if any) stays in force."""
        # A repeating failure is logged when it starts or changes, not on every retry (the status holds it).
        before = obj.get("status") or {}
        repeated = before.get("state") == ERROR and before.get("message") == clip(message, MAX_STATUS_MESSAGE)
        (ctx.log.debug if repeated else ctx.log.error)("%s", message)
        store_error = ""
        try:
            ctx.store(PolicyErrorPiece(ctx.ref.namespace, ctx.ref.name, PolicyErrorRecord(message, now)))
        except StoreError as exc:
            store_error = str(exc)
        ready = ready_condition(False, "CompilationFailed", message, _generation(obj), now, _conditions(obj))
        ctx.patch_status({"state": ERROR, "message": message, "conditions": [unstructure(ready)]})
        return ReconcileResult(requeue_after=ERROR_REQUEUE, error=store_error)

    def stored_refs(self, runtime: Runtime) -> Sequence[ObjectRef] | None:
        """The policies storage holds (``policies``: ``<ns>/<name>``)."""
        return stored_refs(runtime, MONITOR_ACCESS_POLICY.kind, "policies", namespaced=True)

    def forget(self, ref: ObjectRef, ctx: ReconcileContext) -> bool:
        """Remove the policy's data and indexes, then publish ``deleted``."""
        now = self.clock()
        ctx.store(
            PolicyDeletion(ref.namespace, ref.name, now), PolicyEventPiece("deleted", ref.namespace, ref.name, now)
        )
        ctx.log.info("policy removed")
        return True
