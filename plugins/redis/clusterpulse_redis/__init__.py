"""ClusterPulse storage backend: current state in Redis, in the Go controller's layout
(docs/compatibility.md#redis-keys).

:class:`RedisStore` receives the pieces of every reconcile and writes the keys the
ClusterPulse API and UI read; :class:`RedisPlugin` provides it through the store hook.
"""

from clusterpulse_redis.errors import RedisStoreError
from clusterpulse_redis.settings import RedisSettings
from clusterpulse_redis.store import RedisStore

__all__ = ["RedisSettings", "RedisStore", "RedisStoreError"]
