"""A plugin whose import fails."""

import clusterpulse_example_dependency_that_does_not_exist  # noqa: F401
