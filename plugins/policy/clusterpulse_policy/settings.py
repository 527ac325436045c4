"""``[plugins.policy]`` settings, with the upstream environment variables and defaults."""

from __future__ import annotations

import attrs

from clusterpulse_core.config import setting


@attrs.frozen
class PolicySettings:
    """The validator period, and three upstream settings kept for compatibility (read, unused)."""

    validation_interval: int = setting(
        300,
        env="POLICY_VALIDATION_INTERVAL",
        minimum=60,
        help="seconds between two runs of the policy validator (leader only; first run one interval after start)",
    )
    policy_cache_ttl: int = setting(
        300, env="POLICY_CACHE_TTL", minimum=60, help="accepted for compatibility; the controller caches nothing"
    )
    group_cache_ttl: int = setting(
        300, env="GROUP_CACHE_TTL", minimum=60, help="accepted for compatibility; the controller caches nothing"
    )
    max_policies_per_user: int = setting(
        100, env="MAX_POLICIES_PER_USER", minimum=1, help="accepted for compatibility; not enforced"
    )
