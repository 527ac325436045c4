"""The error a failed Redis write or deletion surfaces as."""


class RedisStoreError(Exception):
    """Redis refused or could not take a write; the message names the server and the cause."""
