"""Built-in field types, aggregation functions and filter operators, grouped by theme.

Each module exposes one ``register_builtin_*`` function taking the registry hook's
``register`` callback, so the plugin contributes them exactly as a third-party plugin would.
"""
