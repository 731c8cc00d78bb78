"""The YAML experiment spec: its schema, sections and one-line errors."""
