"""``faults:`` of a target: calls made to fail from the outside, to see how it recovers.

``{tool: lookup_invoice, fail: error}`` fails that tool's calls; ``{agent: billing, fail:
model_error}`` that agent's model calls; ``{model: gpt-4o, fail: rate_limit}`` that
model's; ``tool: "*"`` every tool. ``calls: [1]`` fails only the first matching call (a
transient fault), ``rate: 0.3`` about three calls in ten, drawn from a hash of ``seed``,
the example, the repetition and the call: the same calls fail in every run.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from agenteval_cli.core.errors import did_you_mean
from agenteval_cli.core.faults import FAULT_KINDS, MODEL_FAULTS, TOOL_FAULTS, FaultKind
from agenteval_cli.spec.errors import SpecValueError
from agenteval_cli.spec.fields import (
    Fraction,
    NonEmptyStr,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveInt,
    SpecModel,
)


class FaultSpec(SpecModel):
    """One injection: which calls (``tool``, or ``agent`` and/or ``model``), how they fail
    (``fail``), after how long (``after_s``), and which of them (``calls``, ``rate``)."""

    tool: NonEmptyStr | None = Field(default=None, description='a tool name, or "*" for every tool')
    agent: NonEmptyStr | None = None
    model: NonEmptyStr | None = None
    fail: str = Field(description="give error, timeout, rate_limit or model_error")
    after_s: NonNegativeFloat = 0.0  # a delay before the call fails (a timeout's wait)
    calls: list[PositiveInt] | None = None  # the matching calls that fail, counted from 1
    rate: Fraction | None = None  # the share of matching calls that fail
    seed: NonNegativeInt = 0

    @field_validator("fail", mode="before", json_schema_input_type=FaultKind)
    @classmethod
    def _known_kind(cls, value: Any) -> Any:
        if isinstance(value, str) and value not in FAULT_KINDS:
            raise SpecValueError(
                f"unknown fault {value!r}",
                hint=did_you_mean(value, FAULT_KINDS) or "use " + ", ".join(FAULT_KINDS),
            )
        return value

    @field_validator("calls")
    @classmethod
    def _some_calls(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and not value:
            raise SpecValueError(
                "'calls' lists no call, so the fault fails none",
                hint="list the calls that fail, counted from 1 (e.g. [1]), or remove calls",
            )
        return value

    @model_validator(mode="after")
    def _what_fails(self) -> FaultSpec:
        if self.tool is None and self.agent is None and self.model is None:
            raise SpecValueError(
                "a fault names no call to fail",
                hint='give tool: NAME (or "*"), agent: NAME or model: NAME',
            )
        if self.tool is not None and self.model is not None:
            raise SpecValueError(
                "'tool' and 'model' both given",
                hint="a fault fails tool calls or model calls; write two faults",
                at=("model",),
                about_key=True,
            )
        kinds = TOOL_FAULTS if self.tool is not None else MODEL_FAULTS
        if self.fail not in kinds:
            what = "a tool" if self.tool is not None else "a model call"
            raise SpecValueError(
                f"{what} cannot fail with {self.fail!r}",
                hint="use " + ", ".join(kinds),
                at=("fail",),
            )
        if "after_s" in self.model_fields_set and self.fail != "timeout":
            raise SpecValueError(
                "'after_s' is the wait of a timeout",
                hint="write fail: timeout, or remove after_s",
                at=("after_s",),
                about_key=True,
            )
        return self

    @property
    def on_tools(self) -> bool:
        """Whether the fault fails tool calls (else model calls)."""
        return self.tool is not None
