"""The built-in expression functions, grouped by theme.

Each module has ``register_functions(register)``, the same shape as the
``clusterpulse_register_functions`` hook: ``register(name, fn, min_args=N, max_args=M)``
(``max_args=None`` for variadic). ``fn`` takes the evaluated arguments and never raises.
The built-ins that can never return a NaN or an infinity also pass ``finite_results=True``,
which spares the compiled evaluator the M3 check of their results.
"""

from __future__ import annotations

from collections.abc import Callable

from clusterpulse_metricsource.functions import convert, logic, numeric, strings, temporal

_MODULES = (strings, numeric, convert, logic, temporal)


def register_builtin_functions(register: Callable[..., None]) -> None:
    """Register every built-in function through ``register``."""
    for module in _MODULES:
        module.register_functions(register)
