"""Aggregation: per-experiment summaries, paired statistics and metric metadata."""
