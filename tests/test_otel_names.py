"""The one table of OpenTelemetry names (agenteval_cli.otel.names) against the GenAI
semantic conventions' released package, where the package has the name."""

from __future__ import annotations

import pytest

from agenteval_cli.otel import names

gen_ai = pytest.importorskip("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")

RELEASED = {
    "OPERATION": "GEN_AI_OPERATION_NAME",
    "WORKFLOW_NAME": "GEN_AI_WORKFLOW_NAME",
    "AGENT_NAME": "GEN_AI_AGENT_NAME",
    "CONVERSATION_ID": "GEN_AI_CONVERSATION_ID",
    "REQUEST_MODEL": "GEN_AI_REQUEST_MODEL",
    "RESPONSE_MODEL": "GEN_AI_RESPONSE_MODEL",
    "PROVIDER_NAME": "GEN_AI_PROVIDER_NAME",
    "INPUT_TOKENS": "GEN_AI_USAGE_INPUT_TOKENS",
    "OUTPUT_TOKENS": "GEN_AI_USAGE_OUTPUT_TOKENS",
    "CACHE_READ_TOKENS": "GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS",
    "CACHE_CREATION_TOKENS": "GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS",
    "REASONING_TOKENS": "GEN_AI_USAGE_REASONING_OUTPUT_TOKENS",
    "INPUT_MESSAGES": "GEN_AI_INPUT_MESSAGES",
    "OUTPUT_MESSAGES": "GEN_AI_OUTPUT_MESSAGES",
    "SYSTEM_INSTRUCTIONS": "GEN_AI_SYSTEM_INSTRUCTIONS",
    "TOOL_NAME": "GEN_AI_TOOL_NAME",
    "TOOL_TYPE": "GEN_AI_TOOL_TYPE",
    "TOOL_CALL_ID": "GEN_AI_TOOL_CALL_ID",
    "TOOL_ARGUMENTS": "GEN_AI_TOOL_CALL_ARGUMENTS",
    "TOOL_RESULT": "GEN_AI_TOOL_CALL_RESULT",
    "EVALUATION_NAME": "GEN_AI_EVALUATION_NAME",
    "EVALUATION_SCORE_VALUE": "GEN_AI_EVALUATION_SCORE_VALUE",
    "EVALUATION_SCORE_LABEL": "GEN_AI_EVALUATION_SCORE_LABEL",
    "EVALUATION_EXPLANATION": "GEN_AI_EVALUATION_EXPLANATION",
}


@pytest.mark.parametrize("ours", sorted(RELEASED))
def test_each_name_is_the_released_conventions(ours: str) -> None:
    assert getattr(names, ours) == getattr(gen_ai, RELEASED[ours])


def test_operation_values_are_the_released_conventions() -> None:
    values = gen_ai.GenAiOperationNameValues
    assert values.INVOKE_WORKFLOW.value == names.INVOKE_WORKFLOW
    assert values.INVOKE_AGENT.value == names.INVOKE_AGENT
    assert values.EXECUTE_TOOL.value == names.EXECUTE_TOOL
    assert values.CHAT.value == names.CHAT


def test_the_import_reads_first_what_the_export_writes() -> None:
    """Each name the export writes heads what the import reads, so an exported trace reads
    back."""
    pairs = [
        (names.AGENT_NAME, names.AGENT_NAME_READ),
        (names.PROVIDER_NAME, names.PROVIDER_READ),
        (names.INPUT_TOKENS, names.INPUT_TOKENS_READ),
        (names.OUTPUT_TOKENS, names.OUTPUT_TOKENS_READ),
        (names.CACHE_READ_TOKENS, names.CACHE_READ_TOKENS_READ),
        (names.REASONING_TOKENS, names.REASONING_TOKENS_READ),
        (names.TOOL_NAME, names.TOOL_NAME_READ),
        (names.TOOL_CALL_ID, names.TOOL_CALL_ID_READ),
        (names.TOOL_ARGUMENTS, names.TOOL_ARGUMENTS_READ),
        (names.TOOL_RESULT, names.TOOL_RESULT_READ),
        (names.TRANSFER_TARGET_NAME, names.TRANSFER_TARGET_READ),
    ]
    for written, read in pairs:
        assert read[0] == written
    assert names.REQUEST_MODEL in names.MODEL_NAME_READ
    assert names.CACHE_WRITE_TOKENS_READ[0] == names.CACHE_CREATION_TOKENS
