"""The forced exit's wait for a commit in progress names the store's files as they are."""

from __future__ import annotations

import sys
from pathlib import Path

from agenteval_cli.execution.guards import watchdog
from agenteval_cli.store import results

PACKAGE = Path(watchdog.__file__).resolve().parents[2]  # agenteval_cli


def test_the_store_files_it_waits_for_exist():
    for name in watchdog._STORE_FILES:
        assert (PACKAGE / name).is_file(), name


def test_a_frame_in_the_store_counts_as_mid_commit():
    def inside_store():
        return sys._getframe()

    frame = inside_store()
    assert not watchdog._inside(frame, watchdog._STORE_FILES)
    assert watchdog._inside(_frame_in(results), watchdog._STORE_FILES)


def _frame_in(module):
    """A frame whose code comes from ``module``'s file."""
    code = compile("import sys\nframe = sys._getframe()", module.__file__, "exec")
    scope: dict = {}
    exec(code, scope)
    return scope["frame"]
