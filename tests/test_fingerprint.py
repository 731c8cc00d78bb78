"""Which project files a target's fingerprint follows: every import a module's code makes."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenteval_cli.execution.fingerprint import project_files


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_imports_at_any_depth_and_relative_ones_are_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/graph.py": (
                "from __future__ import annotations\n"
                "import json\n"
                "from . import prompts\n"
                "from .tools import search as s, lookup\n"
                "class Graph:\n"
                "    def build(self):\n"
                "        import app.nodes.router\n"
                "        def inner():\n"
                "            from ..app_extra import nothing  # outside the package: ignored\n"
                "        return app.nodes.router\n"
            ),
            "app/prompts.py": "",
            "app/tools.py": "from app.models import *\n",
            "app/models.py": "",
            "app/nodes/__init__.py": "",
            "app/nodes/router.py": "",
            "app/unused.py": "",
        },
    )
    found = {p.relative_to(tmp_path).as_posix() for p in project_files("app.graph:graph", tmp_path)}
    assert found == {
        "app/__init__.py",
        "app/graph.py",
        "app/prompts.py",
        "app/tools.py",
        "app/models.py",
        "app/nodes/router.py",
        "app/nodes/__init__.py",
    }


def test_a_file_that_does_not_compile_is_hashed_but_not_followed(tmp_path: Path) -> None:
    _write(tmp_path, {"target.py": "import helper\ndef broken(:\n", "helper.py": ""})
    found = {p.name for p in project_files("target.py:graph", tmp_path)}
    assert found == {"target.py"}
