"""A plugin written for a future core API version."""


class FuturePlugin:
    """Needs core API 99."""

    clusterpulse_api_version = 99
