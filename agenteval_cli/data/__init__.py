"""Datasets: example files read, validated and given stable ids."""
