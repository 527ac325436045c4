"""A plugin with a misspelled hook name (fails ``check_pending`` at start-up)."""

from clusterpulse_core import hookimpl

clusterpulse_api_version = 1


@hookimpl
def clusterpulse_confgure(config: object, settings: object) -> None:
    """Misspelled ``clusterpulse_configure``."""
