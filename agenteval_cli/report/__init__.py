"""Renderings of stored experiments: the Rich comparison table and the JSON export."""
