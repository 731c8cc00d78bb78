"""Import paths: ``package.module:attr`` or ``path/to/file.py:attr`` become the object they
name, with one clear line (file, line, fix) when they cannot."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

from agenteval_cli.core.errors import UserError, did_you_mean

_IDENTIFIERS = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
IMPORT_PATH_FORMS = "'package.module:attr' or 'path/to/file.py:attr'"


class ImportPathError(ValueError):
    """A malformed import path, with the fix."""

    def __init__(self, message: str, *, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def split_import_path(text: str) -> tuple[str, str]:
    """``"pkg.mod:graph"`` -> ``("pkg.mod", "graph")``; the left part may be a .py file path."""
    source, colon, attr = text.rpartition(":")
    if not colon:
        raise ImportPathError(
            f"malformed import path {text!r}: no ':attr'", hint=f"write {IMPORT_PATH_FORMS}"
        )
    source_ok = (source.endswith(".py") and len(source) > 3) or _IDENTIFIERS.fullmatch(source)
    if not source_ok or not _IDENTIFIERS.fullmatch(attr):
        raise ImportPathError(f"malformed import path {text!r}", hint=f"write {IMPORT_PATH_FORMS}")
    return source, attr


def import_object(
    import_path: str, *, base_dir: Path, file: str | None = None, line: int | None = None
) -> Any:
    """Resolve ``package.module:attr`` or ``path/to/file.py:attr`` (relative to base_dir)."""
    try:
        module_part, attr_path = split_import_path(import_path)
    except ImportPathError:
        raise UserError(
            f"import path {import_path!r} is not 'package.module:attr' or 'file.py:attr'",
            file=file,
            line=line,
        ) from None
    try:
        if module_part.endswith(".py"):
            module = _import_file(base_dir / module_part, file=file, line=line)
        else:
            module = importlib.import_module(module_part)
    except UserError:
        raise
    except ModuleNotFoundError as exc:
        missing = exc.name or module_part
        hint = "check the spelling, or install the package into this environment"
        if missing == module_part or module_part.startswith(missing + "."):
            hint = did_you_mean(module_part, _sibling_modules(module_part)) or hint
        raise UserError(
            f"cannot import {module_part!r}: no module named {missing!r}",
            file=file,
            line=line,
            hint=hint,
        ) from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the user's module raised (or called sys.exit) while importing
        raise UserError(
            f"importing {module_part!r} raised {type(exc).__name__}: {exc}",
            file=file,
            line=line,
            hint="fix the module so it imports cleanly",
        ) from None
    obj: Any = module
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            raise UserError(
                f"{module_part!r} has no attribute {attr_path!r}",
                file=file,
                line=line,
                hint=did_you_mean(part, names) or f"it defines: {', '.join(names[:8])}",
            )
        obj = getattr(obj, part)
    return obj


def _import_file(path: Path, *, file: str | None, line: int | None) -> Any:
    path = path.resolve()
    if not path.is_file():
        raise UserError(f"target file {str(path)!r} does not exist", file=file, line=line)
    module_name = f"_agenteval_target_{abs(hash(str(path)))}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"cannot load {str(path)!r} as a Python module", file=file, line=line)
    module = importlib.util.module_from_spec(spec)
    # The file imports its neighbours, when loaded and when called (a lazy import inside
    # the target function), so its folder stays on the path for the rest of the run.
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    try:
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _sibling_modules(dotted: str) -> list[str]:
    parent, _, _ = dotted.rpartition(".")
    import pkgutil

    if not parent:
        return [m.name for m in pkgutil.iter_modules()]
    try:
        package = importlib.import_module(parent)
    except Exception:
        return []
    paths = getattr(package, "__path__", None) or []
    return [f"{parent}.{m.name}" for m in pkgutil.iter_modules(paths)]
