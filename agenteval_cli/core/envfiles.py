"""``.env`` files: the variables a spec's project keeps beside it (provider keys, URLs).

Which are read, for a spec: every ``.env`` from the project root down to the spec's folder,
a nearer file's value winning over a farther one's. The project root is the nearest folder
at or above the spec's that holds ``pyproject.toml`` or ``.git``; without one, only the
spec's folder is read. ``--env-file PATH`` (``env_file``) reads that one file instead;
``AGENTEVAL_NO_DOTENV=1`` stops the looking (a file named with ``--env-file`` is still read).
The process environment always wins: a variable already set is never replaced.

A value is a secret as any environment variable's is (:mod:`agenteval_cli.core.redact`): a
secret-looking name's value is redacted from every message and report, and a spec records
``${NAME}`` as written, never the value. Files are parsed by python-dotenv (``export``,
quotes, ``${VAR}`` inside values); a line it cannot parse, or whose variable holds a NUL byte
(which no environment can), is a UserError at that line.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.redact import is_secret_name, remember

__all__ = [
    "DOTENV",
    "NO_DOTENV",
    "apply_env",
    "env_files",
    "loaded_env",
    "project_root",
    "read_env_file",
]

DOTENV = ".env"
NO_DOTENV = "AGENTEVAL_NO_DOTENV"
ROOT_MARKERS = ("pyproject.toml", ".git")
NUL = "\x00"
# What the environment cannot hold (os.environ raises on them): NUL anywhere, "=" in a name.
_UNSETTABLE_HINTS = {
    NUL: "remove the NUL byte (\\0) from that line; save the file as text",
    "=": "a name cannot hold '='; write NAME=value with the name unquoted",
}


def project_root(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding pyproject.toml or .git."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in ROOT_MARKERS):
            return candidate
    return None


def env_files(spec_folder: Path) -> list[Path]:
    """The ``.env`` files a spec in ``spec_folder`` reads, the project root's first."""
    folder = spec_folder.resolve()
    root = project_root(folder) or folder
    chain = [folder, *folder.parents]
    folders = chain[: chain.index(root) + 1]
    return [f / DOTENV for f in reversed(folders) if (f / DOTENV).is_file()]


def dotenv_disabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``AGENTEVAL_NO_DOTENV`` turns the looking off (set, and not 0 or false)."""
    value = (os.environ if environ is None else environ).get(NO_DOTENV, "")
    return value.strip().lower() not in ("", "0", "false", "no")


def read_env_file(path: Path) -> dict[str, str]:
    """The variables of one ``.env`` file; a line python-dotenv cannot parse is a UserError
    naming the file and the line. A name without ``=`` sets nothing."""
    from dotenv import dotenv_values
    from dotenv.parser import parse_stream

    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise UserError(f"env file not found: {path}", hint="check the --env-file path") from None
    except IsADirectoryError:
        raise UserError(f"env file is a directory: {path}", hint="name a file") from None
    except OSError as exc:
        raise UserError(f"cannot read env file: {exc.strerror}", file=path) from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes().count(b"\n", 0, exc.start) + 1
        raise UserError("not valid UTF-8", file=path, line=line, hint="save it as UTF-8") from None
    for binding in parse_stream(io.StringIO(text)):
        original = binding.original
        if binding.error:
            line = original.line + len(original.string) - len(original.string.lstrip("\n"))
            raise UserError(
                "not a NAME=value line of an env file",
                file=path,
                line=line,
                hint="write NAME=value (quote a value with spaces); '#' starts a comment",
            )
        refused = _unsettable(binding.key, binding.value)
        if refused is not None:
            reason, character = refused
            at = original.string.find(character)
            line = original.line + (original.string.count("\n", 0, at) if at >= 0 else 0)
            raise UserError(reason, file=path, line=line, hint=_UNSETTABLE_HINTS[character])
    values = dotenv_values(stream=io.StringIO(text), interpolate=True)
    return {name: value for name, value in values.items() if value is not None}


def _unsettable(name: str | None, value: str | None) -> tuple[str, str] | None:
    """Why the environment cannot hold this variable, and the character at fault; None
    when it can. Said at the file's line, rather than as os.environ's ValueError later."""
    if name is None:
        return None
    if NUL in name or NUL in (value or ""):
        return "a NUL byte in a variable's name or value, which no environment can hold", NUL
    if "=" in name:
        return f"the name {name!r} holds '=', which no environment variable's name can", "="
    return None


def spec_env(spec_folder: Path | None, env_file: str | Path | None = None) -> dict[str, str]:
    """Every variable the files of a spec in ``spec_folder`` set (or ``env_file``'s alone),
    nearer files winning; ``{}`` when the looking is off and no file is named."""
    if env_file is not None:
        files = [Path(env_file)]
    elif spec_folder is None or dotenv_disabled():
        files = []
    else:
        files = env_files(spec_folder)
    found: dict[str, str] = {}
    for path in files:
        found.update(read_env_file(path))
    return found


def apply_env(spec_folder: Path | None, env_file: str | Path | None = None) -> dict[str, str]:
    """Set the variables of the spec's ``.env`` files that the process does not have; the
    ones set, returned. A secret-named one's value is redacted from now on."""
    added: dict[str, str] = {}
    for name, value in spec_env(spec_folder, env_file).items():
        if name in os.environ:
            continue
        os.environ[name] = value
        added[name] = value
        if is_secret_name(name):
            remember(value)
    return added


@contextmanager
def loaded_env(
    spec_folder: Path | None, env_file: str | Path | None = None
) -> Iterator[dict[str, str]]:
    """:func:`apply_env` for the duration (a run of the library in a longer process): the
    variables it set are unset after, unless something changed them meanwhile. Their
    values stay redacted."""
    added = apply_env(spec_folder, env_file)
    try:
        yield added
    finally:
        for name, value in added.items():
            if os.environ.get(name) == value:
                del os.environ[name]
