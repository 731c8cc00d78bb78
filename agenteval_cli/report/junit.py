"""JUnit XML for CI test tabs: one test case per example × target × checked score.

The checks are the spec's thresholds applied to each example's score (averaged over its
repetitions), or, with no thresholds, the pass marks the metrics declare (the routing
demo's: full routing accuracy and coverage, no ping-pong). A failure carries the
evaluator's comment; an error, the error. With a baseline, a last suite holds one case per
baseline check of the gate: a failure when it failed, or when it is untested and not
allowed; skipped when it is untested and allowed; the gate's line for it either way.

Every text is made what a strict XML parser accepts (escape sequences and other control
characters removed, :func:`agenteval_cli.core.redact.xml_text`), with known secrets redacted.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agenteval_cli.core.redact import xml_text
from agenteval_cli.gating.examples import checks_for, example_checks
from agenteval_cli.gating.family import CheckOutcome
from agenteval_cli.gating.regression import fails
from agenteval_cli.gating.wording import outcome_line
from agenteval_cli.results.sources import ExperimentData

GATE_SUITE = "baseline gate"


def junit_tree(
    sides: Sequence[ExperimentData],
    *,
    thresholds: Mapping[str, Any],
    gate_checks: Sequence[CheckOutcome] = (),
    allow_untested: bool = False,
) -> ET.Element:
    root = ET.Element("testsuites", name="agenteval")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for side in sides:
        applied = checks_for(side, thresholds)
        suite = ET.SubElement(root, "testsuite", name=xml_text(side.target))
        counts = {"tests": 0, "failures": 0, "errors": 0}
        time = 0.0
        for example_id, runs in side.by_example().items():
            latency = sum(r.latency_s for r in runs)
            time += latency
            errors = [r.error for r in runs if r.error]
            for check in example_checks(runs, applied, side.catalog):
                counts["tests"] += 1
                case = ET.SubElement(
                    suite,
                    "testcase",
                    classname=xml_text(f"{side.target}.{example_id}"),
                    name=xml_text(check.key),
                    time=f"{latency:.3f}",
                )
                if errors:
                    counts["errors"] += 1
                    node = ET.SubElement(case, "error", message=xml_text(errors[0][:200]))
                    node.text = xml_text("\n".join(errors))
                elif not check.passed:
                    counts["failures"] += 1
                    shown = check.shown(side.catalog)
                    node = ET.SubElement(
                        case,
                        "failure",
                        message=xml_text(f"{check.key} = {shown}, expected {check.threshold}"),
                    )
                    node.text = xml_text(check.comment) if check.comment else None
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{time:.3f}")
        properties = ET.Element("properties")
        ET.SubElement(properties, "property", name="experiment", value=xml_text(side.name))
        suite.insert(0, properties)
    if gate_checks:
        for key, value in _gate_suite(root, gate_checks, allow_untested).items():
            totals[key] += value
    if not totals["skipped"]:
        del totals["skipped"]
    for key, value in totals.items():
        root.set(key, str(value))
    return root


def _gate_suite(
    root: ET.Element, outcomes: Sequence[CheckOutcome], allow_untested: bool
) -> dict[str, int]:
    """A case per baseline check of the gate; its counts."""
    suite = ET.SubElement(root, "testsuite", name=GATE_SUITE)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for outcome in outcomes:
        counts["tests"] += 1
        line = xml_text(outcome_line(outcome))
        case = ET.SubElement(
            suite,
            "testcase",
            classname=xml_text(f"{outcome.check.target}.baseline"),
            name=xml_text(outcome.check.key),
            time="0.000",
        )
        if fails(outcome, allow_untested=allow_untested):
            counts["failures"] += 1
            ET.SubElement(case, "failure", message=line[:200]).text = line
        elif outcome.status == "untested":
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=line[:200]).text = line
        else:
            ET.SubElement(case, "system-out").text = line
    for key, value in counts.items():
        suite.set(key, str(value))
    suite.set("time", "0.000")
    return counts


def write_junit(
    path: Path,
    sides: Sequence[ExperimentData],
    *,
    thresholds: Mapping[str, Any],
    gate_checks: Sequence[CheckOutcome] = (),
    allow_untested: bool = False,
) -> None:
    tree = ET.ElementTree(
        junit_tree(
            sides, thresholds=thresholds, gate_checks=gate_checks, allow_untested=allow_untested
        )
    )
    ET.indent(tree)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tree.write(tmp, encoding="utf-8", xml_declaration=True)
    tmp.replace(path)
