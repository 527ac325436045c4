# mypy: disable-error-code="empty-body"
"""The hooks the alerts plugin declares (through ``clusterpulse_addhooks``).

Its rule registry, and the read-back of the alerts a storage plugin holds. A storage plugin
implementing ``clusterpulse_stored_alerts`` marks it ``@hookimpl(optionalhook=True)`` so it loads
without this plugin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from clusterpulse_core.hookspecs import Register, called, hookspec, registry

if TYPE_CHECKING:
    from clusterpulse_model import Alert


@hookspec
@registry("alert_rules")
def clusterpulse_register_alert_rules(register: Register) -> None:
    r"""Register alert rules, evaluated by the alerts plugin against every stored state.

    ``register(name, evaluate, severity="warning", target="cluster", for_seconds=60.0,
    threshold=None, summary="")``: ``name`` is the alert name (``NodeNotReady``);
    ``evaluate(view, threshold)`` receives a :class:`clusterpulse_model.alerting.ClusterView`
    (or a ``RegistryView`` for ``target="registry"``) and the rule's threshold (its default
    or the one set in ``[plugins.alerts.rules.<name>]``), and returns the objects it fires on
    as :class:`clusterpulse_model.alerting.Finding`\ s, or ``None`` when the view lacks what
    it needs. It is called often (after every cluster reconcile) and must be cheap and pure.
    ``severity`` is ``critical``, ``warning`` or ``info``; ``for_seconds`` is how long the
    condition must hold before the alert fires. Called once at start-up.
    """


@hookspec
@called("all results, merged; at start and for clusterpulse alerts and AlertRule statuses")
def clusterpulse_stored_alerts() -> Sequence[Alert]:
    """Return the alerts a storage plugin holds as firing (read back, e.g. after a restart).

    The alerts plugin calls it at start so that alerts already firing before a restart
    continue firing without being announced again; ``clusterpulse alerts`` lists them.
    A plugin whose backend keeps no alerts does not implement it. May raise when the store
    cannot be read.
    """
