"""The OpenTelemetry names agenteval writes and reads, each spelt once.

The GenAI semantic conventions' names (the development ones too: transfers, the evaluation
event), OpenInference's and OpenLLMetry's where producers write those instead, and
agenteval's own under ``agenteval.``. The export writes the convention's name; the import
reads every spelling producers write (the ``*_READ`` tuples, the convention's first, first
found wins). Plain strings: importing this module needs no OpenTelemetry package
(tests/test_otel_names.py holds them against the released conventions package).
"""

from __future__ import annotations

# -- what a span is ------------------------------------------------------------------------
OPERATION = "gen_ai.operation.name"
INVOKE_WORKFLOW = "invoke_workflow"
INVOKE_AGENT = "invoke_agent"
EXECUTE_TOOL = "execute_tool"
CHAT = "chat"
AGENT_OPERATIONS = frozenset({INVOKE_AGENT, "create_agent"})
MODEL_OPERATIONS = frozenset({CHAT, "text_completion", "generate_content"})
TOOL_OPERATIONS = frozenset({EXECUTE_TOOL})
SPAN_KIND = "openinference.span.kind"  # OpenInference's: AGENT, LLM, TOOL, CHAIN, ...

# -- requests, agents, conversations -------------------------------------------------------
WORKFLOW_NAME = "gen_ai.workflow.name"
WORKFLOW_NAME_READ = (WORKFLOW_NAME, "traceloop.workflow.name")
AGENT_NAME = "gen_ai.agent.name"
AGENT_NAME_READ = (AGENT_NAME, "agent.name")
CONVERSATION_ID = "gen_ai.conversation.id"

# -- models --------------------------------------------------------------------------------
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
MODEL_NAME_READ = (RESPONSE_MODEL, REQUEST_MODEL, "llm.model_name")
PROVIDER_NAME = "gen_ai.provider.name"
PROVIDER_READ = (PROVIDER_NAME, "gen_ai.system", "llm.provider", "llm.system")
INPUT_TOKENS = "gen_ai.usage.input_tokens"
INPUT_TOKENS_READ = (INPUT_TOKENS, "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
OUTPUT_TOKENS_READ = (
    OUTPUT_TOKENS,
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
)
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_READ_TOKENS_READ = (
    CACHE_READ_TOKENS,
    "gen_ai.usage.cache_read_input_tokens",
    "llm.token_count.prompt_details.cache_read",
)
# cache writes: the GenAI registry's one name, which the export writes; the import also
# reads the ``cache_write`` spelling earlier agenteval exports wrote (no registry name)
CACHE_CREATION_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
CACHE_WRITE_TOKENS_READ = (
    CACHE_CREATION_TOKENS,
    "gen_ai.usage.cache_write.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
    "llm.token_count.prompt_details.cache_write",
)
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
REASONING_TOKENS_READ = (
    REASONING_TOKENS,
    "gen_ai.usage.reasoning_tokens",
    "llm.token_count.completion_details.reasoning",
)
INPUT_MESSAGES = "gen_ai.input.messages"  # JSON: [{"role", "parts": [...]}]
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"

# -- tools ---------------------------------------------------------------------------------
TOOL_NAME = "gen_ai.tool.name"
TOOL_NAME_READ = (TOOL_NAME, "tool.name")
TOOL_TYPE = "gen_ai.tool.type"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ID_READ = (TOOL_CALL_ID, "tool_call.id")
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_ARGUMENTS_READ = (TOOL_ARGUMENTS,)
TOOL_RESULT = "gen_ai.tool.call.result"
TOOL_RESULT_READ = (TOOL_RESULT,)

# -- transfers of control: on the span of the tool that made them (its gen_ai.agent.name
# the source), as the development GenAI conventions put them -------------------------------
TRANSFER_MODE = "gen_ai.transfer.mode"
RETURN_TO_CALLER = "return_to_caller"  # a coordinator's delegation: control comes back
PASS_CONTROL = "pass_control"  # a swarm's handoff: the target goes on from there
TRANSFER_TARGET_NAME = "gen_ai.transfer.target.name"
TRANSFER_TARGET_TYPE = "gen_ai.transfer.target.type"
TRANSFER_TARGET_AGENT = "agent"
# what other producers wrote before the conventions settled on ``target.name``
TRANSFER_TARGET_READ = (
    TRANSFER_TARGET_NAME,
    "gen_ai.transfer.target.agent.name",
    "gen_ai.transfer.target",
)

# -- scores --------------------------------------------------------------------------------
EVALUATION_RESULT = "gen_ai.evaluation.result"  # the event
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"

# -- OpenInference's values as JSON text ---------------------------------------------------
INPUT_VALUE, OUTPUT_VALUE = "input.value", "output.value"
INPUT_MIME, OUTPUT_MIME = "input.mime_type", "output.mime_type"
JSON_MIME = "application/json"
METADATA = "metadata"
INVOCATION_PARAMETERS = "llm.invocation_parameters"
# instrumentations whose spans are LangChain runs, replayed as such
OPENLLMETRY_LANGCHAIN_SCOPE = "opentelemetry.instrumentation.langchain"
LANGCHAIN_SCOPES = ("openinference.instrumentation.langchain", OPENLLMETRY_LANGCHAIN_SCOPE)

# -- OpenLLMetry's (traceloop) LangChain runs: the run's metadata one attribute a key under
# the prefix, its inputs and outputs as JSON ({"inputs" | "outputs" | "output", "kwargs"}) --
TRACELOOP_METADATA_PREFIX = "traceloop.association.properties."
TRACELOOP_SPAN_KIND = "traceloop.span.kind"  # workflow, task, agent, tool; none on models
TRACELOOP_TOOL = "tool"
TRACELOOP_WORKFLOW = "workflow"  # the request's top span, which also says invoke_agent
TRACELOOP_AGENT = "agent"  # an agent's span (Traceloop's @agent), named by its entity name
TRACELOOP_ENTITY_NAME = "traceloop.entity.name"  # the run's name (the span's is decorated)
TRACELOOP_ENTITY_INPUT = "traceloop.entity.input"
TRACELOOP_ENTITY_OUTPUT = "traceloop.entity.output"

# -- exceptions, as OpenTelemetry records them (an ``exception`` event) --------------------
EXCEPTION_EVENT = "exception"
EXCEPTION_TYPE, EXCEPTION_MESSAGE = "exception.type", "exception.message"

# -- agenteval's own: what the conventions have no name for --------------------------------
# the dataset row a request answers: the export writes it on each request's root span; the
# import matches rows by it on any span, or as a key of OpenInference's ``metadata``
EXAMPLE_ID = "agenteval.example_id"
EXPERIMENT = "agenteval.experiment"
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
# the fault a spec's ``faults:`` injected into a model or tool call (``model_error``, ...)
FAULT = "agenteval.fault"
# what handoff_context reads: the turn's human message, on the request's root, and the text
# each handoff's receiving agent's first own model call was given, in the trace's handoff
# order (JSON: [{"source", "target", "received"}], received null where it made none)
REQUEST = "agenteval.request"
HANDOFFS_RECEIVED = "agenteval.handoffs.received"
# a failed request's blame, a ``gen_ai.evaluation.result`` event named ``blame``: its kind
# the label, its why the explanation, the agent and step its own attributes
BLAME = "blame"
BLAME_AGENT = "agenteval.blame.agent"
BLAME_STEP = "agenteval.blame.step"
CALL_CUT_OFF = "agenteval.model_call.cut_off"
