"""Where the experiments are kept unless told otherwise: the store's default path, and the
project's store found from a folder as git finds its repository. Light to import: every
command's ``--store`` option reads it at start-up."""

from agenteval_cli.store import DEFAULT_STORE, find_store

__all__ = ["DEFAULT_STORE", "find_store"]
