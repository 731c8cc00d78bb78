"""The embedded SQLite store: schema, migrations, results and locks."""

from pathlib import Path

# Where every command and the Python API keep their experiments unless told otherwise.
DEFAULT_STORE = Path(".agenteval/agenteval.db")
