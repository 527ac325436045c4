"""Test harness for ClusterPulse and its plugins (``pip install clusterpulse-testing``).

Registered as a pytest plugin: the fixtures ``redis_server`` and ``kube_api`` start real
servers on free loopback ports. A missing server binary fails the fixture with the command
that installs it; it never skips.
"""
