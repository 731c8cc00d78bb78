"""What a target's answers depend on beyond its import path: its source and its variables.

A cached answer is stale once the target's file is edited or an environment variable it
reads changes. The fingerprint holds a hash of every project file the target's module
imports, followed as far as can be known cheaply (the ``import`` statements of the files
under the module's top-level package, or under a ``file.py`` target's folder, and of the
project's other packages they import: see :class:`_ProjectPackages`), and a hash of
each variable the target declares with ``cache_env:`` (values are never stored, only their
hashes). It is part of the cache key, and kept with each entry so that ``agenteval cache
info`` can say which file or variable changed since the entry was written. An entry's also
holds the hashes of the variables its call read (:mod:`agenteval_cli.execution.env_reads`):
not part of the key, as they are known only once the call ran, but checked when the entry
is looked up (:meth:`Fingerprint.reads_changed`).
"""

from __future__ import annotations

import dis
import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType
from typing import Any

# Files followed per target at most: a bound on the cost of a start, not a limit users meet.
MAX_FILES = 500
UNSET = "unset"


@dataclass(frozen=True)
class Fingerprint:
    """Hashes of a target's project files (by absolute path), of its declared variables and,
    for one cached call, of the variables the call read."""

    files: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    reads: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        data = {"files": self.files, "env": self.env}
        if self.reads:  # a target's own fingerprint has none: its digest stays as it was
            data["reads"] = self.reads
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Fingerprint:
        data = json.loads(text)
        return cls(
            files=dict(data.get("files", {})),
            env=dict(data.get("env", {})),
            reads=dict(data.get("reads", {})),
        )

    def digest(self) -> str:
        """The part of the cache key: one hash of everything above."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    def changes(self, environ: dict[str, str] | None = None) -> list[str]:
        """What differs today from when this fingerprint was taken, in words:
        ``"targets.py changed"``, ``"$AGENTEVAL_DEMO_MODEL changed"``."""
        found = []
        for path, digest in self.files.items():
            now = _file_hash(Path(path))
            if now != digest:
                found.append(f"{_shown(path)} {'was removed' if now == UNSET else 'changed'}")
        variables = {**self.reads, **self.env}  # read by the call, and declared
        current = env_hashes(variables, os.environ if environ is None else environ)
        found += [f"${name} changed" for name, was in variables.items() if current[name] != was]
        return found

    def changed_reads(self, environ: Any = None) -> list[str]:
        """The variables the cached call read that have another value now (or are set, or
        unset, now): its answer may no longer be the target's."""
        if not self.reads:
            return []
        current = env_hashes(self.reads, os.environ if environ is None else environ)
        return [name for name, was in self.reads.items() if current[name] != was]


def take(import_path: str | None, base_dir: Path, env_names: Iterable[str] = ()) -> Fingerprint:
    """The fingerprint of the target at ``import_path`` (``pkg.mod:attr`` or ``file.py:attr``
    relative to ``base_dir``; None: a served graph, no file of ours) with the variables
    ``env_names``."""
    files = project_files(import_path, base_dir) if import_path is not None else []
    return Fingerprint(
        files={str(path): _file_hash(path) for path in files},
        env=env_hashes(env_names, os.environ),
    )


def env_hashes(names: Iterable[str], environ: Any) -> dict[str, str]:
    """A short hash of each variable's value (``unset`` when it is not set)."""
    hashes = {}
    for name in names:
        value = environ.get(name)
        hashes[name] = (
            UNSET if value is None else hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]
        )
    return hashes


def project_files(import_path: str, base_dir: Path) -> list[Path]:
    """The target's module file and the project files it imports, transitively."""
    source = import_path.rpartition(":")[0]
    if source.endswith(".py"):
        start = (base_dir / source).resolve()
        root, package = start.parent, None
    else:
        found = _module_file(source)
        if found is None:
            return []
        start = found
        package = source.split(".")[0]
        root = _package_root(start, source)
    # A package's __init__.py on the way to a module is hashed, not followed: what it imports
    # is the package's public names, which the module does not need unless it imports them.
    inits: set[Path] = set()
    followed: set[Path] = set()
    todo: list[tuple[Path, Path, str | None]] = [(start, root, package)]
    elsewhere = _ProjectPackages()
    while todo and len(followed) < MAX_FILES:
        path, root, package = todo.pop()
        if path in followed or not path.is_file():
            continue
        followed.add(path)
        inits.update(init for init in _parent_inits(path, root, package) if init.is_file())
        for name in _imported_names(path, root):
            files = [p for p in _module_paths(name, root, package) if p.is_file()]
            if files:
                todo.extend((p, root, package) for p in files)
                continue
            other = elsewhere.root_of(name.split(".")[0])  # another of the project's packages
            if other is not None:
                top = name.split(".")[0]
                todo.extend((p, other, top) for p in _module_paths(name, other, top))
    return sorted(inits | followed)


class _ProjectPackages:
    """The project's own top-level packages outside the target's root: those importable
    from a folder on ``sys.path`` that holds no installed library or standard module (the
    project's folder, ``PYTHONPATH``, an editable install's source folder). A file target
    wrapping the project's package (``evals/target.py`` importing ``myapp``) depends on it."""

    def __init__(self) -> None:
        self.folders = _path_folders()
        self.found: dict[str, Path | None] = {}

    def root_of(self, top: str) -> Path | None:
        if top not in self.found:
            self.found[top] = next(
                (
                    folder
                    for folder in self.folders
                    if (folder / f"{top}.py").is_file() or (folder / top / "__init__.py").is_file()
                ),
                None,
            )
        return self.found[top]


def _path_folders() -> list[Path]:
    installed = {Path(p).resolve() for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}}
    folders = []
    for entry in sys.path:
        folder = Path(entry or ".").resolve()
        if any(part in ("site-packages", "dist-packages") for part in folder.parts):
            continue
        if any(folder == prefix or prefix in folder.parents for prefix in installed):
            continue
        if folder.is_dir() and folder not in folders:
            folders.append(folder)
    return folders


def _module_file(module: str) -> Path | None:
    loaded = sys.modules.get(module)
    file = getattr(loaded, "__file__", None)
    if file is None:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return None
        file = None if spec is None else spec.origin
    if not file or not str(file).endswith(".py"):
        return None
    return Path(file).resolve()


def _package_root(file: Path, module: str) -> Path:
    """The folder that holds the module's top-level package (or the module itself)."""
    depth = module.count(".") + (1 if file.name == "__init__.py" else 0)
    root = file.parent
    for _ in range(depth):
        root = root.parent
    return root


def _parent_inits(file: Path, root: Path, package: str | None) -> Iterator[Path]:
    """The ``__init__.py`` files a package import runs on the way to ``file``."""
    if package is None:
        return
    folder = file.parent.parent if file.name == "__init__.py" else file.parent
    while folder != root and root in folder.parents:
        yield folder / "__init__.py"
        folder = folder.parent


# Each file's imports by its path, the root its relative imports start from and a hash of
# its text: a process that runs several specs (the API's callers, a test session) compiles
# each file once while its text stays the same.
_IMPORTS: dict[tuple[Path, Path, bytes], tuple[str, ...]] = {}
_IMPORTS_KEPT = 20_000


def _imported_names(file: Path, root: Path) -> tuple[str, ...]:
    """The modules ``file`` imports, by absolute name (``from pkg import submodule`` gives
    ``pkg`` and ``pkg.submodule``), read from its compiled code's ``IMPORT_NAME``
    instructions, nested functions and classes included.

    Compiled, not parsed with :mod:`ast`: CPython 3.11's ``ast.parse`` can fail at random
    with ``SystemError: AST constructor recursion depth mismatch`` in a process with
    threads (CPython gh-106905), and compiling builds no Python AST objects."""
    try:
        source = file.read_bytes()
    except OSError:
        return ()
    key = (file, root, hashlib.sha256(source).digest())
    found = _IMPORTS.get(key)
    if found is None:
        if len(_IMPORTS) >= _IMPORTS_KEPT:
            _IMPORTS.clear()
        found = _IMPORTS[key] = tuple(_names_in(source, file, root))
    return found


def _names_in(source: bytes, file: Path, root: Path) -> Iterator[str]:
    try:
        code = compile(source, str(file), "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return
    for module, level, names in _imports(code):
        base = _absolute(module, level, file, root) if level else module
        if not base:
            continue
        yield base
        for name in names:
            yield f"{base}.{name}"


def _imports(code: CodeType) -> Iterator[tuple[str, int, tuple[str, ...]]]:
    """``(module, level, from-names)`` of each import in ``code`` and the code it nests.

    The compiler loads an import's level and from-list just before ``IMPORT_NAME``."""
    instructions = list(dis.get_instructions(code))
    for i, instruction in enumerate(instructions):
        if instruction.opname != "IMPORT_NAME" or i < 2:
            continue
        level, names = instructions[i - 2].argval, instructions[i - 1].argval
        if not isinstance(level, int):
            continue
        from_names = tuple(n for n in names if n != "*") if isinstance(names, tuple) else ()
        yield str(instruction.argval), level, from_names
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            yield from _imports(constant)


def _absolute(module: str, level: int, file: Path, root: Path) -> str | None:
    """A relative import's module name, from the file's place under ``root``."""
    folder = file.parent
    for _ in range(level - 1):
        folder = folder.parent
    try:
        parts = list(folder.relative_to(root).parts)
    except ValueError:
        return None
    if module:
        parts.append(module)
    return ".".join(parts) or None


def _module_paths(name: str, root: Path, package: str | None) -> Iterator[Path]:
    """The files under ``root`` that importing ``name`` runs (none for other projects')."""
    parts = name.split(".")
    if package is not None and parts[0] != package:
        return
    folder = root.joinpath(*parts[:-1])
    yield folder / f"{parts[-1]}.py"
    yield folder / parts[-1] / "__init__.py"


def _file_hash(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return UNSET


def _shown(path: str) -> str:
    """``path`` relative to the working directory when it is under it."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path
