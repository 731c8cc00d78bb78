"""Secrets and control characters out of every text that leaves the process or is stored.

Three rules, applied by :func:`redact`:

- the value of any environment variable whose name looks secret (:func:`is_secret_name`:
  ``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASS*``, ``*DSN*``, ``*WEBHOOK*``, ...) becomes
  ``***``, as does a value a spec took from such a variable (:func:`remember`, called by
  ``${VAR}`` expansion, so a ``${VAR:-default}`` default counts too), even cut short the
  way error messages cut values (``'sk-abc...'``); a run remembers the values present when
  it starts (:func:`remember_environment`), so a target that pops one is still redacted;
- the password of a URL with credentials, ``scheme://user:pass@host``, becomes ``***``;
- nothing else changes.

:func:`console_text` also removes control characters (terminal escape sequences, bidi
overrides), for data printed on a terminal; :func:`xml_text` removes what XML 1.0 cannot
hold; :func:`redact_json` redacts the strings of a JSON text (what the store writes).
Values shorter than :data:`MIN_SECRET_LENGTH` are not redacted: a variable such as
``TOKENIZERS_PARALLELISM=false`` would otherwise blank out every "false".
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "Secrets",
    "console_text",
    "is_secret_name",
    "redact",
    "redact_json",
    "redact_urls",
    "remember",
    "remember_environment",
    "secret_values",
    "strip_control",
    "xml_text",
]

MASK = "***"
MIN_SECRET_LENGTH = 6
# A value cut short by an error message keeps at least this much of the secret before "...".
_MIN_PREFIX = 6

_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|PRIVATE|DSN|WEBHOOK|COOKIE",
    re.IGNORECASE,
)
# Names that match the rule yet never hold a secret.
_NOT_SECRET = re.compile(r"^(TOKENIZERS_PARALLELISM|.*_TOKENS?_LIMIT|.*KEYBOARD.*)$", re.I)

# scheme://user:password@ -> scheme://user:***@ (the user and host stay, for the reader).
# The pattern starts with its literal '://', which the regex engine finds fast.
_URL_CREDENTIALS = re.compile(r"://(?P<user>[^\s:/?#@'\"<>\\]*):(?P<password>[^\s/?#@'\"<>\\]+)@")

_remembered: set[str] = set()


@functools.lru_cache(maxsize=1024)
def is_secret_name(name: str) -> bool:
    """A variable whose value is treated as a secret: ``OPENAI_API_KEY``, ``DB_PASS``, ..."""
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET.match(name)


def remember(value: str) -> None:
    """Redact ``value`` from now on (a secret a spec expanded from a secret-named variable)."""
    if len(value) >= MIN_SECRET_LENGTH:
        _remembered.add(value)


def remember_environment(environ: Mapping[str, str] | None = None) -> None:
    """Redact the secret-named variables' values present now, even once a target has popped
    them from the environment (and raises with one in its message)."""
    env = os.environ if environ is None else environ
    for name, value in list(env.items()):
        if is_secret_name(name):
            remember(value)


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values to redact, longest first: secret-named variables' and remembered ones."""
    env = os.environ if environ is None else environ
    values = set(_remembered)
    values.update(value for value in _secret_named(env) if len(value) >= MIN_SECRET_LENGTH)
    return sorted(values, key=len, reverse=True)


def _secret_named(env: Mapping[str, str]) -> list[str]:
    """The values of ``env``'s secret-named variables. Asked for each batch of rows the store
    writes: for ``os.environ`` its raw entries are read, so only those values are decoded."""
    data = getattr(env, "_data", None) if isinstance(env, _Environ) else None
    if isinstance(data, dict):
        decode = env.decodevalue  # type: ignore[attr-defined]
        return [decode(value) for key, value in data.items() if _is_secret_key(key)]
    return [value for name in env if is_secret_name(name) and (value := env.get(name)) is not None]


_Environ = type(os.environ)


@functools.lru_cache(maxsize=1024)
def _is_secret_key(key: bytes | str) -> bool:
    """:func:`is_secret_name` of a key as ``os.environ`` keeps it (bytes on POSIX)."""
    return is_secret_name(os.fsdecode(key))


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with every known secret and every URL password replaced by ``***``."""
    if not text:
        return text
    for secret in secret_values() if secrets is None else secrets:
        text = _redact_one(text, secret)
    return redact_urls(text)


def redact_json(text: str, secrets: Sequence[str] | None = None) -> str:
    """JSON ``text`` with every known secret and URL password in its strings (keys too)
    redacted, as :func:`redact` would; decoded and written again only when it holds one, so
    it stays the JSON it was (a secret's escaped form is found too)."""
    return Secrets.of(secret_values() if secrets is None else secrets).json(text)


class Secrets:
    """The secrets known at one moment, to redact many texts with: most hold none, and are
    told so by one search (:meth:`Secrets.now` once for a batch of the store's rows)."""

    __slots__ = ("_search", "values")

    def __init__(self, values: Sequence[str]) -> None:
        self.values = tuple(values)
        forms = sorted(_json_forms(self.values), key=len, reverse=True)
        self._search = re.compile("|".join(map(re.escape, forms))).search if forms else None

    @classmethod
    def now(cls) -> Secrets:
        return cls.of(secret_values())

    @staticmethod
    def of(values: Sequence[str]) -> Secrets:
        return _secrets(tuple(values))

    def may_hold(self, text: str) -> bool:
        """Whether ``text`` may hold a secret or a URL password (False: it holds none)."""
        if "://" in text or "..." in text:  # a URL, a secret cut short: redact() tells
            return True
        return self._search is not None and self._search(text) is not None

    def text(self, text: str) -> str:
        """:func:`redact` of plain ``text``."""
        return redact(text, self.values) if text and self.may_hold(text) else text

    def json(self, text: str) -> str:
        """:func:`redact_json` of JSON ``text``."""
        if not text or not self.may_hold(text) or redact(text, self._forms()) == text:
            return text
        plain = _redacted_value(json.loads(text), self.values)
        return json.dumps(plain, ensure_ascii=False, separators=(",", ":"))

    def _forms(self) -> tuple[str, ...]:
        return _json_forms(self.values)


@functools.lru_cache(maxsize=16)
def _secrets(values: tuple[str, ...]) -> Secrets:
    return Secrets(values)


@functools.lru_cache(maxsize=64)
def _json_forms(secrets: tuple[str, ...]) -> tuple[str, ...]:
    """Each secret as it may be written in JSON: as it is or as ``repr`` shows it, each
    escaped as JSON escapes it (a quote, a backslash, a control character)."""
    forms = set(secrets)
    forms.update(repr(secret)[1:-1] for secret in secrets)
    forms.update([json.dumps(form, ensure_ascii=False)[1:-1] for form in forms])
    return tuple(forms)


def _redacted_value(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [_redacted_value(each, secrets) for each in value]
    if isinstance(value, dict):
        return {redact(k, secrets): _redacted_value(v, secrets) for k, v in value.items()}
    return value


def redact_urls(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@host`` as ``***``."""
    if "://" in text:
        text = _URL_CREDENTIALS.sub(lambda m: f"://{m.group('user')}:{MASK}@", text)
    return text


def _redact_one(text: str, secret: str) -> str:
    for form in {secret, repr(secret)[1:-1]}:
        if form in text:
            text = text.replace(form, MASK)
    # A value shown cut short, as 'sk-abcdef...': a start of it, then the ellipsis.
    shown = repr(secret)[1:-1]
    if len(shown) <= _MIN_PREFIX or "..." not in text:
        return text
    start = text.find(shown[:_MIN_PREFIX])
    while start != -1:
        length = _MIN_PREFIX
        while length < len(shown) and text.startswith(shown[length], start + length):
            length += 1
        if text.startswith("...", start + length):
            text = text[:start] + MASK + text[start + length + 3 :]
            start += len(MASK)
        else:
            start += 1
        start = text.find(shown[:_MIN_PREFIX], start)
    return text


# C0 and C1 controls and DEL, except tab and newline; bidi embeddings, overrides and
# isolates, which reorder what a terminal shows.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# ANSI escape sequences: CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \), and the
# two-character ones; removed whole, so no '[31m' is left behind.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[@-Z\\-_]"
)


def strip_control(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` without escape sequences and control characters; tabs (and newlines unless
    ``keep_newlines``) become spaces."""
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI.sub("", text)
    text = _CONTROL.sub("", text)
    text = text.replace("\t", " ").replace("\r", "")
    return text if keep_newlines else text.replace("\n", " ")


def console_text(value: object, *, keep_newlines: bool = False) -> str:
    """Data as it may be shown on a terminal: no control characters, no secrets.

    The caller still escapes Rich markup (``rich.markup.escape``) where it prints markup."""
    return redact(strip_control(str(value), keep_newlines=keep_newlines))


# What XML 1.0 cannot hold: controls other than tab, newline and carriage return, lone
# surrogates, U+FFFE and U+FFFF.
_XML_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: object) -> str:
    """``value`` as text a strict XML parser accepts, escape sequences removed whole,
    secrets redacted."""
    text = str(value)
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI.sub("", text)
    return redact(_XML_ILLEGAL.sub("", text))
