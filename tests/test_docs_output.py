"""The output the docs show is what the demo prints: each block under an
``<!-- output: agenteval run CONFIG -->`` line is the command's output (under
``<!-- output: agenteval run CONFIG; agenteval compare A B -->`` the last command's, the
commands run in turn in one folder; ``| head N`` shows its first N lines), compared with the
run's figures (latencies and
experiment ids, which change from run to run, left out).

``AGENTEVAL_WRITE_DOCS=1 pytest tests/test_docs_output.py`` (``make docs``) writes the
blocks from a fresh run instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [
    "README.md",
    "docs/agents.md",
    "docs/conversations.md",
    "docs/output.md",
    "docs/recovery.md",
]
MARK = re.compile(
    r"<!-- output: (?P<config>agenteval run \S+(; agenteval [^;|>]+)*)"
    r"( \| head (?P<head>\d+))? -->\n"
    r"```\n(?P<block>.*?)```(\n|$)",
    re.S,
)
# Figures that differ from one run to the next: what a check reads past.
CHANGING = [
    (re.compile(r"^(│ latency p\d\d +│).*$", re.M), r"\1 …"),
    (re.compile(r"^( latency p\d\d ).*$", re.M), r"\1 …"),  # compare's rows
    (re.compile(r"-[0-9a-f]{8} \("), "-… ("),
]


def _run(commands: str, folder: Path) -> str:
    """The ``agenteval ...`` commands (``; `` between them) run in turn, each in a fresh
    process, in an empty folder (so the store is the default one), as a terminal 100
    columns wide shows them: the last one's output."""
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    for command in commands.split("; "):
        args = [str(ROOT / a) if "/" in a and (ROOT / a).exists() else a for a in command.split()]
        done = subprocess.run(
            [sys.executable, "-m", "agenteval_cli.cli", *args[1:]],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
    return "\n".join(line.rstrip() for line in done.stdout.splitlines()) + "\n"


def _steady(text: str) -> str:
    for pattern, replacement in CHANGING:
        text = pattern.sub(replacement, text)
    return text


def _blocks() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for match in MARK.finditer((ROOT / doc).read_text(encoding="utf-8")):
            found.append((doc, match["config"]))
    return found


def test_every_doc_named_shows_a_run():
    assert {doc for doc, _ in _blocks()} == set(DOCS)


@pytest.mark.slow
@pytest.mark.parametrize(("doc", "config"), _blocks())
def test_the_output_a_doc_shows_is_what_the_run_prints(doc, config, tmp_path):
    printed = _run(config, tmp_path)
    head = next(m["head"] for m in MARK.finditer((ROOT / doc).read_text()) if m["config"] == config)
    if head is not None:
        printed = "".join(printed.splitlines(keepends=True)[: int(head)])
    path = ROOT / doc
    text = path.read_text(encoding="utf-8")
    match = next(m for m in MARK.finditer(text) if m["config"] == config)
    if os.environ.get("AGENTEVAL_WRITE_DOCS") == "1":
        start, end = match.span("block")
        path.write_text(text[:start] + printed + text[end:], encoding="utf-8")
        return
    assert _steady(match["block"]) == _steady(printed)
