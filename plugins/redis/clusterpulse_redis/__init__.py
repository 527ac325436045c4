"""ClusterPulse storage backend: current state in Redis, in the layout of spec/redis.md.

:class:`RedisStore` receives the pieces of every reconcile and writes the keys the
ClusterPulse API and UI read; :class:`RedisPlugin` provides it through the store hook.
"""

from clusterpulse_redis.errors import RedisStoreError
from clusterpulse_redis.settings import RedisSettings
from clusterpulse_redis.store import RedisStore

__all__ = ["RedisSettings", "RedisStore", "RedisStoreError"]
