"""The heap loaded before a run, left alone by the cyclic collector while the run goes."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def heap_frozen() -> Iterator[None]:
    """What is loaded before the run (LangChain, LangGraph, the targets) outlives it: the
    cyclic collector leaves it alone while the run goes (every full collection would walk it
    again, about a tenth of a CPU-bound graph's time) and gets it back after, so a notebook
    that runs a suite loses nothing."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
