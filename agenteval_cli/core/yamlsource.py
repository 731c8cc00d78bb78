"""YAML that remembers where each value came from, and ``${VAR}`` expansion.

``yaml.safe_load`` returns plain data and forgets positions, yet a useful error
names ``file:line``. :func:`load_yaml` returns the same data plus the 1-based line
of every key and list item, by key path (``("targets", "swarm")``,
``("evaluators", 2)``), so any later stage can point at the value it rejects.

Two departures from ``safe_load``, both to keep data JSON-shaped and unambiguous:
dates stay strings (``2024-05-01`` must survive a JSON round trip), and a key
given twice in one mapping is an error instead of silently keeping the last one.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.redact import is_secret_name, redact, remember

KeyPath = tuple[Any, ...]

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_MERGE_TAG = "tag:yaml.org,2002:merge"


# Bounds that keep a small hostile file small. Data nested deeper than MAX_DEPTH levels
# would exhaust Python's stack in the parser; aliases that repeat more than
# MAX_ALIAS_NODES nodes in all are a "billion laughs", which grows a 1 KB file into GBs.
MAX_DEPTH = 100
MAX_ALIAS_NODES = 100_000


class _TooDeep(Exception):
    def __init__(self, mark: yaml.Mark | None) -> None:
        self.mark = mark


class NestedTooDeep(UserError):
    """Data nested deeper than ``load_yaml``'s ``max_depth``; ``line`` is where."""


class _Loader(yaml.SafeLoader):
    """The pure-Python safe loader, so error messages read the same on every install; it
    refuses data nested deeper than ``max_depth`` before the parser's recursion does."""

    def __init__(self, stream: str, max_depth: int = MAX_DEPTH) -> None:
        super().__init__(stream)
        self.max_depth = max_depth
        self.depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.depth += 1  # counts mappings and lists: a scalar or an alias opens no level
        try:
            if self.depth > self.max_depth and not self.check_event(
                yaml.ScalarEvent, yaml.AliasEvent
            ):
                raise _TooDeep(self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass
class YamlDocument:
    """Parsed YAML data with the line of every key and list item."""

    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line_of(self, *keys: Any) -> int | None:
        """Line of the node at ``keys``, else of its nearest ancestor; None if there is none."""
        path = tuple(keys)
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path)

    def error(
        self, path: KeyPath, message: str, *, file: str | Path, hint: str | None = None
    ) -> UserError:
        """``key.path: message`` at the line of the value at ``path``."""
        where = format_key_path(path)
        text = f"{where}: {message}" if where else message
        return UserError(text, file=file, line=self.line_of(*path), hint=hint)

    def locate(self, loc: KeyPath) -> KeyPath:
        """The longest prefix of ``loc`` the data has, as a key path into it.

        A position in a mapping becomes its key, so pydantic's ``("targets", 1)`` (the
        mapping validated as a list) becomes ``("targets", "swarm")``.
        """
        path: list[Any] = []
        node = self.data
        for part in loc:
            if isinstance(node, dict) and part in node:
                key = part
            elif isinstance(node, dict | list) and isinstance(part, int) and 0 <= part < len(node):
                key = list(node)[part] if isinstance(node, dict) else part
            else:
                break
            path.append(key)
            node = node[key]
        return tuple(path)


def load_yaml(text: str, *, file: str | Path, max_depth: int = MAX_DEPTH) -> YamlDocument:
    """Parse one YAML document; a syntax error becomes a UserError at its line and column,
    and so do data nested deeper than ``max_depth`` levels and aliases that would repeat
    more than ``MAX_ALIAS_NODES`` nodes (both refused before the data is built)."""
    loader = _Loader(text, max_depth)
    try:
        node = loader.get_single_node()
        if node is None:
            return YamlDocument(None)
        lines: dict[KeyPath, int] = {(): node.start_mark.line + 1}
        _record_lines(node, (), lines, loader, file, set(), _Visits())
        return YamlDocument(loader.construct_document(node), lines)
    except _TooDeep as exc:
        raise NestedTooDeep(
            f"data nested deeper than {max_depth} levels",
            file=file,
            line=None if exc.mark is None else exc.mark.line + 1,
            hint="flatten the data",
        ) from None
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc, file) from None
    except yaml.YAMLError as exc:
        raise UserError(f"invalid YAML: {exc}", file=file) from None
    except ValueError as exc:  # an integer of more digits than Python converts, say
        digits = sys.get_int_max_str_digits()
        long_number = "digits" in str(exc)
        raise UserError(
            f"invalid YAML: a number with more than {digits} digits"
            if long_number
            else f"invalid YAML: {exc}",
            file=file,
            hint="write a number that long as a string, in quotes" if long_number else None,
        ) from None
    finally:
        loader.dispose()


def _syntax_error(exc: yaml.MarkedYAMLError, file: str | Path) -> UserError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "syntax error"
    if problem.startswith("but ") and exc.context:
        problem = f"{exc.context}, {problem}"
    if "'\\t'" in problem:
        hint = "indent with spaces, not tabs"
    elif isinstance(exc, yaml.constructor.ConstructorError):
        hint = "use plain mappings, lists, strings and numbers"
    else:
        hint = "check the indentation, colons and quotes there"
    if mark is None:
        return UserError(f"invalid YAML: {problem}", file=file, hint=hint)
    return UserError(
        f"invalid YAML at column {mark.column + 1}: {problem}",
        file=file,
        line=mark.line + 1,
        hint=hint,
    )


class _Visits:
    """The nodes seen by a walk, and how many visits repeated one (an alias's doing)."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.repeated = 0
        self.alias_line: int | None = None  # where the alias being walked was used

    def visit(self, node: yaml.Node, line: int | None, file: str | Path) -> bool:
        """Count a visit; True when it starts a repeat (an alias's node, seen before)."""
        if id(node) not in self.seen:
            self.seen.add(id(node))
            return False
        self.repeated += 1
        if self.repeated > MAX_ALIAS_NODES:
            raise UserError(
                f"invalid YAML: aliases expand to more than {MAX_ALIAS_NODES:,} nodes",
                file=file,
                line=line if self.alias_line is None else self.alias_line,
                hint="write the data out, or use fewer aliases",
            )
        if self.alias_line is None:
            self.alias_line = line
            return True
        return False


def _record_lines(
    node: yaml.Node,
    path: KeyPath,
    lines: dict[KeyPath, int],
    loader: _Loader,
    file: str | Path,
    active: set[int],
    visits: _Visits,
) -> None:
    """Fill ``lines`` for everything under ``node``; ``active`` holds the nodes above it.
    ``visits`` bounds what aliases repeat: each repeated node would be built, expanded and
    stored again, so a few bytes of aliases could stand for billions of values."""
    if id(node) in active:
        raise UserError(
            "invalid YAML: an alias refers to a node that contains it",
            file=file,
            line=lines.get(path),
            hint="an anchor cannot be used inside itself",
        )
    repeat = visits.visit(node, lines.get(path), file)
    active.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first_lines: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:  # merged keys: counted, their lines not kept
                _count_merged(value_node, lines.get(path), file, visits)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            key = loader.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in first_lines:
                raise UserError(
                    f"duplicate key {key!r} (first on line {first_lines[key]})",
                    file=file,
                    line=line,
                    hint="keep only one of them",
                )
            first_lines[key] = line
            lines[(*path, key)] = line
            _record_lines(value_node, (*path, key), lines, loader, file, active, visits)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _record_lines(item, (*path, index), lines, loader, file, active, visits)
    active.discard(id(node))
    if repeat:
        visits.alias_line = None


def _count_merged(node: yaml.Node, line: int | None, file: str | Path, visits: _Visits) -> None:
    """Count the nodes a merge key (``<<: *base``) brings in, as :func:`_record_lines`
    counts the others."""
    outer = visits.alias_line  # a repeat inside sets it to this merge's line, for here only
    stack = [node]
    while stack:
        item = stack.pop()
        visits.visit(item, line, file)
        if isinstance(item, yaml.MappingNode):
            for key_node, value_node in item.value:
                stack.extend((key_node, value_node))
        elif isinstance(item, yaml.SequenceNode):
            stack.extend(item.value)
    visits.alias_line = outer


def describe(value: Any) -> str:
    """A short rendering of a value for the 'got ...' part of a message."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return "a mapping" if isinstance(value, dict) else "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def format_key_path(path: KeyPath) -> str:
    """``("targets", "swarm", "input_key")`` -> ``targets.swarm.input_key``; items as ``[2]``."""
    text = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


# ${NAME}, ${NAME:-default}; $${...} is a literal ${...}; a lone ${ is unterminated.
_REFERENCE = re.compile(r"(\$?)\$\{([^}]*)\}|\$\{")
_NAME_AND_DEFAULT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)
# A string that is one reference and nothing else (what a number may be written as).
WHOLE_REFERENCE = r"^\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}$"


def expand_env(
    doc: YamlDocument, *, file: str | Path, environ: Mapping[str, str] | None = None
) -> tuple[Any, Any]:
    """Expand ``${VAR}`` and ``${VAR:-default}`` in every string value (not in keys).

    Returns ``(expanded, recorded)``: ``recorded`` is the same data except that
    variables whose names look secret (:func:`agenteval_cli.core.redact.is_secret_name`:
    ``*KEY*``, ``*TOKEN*``, ``*PASS*``, ``*DSN*``, ...) stay as ``${NAME}``, and the
    password of a URL with credentials and any secret-named variable's value written out
    literally are ``***``, so it can be stored or shown without leaking credentials. The
    values of secret-named variables (and their defaults) are remembered by
    :mod:`agenteval_cli.core.redact`, which takes them out of every message.
    A default applies when the variable is unset or empty, as in the shell.
    """
    env = os.environ if environ is None else environ

    def expand_string(text: str, path: KeyPath) -> tuple[str, str]:
        if "${" not in text:
            return text, redact(text)
        expanded: list[str] = []
        recorded: list[str] = []
        position = 0
        for match in _REFERENCE.finditer(text):
            expanded.append(text[position : match.start()])
            recorded.append(text[position : match.start()])
            position = match.end()
            escape, body = match.group(1), match.group(2)
            if body is None:
                raise doc.error(
                    path,
                    "unterminated '${'",
                    file=file,
                    hint="close it with '}', or write '$${' for '${'",
                )
            if escape:
                expanded.append("${" + body + "}")
                recorded.append("$${" + body + "}")
                continue
            reference = _NAME_AND_DEFAULT.fullmatch(body)
            if reference is None:
                raise doc.error(
                    path,
                    f"malformed variable reference '${{{body}}}'",
                    file=file,
                    hint="write ${NAME} or ${NAME:-default}",
                )
            name, default = reference.group(1), reference.group(2)
            value = env.get(name) if default is None else (env.get(name) or default)
            if value is None:
                raise doc.error(
                    path,
                    f"environment variable {name!r} is not set",
                    file=file,
                    hint=f"set it, or give a default: ${{{name}:-value}}",
                )
            expanded.append(value)
            if is_secret_name(name):
                remember(value)
                recorded.append(match.group(0))
            else:
                recorded.append(value)
        expanded.append(text[position:])
        recorded.append(text[position:])
        return "".join(expanded), redact("".join(recorded))

    def walk(value: Any, path: KeyPath) -> tuple[Any, Any]:
        if isinstance(value, str):
            return expand_string(value, path)
        if isinstance(value, dict):
            pairs = {key: walk(item, (*path, key)) for key, item in value.items()}
            return (
                {key: pair[0] for key, pair in pairs.items()},
                {key: pair[1] for key, pair in pairs.items()},
            )
        if isinstance(value, list):
            pairs_list = [walk(item, (*path, index)) for index, item in enumerate(value)]
            return [pair[0] for pair in pairs_list], [pair[1] for pair in pairs_list]
        return value, value

    return walk(doc.data, ())
