"""The embedded SQLite store: schema, migrations, results and locks."""

import os
from pathlib import Path

# Where every command and the Python API keep their experiments unless told otherwise.
DEFAULT_STORE = Path(".agenteval/agenteval.db")
STORE_FOLDER = DEFAULT_STORE.parent


def find_store(start: Path) -> Path:
    """The store of the nearest folder, ``start`` or above, holding a ``.agenteval/``
    folder (as git finds its repository), so runs and reads from any folder of a project
    share one store; ``.agenteval/agenteval.db`` here when there is none yet."""
    for folder in (start, *start.parents):
        if (folder / STORE_FOLDER).is_dir():
            if folder == start:
                return DEFAULT_STORE
            return Path(os.path.relpath(folder / DEFAULT_STORE, start))
    return DEFAULT_STORE
