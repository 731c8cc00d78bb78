"""The attribute names agenteval reads, in the GenAI semantic conventions and OpenInference's.

One table, so the readers never spell a name twice. Where a convention has several spellings
(cache writes: ``cache_creation`` and ``cache_write``), every one is listed, first found wins.
"""

from __future__ import annotations

from typing import Any

# What a span is.
OPERATION = "gen_ai.operation.name"  # GenAI: invoke_agent, chat, execute_tool, ...
SPAN_KIND = "openinference.span.kind"  # OpenInference: AGENT, LLM, TOOL, CHAIN, ...
AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent"})
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
TOOL_OPERATIONS = frozenset({"execute_tool"})

# The agent a span runs.
AGENT_NAME = ("gen_ai.agent.name", "agent.name")

# Models.
MODEL_NAME = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
PROVIDER = ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
INPUT_TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
OUTPUT_TOKENS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
)
CACHE_READ_TOKENS = (
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens",
    "llm.token_count.prompt_details.cache_read",
)
CACHE_WRITE_TOKENS = (
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_write.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
    "llm.token_count.prompt_details.cache_write",
)
REASONING_TOKENS = (
    "gen_ai.usage.reasoning.output_tokens",
    "gen_ai.usage.reasoning_tokens",
    "llm.token_count.completion_details.reasoning",
)
INPUT_MESSAGES = "gen_ai.input.messages"  # JSON: [{"role", "parts": [...]}]
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"

# Tools.
TOOL_NAME = ("gen_ai.tool.name", "tool.name")
TOOL_CALL_ID = ("gen_ai.tool.call.id", "tool_call.id")
TOOL_ARGUMENTS = ("gen_ai.tool.call.arguments",)
TOOL_RESULT = ("gen_ai.tool.call.result",)

# Transfers of control: a handoff's mode and target.
TRANSFER_MODE = "gen_ai.transfer.mode"
RETURN_TO_CALLER, PASS_CONTROL = "return_to_caller", "pass_control"
TRANSFER_TARGET = (
    "gen_ai.transfer.target.agent.name",
    "gen_ai.transfer.target.name",
    "gen_ai.transfer.target",
)

# OpenInference's values as JSON text.
INPUT_VALUE, OUTPUT_VALUE = "input.value", "output.value"
INPUT_MIME, OUTPUT_MIME = "input.mime_type", "output.mime_type"
METADATA = "metadata"
INVOCATION_PARAMETERS = "llm.invocation_parameters"

# How a request is matched to a dataset row: this attribute on any of its spans (or this key
# in OpenInference's ``metadata``) holds the row's id.
EXAMPLE_ID = "agenteval.example_id"

# Instrumentations whose spans are LangChain runs, replayed as such.
LANGCHAIN_SCOPES = ("openinference.instrumentation.langchain",)

# Exceptions, as OpenTelemetry records them (an ``exception`` event).
EXCEPTION_EVENT = "exception"
EXCEPTION_TYPE, EXCEPTION_MESSAGE = "exception.type", "exception.message"


def first(attributes: dict[str, Any], names: tuple[str, ...]) -> Any:
    """The value of the first of ``names`` the attributes have, or None."""
    for name in names:
        value = attributes.get(name)
        if value is not None and value != "":
            return value
    return None


def count(attributes: dict[str, Any], names: tuple[str, ...]) -> int | None:
    """A token count, or None when no attribute gives one (unknown, never zero)."""
    value = first(attributes, names)
    if isinstance(value, bool):
        return None
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
