"""The benchmark suite: agenteval against the physical limit and langsmith.

``python -m bench`` runs every case and prints one table; ``python -m bench w1 w4`` runs
only those. Every case measures agenteval and its two references in the same run, so the
ratios hold on a noisy machine even when the absolute figures drift.
"""
