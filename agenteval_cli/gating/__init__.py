"""The CI gate: thresholds, per-example checks and baselines."""
