"""A target module that cannot be imported."""

raise RuntimeError("database not reachable at import time")
