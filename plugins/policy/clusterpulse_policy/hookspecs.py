# mypy: disable-error-code="empty-body"
"""The hook the policy plugin declares (through ``clusterpulse_addhooks``).

The read-back of compiled access policies, answered by a storage plugin (``redis``), which
marks its implementation ``@hookimpl(optionalhook=True)`` so it loads without this plugin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from clusterpulse_core.hookspecs import called, hookspec

if TYPE_CHECKING:
    from clusterpulse_model.policy import StoredPolicy


@hookspec
@called("all results, merged; by clusterpulse policy can-i")
def clusterpulse_stored_policies(user: str, groups: Sequence[str], service_account: bool) -> Sequence[StoredPolicy]:
    """Return the compiled access policies that apply to a principal, as the ClusterPulse API finds them.

    ``user`` is the user name (a service account's is ``system:serviceaccount:<ns>:<name>``),
    ``groups`` its groups; ``service_account`` also looks the user up as a service account.
    Highest priority first, each policy once (its highest score); ``data`` is ``None`` for a
    policy whose data is missing or unreadable (the API skips it). A plugin whose backend keeps
    no policies does not implement it; ``clusterpulse policy can-i`` reads through it. May raise
    when the store cannot be read.
    """
