"""The gate's verdict as ``--json`` carries it: every failure, and every baseline check's
outcome with the interval it was decided from (or why it is untested)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agenteval_cli.gating.family import CheckOutcome
from agenteval_cli.gating.regression import fails
from agenteval_cli.gating.verdict import GateFailure
from agenteval_cli.gating.wording import outcome_line


def gate_json(
    failures: Sequence[GateFailure], checks: Sequence[CheckOutcome], *, allow_untested: bool
) -> dict[str, Any]:
    return {
        "passed": not failures,
        "allow_untested": allow_untested,
        "failures": [{"target": f.target, "key": f.key, "message": f.message} for f in failures],
        "checks": [_check(c, allow_untested) for c in checks],
    }


def _check(outcome: CheckOutcome, allow_untested: bool) -> dict[str, Any]:
    check, found = outcome.check, outcome.comparison
    return {
        "target": check.target,
        "key": check.key,
        "status": outcome.status,
        "fails_gate": fails(outcome, allow_untested=allow_untested),
        "examples": check.n,
        "worse": check.worse,
        "better": check.better,
        "allowed_drop": check.margin,
        "confidence": outcome.confidence,
        "ci_low": None if found is None else found.ci_low,
        "ci_high": None if found is None else found.ci_high,
        "p_value": outcome.p_value,
        "adjusted_p": outcome.adjusted,
        "family": outcome.family or None,
        "untested": check.untested,
        "line": outcome_line(outcome),
    }
