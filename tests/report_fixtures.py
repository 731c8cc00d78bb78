"""Shared data for the report tests: one real run of the demo, and hostile experiments."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.results.sources import ExperimentData, Run

ROOT = Path(__file__).resolve().parent.parent
HOSTILE_RESPONSE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'
HOSTILE_QUESTION = '<b class="injected">bold</b> & <i>friends</i> | pipes'


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """``agenteval run configs/routing.yaml`` once, with every report written by the run."""
    tmp = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(ROOT / "configs" / "routing.yaml"),
            "--store",
            str(tmp / "db"),
            "--json",
            str(tmp / "results.json"),
            "--html",
            str(tmp / "run.html"),
            "--markdown",
            str(tmp / "run.md"),
            "--junit",
            str(tmp / "run.xml"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return tmp


def hostile_sides() -> list[ExperimentData]:
    """Two sides whose model text and inputs try to inject HTML and script."""

    def run(example_id: str, routing: float, path: list[str]) -> Run:
        return Run(
            example_id=example_id,
            inputs={"question": HOSTILE_QUESTION},
            reference={"expected_agents": ["billing"]},
            outputs={"final_response": HOSTILE_RESPONSE},
            scores={"routing_accuracy": routing, "resolution_coverage": 1.0},
            comments={"routing_accuracy": "invoked ['<svg onload=alert(1)>']"},
            agent_path=path,
            handoffs=[{"source": "a", "target": "billing", "tool": "transfer_to_billing"}],
            tool_calls=[
                {"agent": "a", "name": "lookup", "args": {"q": "</pre><script>x()</script>"}}
            ],
        )

    return [
        ExperimentData(
            "evil-a", "a", [run("ex-1", 1.0, ["a", "billing"]), run("ex-2", 1.0, ["a"])]
        ),
        ExperimentData("evil-b", "b", [run("ex-1", 1.0, ["billing"]), run("ex-2", 0.0, ["a"])]),
    ]
