"""``langgraph dev``, LangGraph's in-memory Agent Server, started on 127.0.0.1 for a test.

It runs offline (no LangSmith key, ``LANGGRAPH_CLI_NO_ANALYTICS=1``), without its browser
or file watcher, with its log in the test's temporary folder. The server (langgraph-api,
Elastic-2.0 licensed) is a test-only tool, never a dependency of agenteval: its
``langgraph`` command is ``$AGENTEVAL_LANGGRAPH_CLI``, else the one ``make langgraph-server``
installs in ``.venv-langgraph`` (a venv over ``.venv``: langgraph-api pins protobuf<7, which
``.venv`` cannot take), else one beside this Python. Without any, the tests are skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STARTUP_S = 90.0


def langgraph_cli() -> str | None:
    """The ``langgraph`` command to serve graphs with, or None when there is none."""
    given = os.environ.get("AGENTEVAL_LANGGRAPH_CLI")
    if given:
        return given
    for candidate in (
        ROOT / ".venv-langgraph" / "bin" / "langgraph",
        Path(sys.executable).parent / "langgraph",
    ):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("langgraph")


def require_langgraph_cli() -> None:
    """Skip the test where no ``langgraph`` command is found, except on CI, where its
    absence is a failure (``make test`` installs it)."""
    import pytest

    if langgraph_cli() is None:
        missing = "no langgraph command to serve graphs with: make langgraph-server"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def langgraph_dev(graphs: Mapping[str, str], folder: Path) -> Iterator[str]:
    """Serve ``graphs`` (graph id -> ``module:attr``, importable from the repository and
    ``tests/``) and yield the server's URL; the server is stopped afterwards."""
    cli = langgraph_cli()
    assert cli is not None, "no langgraph command: make langgraph-server"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "langgraph.json").write_text(
        json.dumps({"dependencies": ["."], "graphs": dict(graphs)}), encoding="utf-8"
    )
    port = free_port()
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
    }
    log = (folder / "server.log").open("wb")
    server = subprocess.Popen(
        [cli, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)],
        cwd=folder,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopped with its workers
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, server, folder / "server.log")
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=15)
        log.close()


def _wait_until_up(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"langgraph dev exited: {log.read_text(errors='replace')[-3000:]}")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/ok", timeout=2) as up:
            if up.status == 200:
                return
        time.sleep(0.3)
    raise RuntimeError(f"langgraph dev not up in {STARTUP_S:g} s: {log.read_text()[-3000:]}")
