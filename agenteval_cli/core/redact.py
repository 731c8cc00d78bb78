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
hold. Values shorter than :data:`MIN_SECRET_LENGTH` are not redacted: a variable such as
``TOKENIZERS_PARALLELISM=false`` would otherwise blank out every "false".
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "console_text",
    "is_secret_name",
    "redact",
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
    for name in env:  # only secret-named values are read: os.environ decodes each one read
        if is_secret_name(name):
            value = env.get(name)
            if value is not None and len(value) >= MIN_SECRET_LENGTH:
                values.add(value)
    return sorted(values, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with every known secret and every URL password replaced by ``***``."""
    if not text:
        return text
    for secret in secret_values() if secrets is None else secrets:
        text = _redact_one(text, secret)
    return redact_urls(text)


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
