"""Renderings of stored experiments: the Rich comparison table and the JSON export."""

# What they read of a metric (label, direction, format) the evaluators declare.
import agenteval_cli.evaluators  # noqa: F401 (declares the built-in metrics)
