"""The LangSmith client, built from the environment only, and its failures as one line.

Credentials come from ``LANGSMITH_API_KEY`` (or ``LANGCHAIN_API_KEY``) and
``LANGSMITH_ENDPOINT`` (or ``LANGCHAIN_ENDPOINT``); never from a file or a CLI profile, so
nothing secret is ever written by agenteval. 429 and 5xx answers are retried with
exponential backoff (honouring ``Retry-After``) by the client's HTTP adapter. No wait is longer
than ``AGENTEVAL_LANGSMITH_MAX_WAIT_S`` (default 30 s): a server asking for a day waits that
long, and a ``Retry-After`` that is no number of seconds nor a date (``inf``, garbage) is
ignored for the backoff.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.errors import UserError

if TYPE_CHECKING:
    from langsmith import Client

API_KEY_VARS = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")
ENDPOINT_VARS = ("LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT")
DEFAULT_ENDPOINT = "https://api.smith.langchain.com"
RETRY_STATUSES = (408, 425, 429, 500, 502, 503, 504)
# the feedback key agenteval uploads a failed request's blame under (its kind the value):
# where a failure started, not a score, so an import of the experiment reads no score of it
BLAME_KEY = "blame"
MAX_WAIT_S = 30.0  # the longest wait between two attempts of one request


def max_wait_s() -> float:
    """``AGENTEVAL_LANGSMITH_MAX_WAIT_S``, or 30 s; a value that is no positive finite
    number of seconds is ignored."""
    try:
        value = float(os.environ.get("AGENTEVAL_LANGSMITH_MAX_WAIT_S", MAX_WAIT_S))
    except ValueError:
        return MAX_WAIT_S
    return value if 0 <= value < math.inf else MAX_WAIT_S


class LangSmithFailure(UserError):
    """LangSmith refused or failed a request (after retries): one line, exit code 4."""

    exit_code = 4  # ExitCode.SERVICE_FAILED: never the gate's 1


@dataclass(frozen=True)
class Credentials:
    """Where to talk to and with which key; the key is kept out of ``repr``."""

    endpoint: str
    api_key: str = field(repr=False)
    key_var: str = "LANGSMITH_API_KEY"


def credentials(env: Mapping[str, str] | None = None) -> Credentials:
    """The LangSmith endpoint and key from the environment; a missing key is a UserError."""
    env = os.environ if env is None else env
    for var in API_KEY_VARS:
        key = (env.get(var) or "").strip().strip("'\"")
        if key:
            break
    else:
        raise UserError(
            "LANGSMITH_API_KEY is not set",
            hint="export LANGSMITH_API_KEY=<your key> (or LANGCHAIN_API_KEY); "
            "set LANGSMITH_ENDPOINT for a self-hosted LangSmith",
        )
    endpoint = next((env[v].strip() for v in ENDPOINT_VARS if (env.get(v) or "").strip()), None)
    return Credentials((endpoint or DEFAULT_ENDPOINT).rstrip("/"), key, var)


class _Redact(logging.Filter):
    """Drops the API key from any log record of the langsmith and urllib3 loggers
    (:data:`_LOGGERS`)."""

    def __init__(self, secret: str) -> None:
        super().__init__()
        self.secret = secret

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self.secret in message:
            record.msg, record.args = message.replace(self.secret, "***"), ()
        if record.exc_info and not record.exc_text:  # the traceback, as handlers print it
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text and self.secret in record.exc_text:
            record.exc_text = record.exc_text.replace(self.secret, "***")
        return True


class _HandledConflicts(logging.Filter):
    """Drops the client's log of a 409 Conflict: agenteval writes by stable ids, so a
    conflict is a write an earlier (interrupted) upload made, and is treated as done; the
    client would otherwise print a full traceback for each one."""

    def filter(self, record: logging.LogRecord) -> bool:
        from langsmith.utils import LangSmithConflictError

        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, LangSmithConflictError)


_FILTERED: dict[str, _Redact] = {}
_CONFLICTS = _HandledConflicts()
# A logger's filters see only the records logged on it, not its children's: each logger
# that logs requests is named.
_LOGGERS = ("langsmith", "langsmith.client", "langsmith.utils", "urllib3", "urllib3.connectionpool")


@dataclass
class Connection:
    """A client and what agenteval needs beside it: where it points and ingestion errors."""

    client: Client
    creds: Credentials
    errors: list[BaseException]  # run-ingestion failures the client only logs

    @property
    def endpoint(self) -> str:
        return self.creds.endpoint

    def check_ingestion(self) -> None:
        """Raise the first run-ingestion error the client swallowed, if any."""
        if self.errors:
            error = self.errors[0]
            self.errors.clear()
            raise error


def connect(creds: Credentials | None = None) -> Connection:
    """A ``langsmith.Client`` with explicit credentials, retries, and no background tracing.

    Background batching is off: every write is a synchronous request whose failure we see.
    """
    from langsmith import Client
    from langsmith.utils import LangSmithRetry

    creds = creds or credentials()
    if creds.api_key not in _FILTERED:
        _FILTERED[creds.api_key] = _Redact(creds.api_key)
    for name in _LOGGERS:
        logging.getLogger(name).addFilter(_CONFLICTS)
        logging.getLogger(name).addFilter(_FILTERED[creds.api_key])
    cap = max_wait_s()
    retry = _capped_retry(LangSmithRetry, cap)(
        total=int(os.environ.get("AGENTEVAL_LANGSMITH_RETRIES", "5")),
        status_forcelist=list(RETRY_STATUSES),
        backoff_factor=float(os.environ.get("AGENTEVAL_LANGSMITH_BACKOFF", "0.5")),
        backoff_max=cap,
        raise_on_redirect=False,
        raise_on_status=False,
        respect_retry_after_header=True,
        allowed_methods=None,
    )
    errors: list[BaseException] = []
    client = Client(
        api_url=creds.endpoint,
        api_key=creds.api_key,
        retry_config=retry,
        auto_batch_tracing=False,
        tracing_error_callback=errors.append,
        timeout_ms=(10_000, 60_000),
    )
    # The client's own loop around a request sleeps ``Retry-After × 2**attempt`` after the
    # HTTP adapter's retries ran out (30 s for a value that is no number): it may retry, but
    # at once, since the adapter has already waited as long as agenteval allows.
    client.session.hooks["response"].append(_no_second_wait)
    client.session.hooks["response"].append(_check_list_answer)
    return Connection(client, creds, errors)


class UnexpectedAnswer(ValueError):
    """A 200 answer whose shape the client would read as nothing at all: a page of a list
    that is no list (``{}`` from a proxy), or a run query without its ``runs``."""


def _check_list_answer(response: Any, *args: Any, **kwargs: Any) -> Any:
    """Refuse a list page the client would silently take for an empty list.

    The client pages ``GET`` lists with ``offset`` and stops at the first answer that is
    falsy (``{}``), and reads a run query without ``runs`` as no runs: a listing, a pull or
    an imported experiment would then be empty, and the command green."""
    from urllib.parse import parse_qs, urlsplit

    request = response.request
    if response.status_code != 200 or request is None:
        return response
    url = urlsplit(request.url or "")
    path = url.path.rstrip("/")
    if request.method == "GET" and "offset" in parse_qs(url.query):
        body = response.content.lstrip()[:1]
        if body != b"[":
            raise UnexpectedAnswer(
                f"GET {path} answered {_shape(response)} where LangSmith sends a list"
            )
    elif request.method == "POST" and path.endswith("/runs/query"):
        try:
            runs = response.json().get("runs")
        except (ValueError, AttributeError):
            runs = None
        if not isinstance(runs, list):
            raise UnexpectedAnswer(
                f"POST {path} answered {_shape(response)} without the list of runs"
            )
    return response


def _shape(response: Any) -> str:
    """What an answer is, in a few words: "an empty object", "an object", "no JSON"."""
    try:
        body = response.json()
    except ValueError:
        return "no JSON"
    if isinstance(body, dict):
        return "an empty object" if not body else "an object"
    return f"a JSON {type(body).__name__}".replace("NoneType", "null")


_RETRY_TYPES: dict[tuple[type, float], type] = {}


def _capped_retry(base: type, cap: float) -> type:
    """``base`` (urllib3's ``Retry``) whose wait for a ``Retry-After`` is at most ``cap``
    seconds, and whose unreadable ``Retry-After`` falls back to the backoff instead of
    failing the request. A class per cap, since urllib3 copies a Retry by its type."""
    key = (base, cap)
    if key not in _RETRY_TYPES:

        def capped_parse(self: Any, retry_after: str) -> float:
            from agenteval_cli.core.retry import parse_retry_after

            seconds = parse_retry_after(retry_after, scale=1.0)
            return 0.0 if seconds is None else min(seconds, cap)

        _RETRY_TYPES[key] = type(base.__name__, (base,), {"parse_retry_after": capped_parse})
    return _RETRY_TYPES[key]


def _no_second_wait(response: Any, *args: Any, **kwargs: Any) -> Any:
    if response.status_code in RETRY_STATUSES:
        response.headers["Retry-After"] = "0"
    return response


def redact(text: str, secret: str | None) -> str:
    """``text`` without the key, nor the masked form the client prints on connection errors."""
    if secret:
        text = text.replace(secret, "***")
    lines = [line for line in text.splitlines() if not line.startswith("API Key:")]
    return " ".join(" ".join(lines).split())


@contextmanager
def failures(conn: Connection | None = None, what: str = "LangSmith request") -> Iterator[None]:
    """LangSmith and network errors become one redacted line (exit 1; 2 for a bad key).

    Conflicts (409) pass through: callers that write by stable id treat them as done."""
    import requests
    from langsmith import utils as ls_utils

    secret = conn.creds.api_key if conn else None
    try:
        yield
    except ls_utils.LangSmithConflictError:
        raise
    except ls_utils.LangSmithAuthError:
        var = conn.creds.key_var if conn else "LANGSMITH_API_KEY"
        raise UserError(
            f"LangSmith rejected the API key in {var} (401)",
            hint="check the key and LANGSMITH_ENDPOINT",
        ) from None
    except (ls_utils.LangSmithError, requests.RequestException) as exc:
        if isinstance(exc.__cause__, UnexpectedAnswer):
            endpoint = conn.endpoint if conn else "LangSmith"
            raise unexpected_answer(endpoint, what, exc.__cause__) from None
        detail = redact(str(exc), secret)
        if len(detail) > 240:
            detail = detail[:237] + "..."
        raise LangSmithFailure(f"{what} failed: {detail}") from None
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError included
        raise unexpected_answer(conn.endpoint if conn else "LangSmith", what, exc) from None


def unexpected_answer(endpoint: str, what: str, exc: BaseException) -> LangSmithFailure:
    """A failure for an answer that is not what LangSmith sends (``{}`` from a proxy, a
    wrong endpoint, an incompatible server): what failed, where, and the first line of why."""
    from agenteval_cli.core.redact import redact as redact_secrets

    text = str(exc).strip()
    detail = redact_secrets(text.splitlines()[0] if text else "")
    if not isinstance(exc, UnexpectedAnswer):
        detail = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    if len(detail) > 160:
        detail = detail[:157] + "..."
    return LangSmithFailure(
        f"{what} failed: the server at {endpoint} gave an answer LangSmith does not give "
        f"({detail})",
        hint="check LANGSMITH_ENDPOINT (a self-hosted LangSmith ends in /api/v1)",
    )
