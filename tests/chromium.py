"""A minimal W3C WebDriver client for Debian's headless ``chromium`` + ``chromedriver``.

Stdlib only (urllib over chromedriver's HTTP API), so browser tests add no dependency.
`make test` installs the two packages when they are missing.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1300,1000",
]


def require_chromium() -> None:
    """Skip where the browser is absent, except on CI, where its absence is a failure."""
    if Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists():
        return
    message = "chromium/chromedriver missing: 'make test' installs them (apt-get)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Browser:
    """One headless Chromium session with an empty profile."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.profile = tempfile.mkdtemp(prefix="agenteval-chromium-")
        self.driver = subprocess.Popen(
            [CHROMEDRIVER, f"--port={self.port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                if self._call("GET", "/status")["ready"]:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.driver.kill()
                raise RuntimeError("chromedriver did not start")
            time.sleep(0.1)
        options = {"binary": CHROMIUM, "args": [*ARGS, f"--user-data-dir={self.profile}"]}
        capabilities = {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}
        self.session = self._call("POST", "/session", {"capabilities": capabilities})["sessionId"]

    def _call(self, method: str, path: str, body: dict | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read() or b"null")["value"]

    def _session(self, method: str, path: str, body: dict | None = None) -> Any:
        return self._call(method, f"/session/{self.session}{path}", body)

    def open(self, path: Path) -> None:
        self._session("POST", "/url", {"url": path.resolve().as_uri()})

    def run(self, script: str, *args: Any) -> Any:
        """Evaluate ``script`` (a function body; ``arguments`` holds ``args``) in the page."""
        return self._session("POST", "/execute/sync", {"script": script, "args": list(args)})

    def click(self, css: str) -> None:
        """A real click (pointer events), on the first element matching ``css``."""
        found = self._session("POST", "/element", {"using": "css selector", "value": css})
        self._session("POST", f"/element/{found[ELEMENT]}/click", {})

    def close(self) -> None:
        try:
            self._session("DELETE", "")
        finally:
            self.driver.terminate()
            self.driver.wait(timeout=10)
            shutil.rmtree(self.profile, ignore_errors=True)
