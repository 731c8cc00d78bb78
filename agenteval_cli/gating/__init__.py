"""The CI gate: thresholds, per-example checks and baselines."""

# What they read of a metric (label, direction, format) the evaluators declare.
import agenteval_cli.evaluators  # noqa: F401 (declares the built-in metrics)
