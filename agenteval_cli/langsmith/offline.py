"""Local runs never reach LangSmith, whatever the environment says.

LangChain traces a graph to LangSmith when ``LANGSMITH_TRACING`` (or ``LANGCHAIN_TRACING_V2``)
is true, and ``@traceable`` functions do the same. During a local run tracing is switched off
three ways: the environment variables (the client caches them, so its cache is cleared),
LangSmith's global switch, which also covers threads the run starts, and its context switch.
Everything is restored afterwards.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, cast

TRACING_VARS = (
    "LANGSMITH_TRACING",
    "LANGSMITH_TRACING_V2",
    "LANGCHAIN_TRACING",
    "LANGCHAIN_TRACING_V2",
)


@contextmanager
def no_langsmith_tracing() -> Iterator[None]:
    """Within the block nothing is traced to LangSmith by LangChain or ``@traceable``.

    While langsmith is not imported its environment variables are all there is to switch
    off (a langsmith imported during the block reads them), so it is not imported for that.
    """
    saved_env = {var: os.environ.get(var) for var in TRACING_VARS}
    os.environ.update(dict.fromkeys(TRACING_VARS, "false"))
    switches = _switched_off() if "langsmith" in sys.modules else nullcontext()
    try:
        with switches:
            yield
    finally:
        for var, value in saved_env.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
        if "langsmith" in sys.modules:  # imported before or during the block
            _clear_env_cache()


@contextmanager
def _switched_off() -> Iterator[None]:
    """LangSmith's global switch (threads the run starts too) and its context switch off,
    its cached reading of the environment forgotten."""
    import langsmith
    from langsmith._internal import _context
    from langsmith.run_helpers import tracing_context

    saved_global = _context._GLOBAL_TRACING_ENABLED
    saved_context = _context._TRACING_ENABLED.get()
    _clear_env_cache()
    langsmith.configure(enabled=False)
    try:
        with tracing_context(enabled=False):
            yield
    finally:
        _context._GLOBAL_TRACING_ENABLED = saved_global
        _context._TRACING_ENABLED.set(saved_context)


def _clear_env_cache() -> None:
    """Forget the environment variables LangSmith's client has read and cached.

    ``get_env_var`` is ``functools.lru_cache``-wrapped below its ``@overload`` stubs, so the
    checker sees only the overloads, not the cache wrapper.
    """
    from langsmith import utils as ls_utils

    cast("functools._lru_cache_wrapper[Any]", ls_utils.get_env_var).cache_clear()
