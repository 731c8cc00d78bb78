"""The Python API: run a spec, then compare, gate and report on its experiments.

``import agenteval_cli as agenteval``, then ``agenteval.run("configs/routing.yaml")``
(or ``await agenteval.arun(...)`` inside a running event loop). The ``agenteval`` command
is a layer over these functions: it maps its options to them and prints what they return;
it never opens the store itself.

The names are imported on first use (PEP 562), so a command that needs one module of the
API (every ``--store`` option reads :mod:`agenteval_cli.api.stores`) loads only that one.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agenteval_cli.api.caching import (
        CachedTarget,
        cache_info,
        clear_cache,
    )
    from agenteval_cli.api.calibrating import (
        calibrate_judges,
    )
    from agenteval_cli.api.datasets import (
        list_datasets,
        name_check,
        plan_push,
        pull_dataset,
        push_dataset,
        reference_warnings,
    )
    from agenteval_cli.api.failures import (
        AddedFailures,
        add_failures,
    )
    from agenteval_cli.api.formats import (
        FORMATS,
        ReportFormat,
        ReportInput,
    )
    from agenteval_cli.api.options import (
        RunOptions,
        parse_shard,
        resumes,
    )
    from agenteval_cli.api.planning import (
        Plan,
        plan,
    )
    from agenteval_cli.api.pricing import (
        update_prices,
    )
    from agenteval_cli.api.reading import (
        Gate,
        check_judges,
        compare,
        compare_each,
        gate,
        load_experiments,
        preflight,
        save_baseline,
        write_report,
    )
    from agenteval_cli.api.running import (
        ExperimentReport,
        RunReport,
        RunStart,
        arun,
        combine,
        import_langsmith,
        import_traces,
        load,
        merge,
        opened_store,
        rescore,
        run,
    )
    from agenteval_cli.api.schema import (
        spec_schema,
    )
    from agenteval_cli.api.showing import (
        SHOWN_REASONS,
        LatestRun,
        Listed,
        RunTable,
        TableColumn,
        agent_usage,
        experiment_name,
        json_text,
        latest_run,
        list_experiments,
        run_table,
        write_json,
    )
    from agenteval_cli.api.stores import (
        DEFAULT_STORE,
        find_store,
    )
    from agenteval_cli.api.uploading import (
        Sent,
        Upload,
        Uploads,
        sent_so_far,
        upload,
    )

# each public name and the module that holds it, by what it is for
_WHERE = {
    "DEFAULT_STORE": "stores",
    "find_store": "stores",
    "RunOptions": "options",
    "parse_shard": "options",
    "resumes": "options",
    "ExperimentReport": "running",
    "RunReport": "running",
    "RunStart": "running",
    "arun": "running",
    "combine": "running",
    "import_langsmith": "running",
    "import_traces": "running",
    "load": "running",
    "merge": "running",
    "opened_store": "running",
    "rescore": "running",
    "run": "running",
    "Gate": "reading",
    "check_judges": "reading",
    "compare": "reading",
    "compare_each": "reading",
    "gate": "reading",
    "load_experiments": "reading",
    "preflight": "reading",
    "save_baseline": "reading",
    "write_report": "reading",
    "LatestRun": "showing",
    "Listed": "showing",
    "RunTable": "showing",
    "SHOWN_REASONS": "showing",
    "TableColumn": "showing",
    "agent_usage": "showing",
    "experiment_name": "showing",
    "json_text": "showing",
    "latest_run": "showing",
    "list_experiments": "showing",
    "run_table": "showing",
    "write_json": "showing",
    "FORMATS": "formats",
    "ReportFormat": "formats",
    "ReportInput": "formats",
    "Sent": "uploading",
    "Upload": "uploading",
    "Uploads": "uploading",
    "sent_so_far": "uploading",
    "upload": "uploading",
    "list_datasets": "datasets",
    "name_check": "datasets",
    "plan_push": "datasets",
    "pull_dataset": "datasets",
    "push_dataset": "datasets",
    "reference_warnings": "datasets",
    "AddedFailures": "failures",
    "add_failures": "failures",
    "CachedTarget": "caching",
    "cache_info": "caching",
    "clear_cache": "caching",
    "calibrate_judges": "calibrating",
    "update_prices": "pricing",
    "Plan": "planning",
    "plan": "planning",
    "spec_schema": "schema",
}

__all__ = [
    "DEFAULT_STORE",
    "FORMATS",
    "SHOWN_REASONS",
    "AddedFailures",
    "CachedTarget",
    "ExperimentReport",
    "Gate",
    "LatestRun",
    "Listed",
    "Plan",
    "ReportFormat",
    "ReportInput",
    "RunOptions",
    "RunReport",
    "RunStart",
    "RunTable",
    "Sent",
    "TableColumn",
    "Upload",
    "Uploads",
    "add_failures",
    "agent_usage",
    "arun",
    "cache_info",
    "calibrate_judges",
    "check_judges",
    "clear_cache",
    "combine",
    "compare",
    "compare_each",
    "experiment_name",
    "find_store",
    "gate",
    "import_langsmith",
    "import_traces",
    "json_text",
    "latest_run",
    "list_datasets",
    "list_experiments",
    "load",
    "load_experiments",
    "merge",
    "name_check",
    "opened_store",
    "parse_shard",
    "plan",
    "plan_push",
    "preflight",
    "pull_dataset",
    "push_dataset",
    "reference_warnings",
    "rescore",
    "resumes",
    "run",
    "run_table",
    "save_baseline",
    "sent_so_far",
    "spec_schema",
    "update_prices",
    "upload",
    "write_json",
    "write_report",
]


def __getattr__(name: str) -> Any:
    """A public name from its module, imported on first use."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'agenteval_cli.api' has no attribute {name!r}")
    value = getattr(import_module(f"agenteval_cli.api.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
