"""Whether a report can be written where it was asked for, checked before a run starts:
a path that cannot be written must not cost a run's calls first."""

from __future__ import annotations

import os
from pathlib import Path

from agenteval_cli.core.errors import UserError


def check_writable(path: Path, option: str) -> None:
    """A UserError naming ``option`` when ``path`` is a folder, or neither it nor the
    folders it would be created in can be written (the writers make missing folders)."""
    hint = f"give {option} a file in a folder you can write to"
    if path.is_dir():
        raise UserError(f"{option} {path} is a folder, not a file", hint=hint)
    if path.exists():
        if not os.access(path, os.W_OK):
            raise UserError(f"{option} {path} cannot be written (permission denied)", hint=hint)
        return
    folder = path.absolute().parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise UserError(f"{option} {path}: {folder} is a file, not a folder", hint=hint)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(
            f"{option} {path}: {folder} cannot be written (permission denied)", hint=hint
        )
