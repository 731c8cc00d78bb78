"""agenteval: evaluate multi-agent LangGraph systems side by side from one YAML spec.

``import agenteval_cli as agenteval`` gives the Python API (:mod:`agenteval_cli.api`):
``run``, ``arun``, ``compare``, ``gate``, ``write_report`` and friends. They are imported
on first use, so importing the package (and starting the ``agenteval`` command) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agenteval_cli.api import (
        ExperimentReport,
        Gate,
        RunReport,
        RunStart,
        arun,
        combine,
        compare,
        compare_each,
        gate,
        import_langsmith,
        import_traces,
        load_experiments,
        merge,
        rescore,
        run,
        save_baseline,
        spec_schema,
        upload,
        write_report,
    )

__all__ = [
    "ExperimentReport",
    "Gate",
    "RunReport",
    "RunStart",
    "__version__",
    "arun",
    "combine",
    "compare",
    "compare_each",
    "gate",
    "import_langsmith",
    "import_traces",
    "load_experiments",
    "merge",
    "rescore",
    "run",
    "save_baseline",
    "spec_schema",
    "upload",
    "write_report",
]


def __getattr__(name: str) -> Any:
    """The API's names on first use (PEP 562); ``__version__`` from the installed package's
    metadata, so pyproject.toml holds the only version."""
    if name == "__version__":
        from importlib.metadata import version

        return version("agenteval-cli")
    if name in __all__:
        from agenteval_cli import api

        return getattr(api, name)
    raise AttributeError(f"module 'agenteval_cli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
