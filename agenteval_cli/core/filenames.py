"""Names that become file names: an experiment's, a dataset's, a worker's.

Names come from specs, stores, ``--json`` files, merged shards and LangSmith, so any of them
may hold ``../``, a leading ``/``, a NUL byte or 300 characters. :func:`file_name` reduces one
to a name that stays in the folder it is joined to, on every filesystem agenteval runs on:

- no separator (``/``, ``\\``), nothing unprintable (NUL and the other controls, line
  separators, direction overrides, lone surrogates), none of the characters Windows refuses
  (``<>:"|?*``): each becomes ``_``;
- no leading ``.``, ``-`` or space (a hidden file, an option, ``..``), no trailing ``.`` or
  space (which Windows drops), never empty;
- not a Windows device name (``CON``, ``NUL``, ``COM1``, ``LPT9``..., with any extension);
- at most :data:`MAX_BYTES` bytes of UTF-8 with its suffix, well under the 255 of common
  filesystems, leaving room for a ``.tmp`` beside it.

A name that had to change ends with ``-`` and 8 hex digits of its SHA-256, so two names that
reduce alike (two long ones sharing their start, ``a/b`` and ``a_b``) stay two files; a name
already safe is kept as it is.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

__all__ = ["MAX_BYTES", "file_name", "path_in"]

MAX_BYTES = 160
_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\<>:"|?*]|[\ud800-\udfff]')
_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"{port}{n}" for port in ("COM", "LPT") for n in [*"0123456789", "¹", "²", "³"]}
)
_HASH_DIGITS = 8


def file_name(name: str, suffix: str = "") -> str:
    """``name`` as a safe file name, ``suffix`` (such as ``.html``) added."""
    safe = _UNSAFE.sub("_", name)
    safe = "".join(c if c.isprintable() else "_" for c in safe)
    safe = safe.lstrip(". -").rstrip(". ")
    if safe.split(".", 1)[0].rstrip(" ").upper() in _DEVICES:
        safe = f"_{safe}"
    room = MAX_BYTES - len(suffix.encode("utf-8"))
    if safe and safe == name and len(safe.encode("utf-8")) <= room:
        return safe + suffix
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_DIGITS]
    tail = f"-{digest}"
    stem = _cut(safe, room - len(tail)).rstrip(". ") or "unnamed"
    return stem + tail + suffix


def path_in(folder: Path, name: str, suffix: str = "") -> Path:
    """``folder / file_name(name, suffix)``: a file directly inside ``folder``."""
    return folder / file_name(name, suffix)


def _cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` bytes of UTF-8, never inside a character."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[: max(limit, 0)].decode("utf-8", "ignore")
