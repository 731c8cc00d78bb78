"""The OpenTelemetry names the export writes, each spelt once.

The GenAI semantic conventions' own constants where the released package has them; the
development ones it does not have yet (the cache-write rename, transfers, the evaluation
event) spelt here as the conventions write them; agenteval's own under ``agenteval.``.
Importing this module needs the ``otel`` extra.
"""

from __future__ import annotations

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

OPERATION = gen_ai.GEN_AI_OPERATION_NAME
INVOKE_WORKFLOW = gen_ai.GenAiOperationNameValues.INVOKE_WORKFLOW.value
INVOKE_AGENT = gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value
EXECUTE_TOOL = gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
CHAT = gen_ai.GenAiOperationNameValues.CHAT.value

WORKFLOW_NAME = gen_ai.GEN_AI_WORKFLOW_NAME
AGENT_NAME = gen_ai.GEN_AI_AGENT_NAME
CONVERSATION_ID = gen_ai.GEN_AI_CONVERSATION_ID
REQUEST_MODEL = gen_ai.GEN_AI_REQUEST_MODEL
PROVIDER_NAME = gen_ai.GEN_AI_PROVIDER_NAME

TOOL_NAME = gen_ai.GEN_AI_TOOL_NAME
TOOL_TYPE = gen_ai.GEN_AI_TOOL_TYPE
TOOL_ARGUMENTS = gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS
TOOL_RESULT = gen_ai.GEN_AI_TOOL_CALL_RESULT

INPUT_TOKENS = gen_ai.GEN_AI_USAGE_INPUT_TOKENS
OUTPUT_TOKENS = gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
CACHE_READ_TOKENS = gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS
CACHE_CREATION_TOKENS = gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_write.input_tokens"  # the newer name of the above
REASONING_TOKENS = gen_ai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS

TRANSFER_MODE = "gen_ai.transfer.mode"
TRANSFER_TARGET_NAME = "gen_ai.transfer.target.name"
RETURN_TO_CALLER = "return_to_caller"  # a coordinator's delegation: control comes back
PASS_CONTROL = "pass_control"  # a swarm's handoff: the target goes on from there

EVALUATION_RESULT = "gen_ai.evaluation.result"  # the event
EVALUATION_NAME = gen_ai.GEN_AI_EVALUATION_NAME
EVALUATION_SCORE_VALUE = gen_ai.GEN_AI_EVALUATION_SCORE_VALUE
EVALUATION_SCORE_LABEL = gen_ai.GEN_AI_EVALUATION_SCORE_LABEL
EVALUATION_EXPLANATION = gen_ai.GEN_AI_EVALUATION_EXPLANATION

# agenteval's own: what the conventions have no name for
EXPERIMENT = "agenteval.experiment"
EXAMPLE_ID = "agenteval.example.id"
REPETITION = "agenteval.repetition"
STATUS = "agenteval.status"
CACHED = "agenteval.cached"
TURN = "agenteval.turn"
UNTRACED = "agenteval.untraced"
TIMES_UNRECORDED = "agenteval.times_unrecorded"
TRANSFER_SOURCE = "agenteval.transfer.source"
TRANSFER_VIA = "agenteval.transfer.via"
TOOL_KIND = "agenteval.tool.kind"
TOOL_STATUS = "agenteval.tool.status"
TOOL_TARGET = "agenteval.tool.target"
USAGE_UNKNOWN = "agenteval.usage.unknown"
CALL_RETRIED = "agenteval.model_call.retried"
CALL_CUT_OFF = "agenteval.model_call.cut_off"
