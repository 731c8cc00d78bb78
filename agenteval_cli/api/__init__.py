"""The Python API: run a spec, then compare, gate and report on its experiments.

``import agenteval_cli as agenteval``, then ``agenteval.run("configs/routing.yaml")``
(or ``await agenteval.arun(...)`` inside a running event loop). The ``agenteval`` command
is a layer over these functions: it maps its options to them and prints what they return.
"""

from agenteval_cli.api.reading import (
    Gate,
    compare,
    compare_each,
    gate,
    load_experiments,
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
from agenteval_cli.api.schema import spec_schema
from agenteval_cli.api.uploading import Upload, Uploads, upload

__all__ = [
    "ExperimentReport",
    "Gate",
    "RunReport",
    "RunStart",
    "Upload",
    "Uploads",
    "arun",
    "combine",
    "compare",
    "compare_each",
    "gate",
    "import_langsmith",
    "import_traces",
    "load",
    "load_experiments",
    "merge",
    "opened_store",
    "rescore",
    "run",
    "save_baseline",
    "spec_schema",
    "upload",
    "write_report",
]
