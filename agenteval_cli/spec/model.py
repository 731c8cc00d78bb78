"""The YAML experiment spec: pydantic models and loading.

A spec looks like this (paths are relative to the spec file)::

    experiment_prefix: routing
    dataset: ../datasets/routing.jsonl
    targets:
      supervisor: agenteval_cli.demo.supervisor:graph
      swarm: {target: agenteval_cli.demo.swarm:graph, initial_state: {resolution_notes: []}}
    evaluators: [routing_accuracy, {name: trajectory_match, mode: superset}]

To add a key, add a field with a default to :class:`Spec` (or a :class:`SpecModel`
section). Unknown keys, missing required keys and wrong types then become one
``file:line: ...`` error by themselves (:mod:`agenteval_cli.spec.errors`); use the
``PositiveInt``-style types below so a bad value reads "expected an integer >= 1, got
'four'", and raise :class:`SpecValueError` with a hint from a validator of your own.
"""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema, WithJsonSchema

from agenteval_cli.core.errors import UserError, did_you_mean
from agenteval_cli.core.imports import IMPORT_PATH_FORMS
from agenteval_cli.core.retry import RetryKind
from agenteval_cli.core.safe_text import lone_surrogate_at
from agenteval_cli.core.yamlsource import (
    KeyPath,
    YamlDocument,
    describe,
    expand_env,
    format_key_path,
    load_yaml,
)
from agenteval_cli.spec.errors import SpecValueError, error_at, user_error
from agenteval_cli.spec.faults import FaultSpec
from agenteval_cli.spec.fields import (
    Concurrency,
    Fraction,
    NonEmptyStr,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    PricePerMTok,
    Repetitions,
    SpecModel,
    split_import_path,
    without_pydantic_plugins,
)

__all__ = [
    "IMPORT_PATH_FORMS",
    "DatasetSpec",
    "EvaluatorSpec",
    "FaultSpec",
    "NonEmptyStr",
    "NonNegativeFloat",
    "NonNegativeInt",
    "PositiveFloat",
    "PositiveInt",
    "Price",
    "RateLimitSpec",
    "RemoteSpec",
    "RetrySpec",
    "SimulatedUserSpec",
    "Spec",
    "SpecModel",
    "SpecValueError",
    "StopSpec",
    "TargetConfig",
    "TargetSpec",
    "load_spec",
    "resolve_path",
    "split_import_path",
    "template_parts",
]


class DatasetSpec(SpecModel):
    """Where the examples come from; ``dataset: some/file.jsonl`` is short for ``path:``."""

    path: Path | None = Field(default=None, description="a dataset file, relative to the spec")
    name: NonEmptyStr | None = Field(default=None, description="the LangSmith dataset name")
    # Examples read from LangSmith instead of a file (agenteval_cli.langsmith.remote).
    langsmith: NonEmptyStr | None = Field(default=None, description="a LangSmith dataset name")
    version: NonEmptyStr | None = Field(default=None, description="a LangSmith version tag")
    splits: list[NonEmptyStr] | None = None

    @classmethod
    def normalize(cls, data: Any) -> Any:
        return {"path": data} if isinstance(data, str) else data

    @field_validator("path", mode="before")
    @classmethod
    def _resolve_existing_file(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return None
        if not isinstance(value, str | Path) or not str(value):
            raise SpecValueError(f"expected a file path, got {describe(value)}")
        from agenteval_cli.data.examples import SUPPORTED_SUFFIXES

        base_dir = (info.context or {}).get("base_dir") or Path.cwd()
        path = _resolve(base_dir, value)
        if path.suffix.lower() not in SUPPORTED_SUFFIXES:
            suffix = path.suffix.lower() or path.name
            raise SpecValueError(
                f"unknown file format {suffix!r}",
                hint=did_you_mean(suffix, SUPPORTED_SUFFIXES)
                or "use " + ", ".join(SUPPORTED_SUFFIXES),
            )
        if not path.is_file():
            problem = "is not a file" if path.exists() else "not found"
            raise SpecValueError(
                f"file {problem}: {path}",
                hint=f"the path is relative to the spec's folder, {base_dir}",
            )
        return path

    @model_validator(mode="after")
    def _path_or_name(self) -> DatasetSpec:
        if self.langsmith is not None:
            if self.path is not None:
                raise SpecValueError(
                    "both 'path' and 'langsmith' given", hint="read examples from one of them"
                )
            self.name = self.name or self.langsmith
        elif self.version is not None or self.splits is not None:
            raise SpecValueError(
                "'version' and 'splits' need 'langsmith'",
                hint="write dataset: {langsmith: NAME, version: TAG, splits: [test]}",
            )
        if self.path is None and self.name is None:
            raise SpecValueError("no 'path' given", hint="give a file path, or a LangSmith 'name'")
        return self


def template_parts(text: str) -> list[tuple[str, str | None]]:
    """``"Q: {question}"`` -> ``[("Q: ", "question")]``: literal text, then a field or None.

    ``{{`` and ``}}`` are literal braces; a placeholder is a plain ``{field}`` name.
    """
    import string

    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise SpecValueError(
            f"{str(exc)[:1].lower()}{str(exc)[1:]} in {text!r}",
            hint="write {{ and }} for literal braces",
        ) from None
    parts: list[tuple[str, str | None]] = []
    for literal, field, spec, conversion in parsed:
        if field is not None and (not field or spec or conversion):
            raise SpecValueError(
                f"placeholder {text!r} is not a plain {{field}} name",
                hint="name an inputs field, e.g. '{question}'; write {{ and }} for literal braces",
            )
        parts.append((literal, field))
    return parts


def _check_templates(value: Any, at: tuple[Any, ...]) -> None:
    """Every string of an ``input:`` mapping parses as a template (nested values too)."""
    if isinstance(value, str):
        try:
            template_parts(value)
        except SpecValueError as exc:
            exc.at = at
            raise
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_templates(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_templates(item, (*at, index))


class ActiveAgentSpec(SpecModel):
    """``active_agent: current_step``, or ``{key: current_step, default: triage}``: the state
    key naming the agent at work, and the agent it means while the state does not hold it
    (the graph's code defaults it): a name for the trace only, the graph's input unchanged."""

    key: NonEmptyStr
    default: NonEmptyStr | None = None

    @field_validator("key")
    @classmethod
    def _state_key(cls, value: str) -> str:
        if value != value.strip() or "." in value:
            raise SpecValueError(
                f"expected a state key, got {value!r}",
                hint="name the key of the graph's state that holds the agent, e.g. current_step",
            )
        return value


class TargetConfig(SpecModel):
    """``config:`` of a target: merged into the RunnableConfig of every call, its strings'
    ``{field}`` placeholders filled from the row as ``input:``'s are."""

    configurable: dict[str, Any] = Field(default_factory=dict)
    recursion_limit: PositiveInt | None = None
    tags: list[NonEmptyStr] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    max_concurrency: PositiveInt | None = None

    @field_validator("configurable", "metadata", "tags")
    @classmethod
    def _templates(cls, value: Any) -> Any:
        _check_templates(value, ())
        return value

    @field_validator("configurable")
    @classmethod
    def _thread_id_per_row(cls, value: dict[str, Any]) -> dict[str, Any]:
        thread = value.get("thread_id")
        if "thread_id" in value and not (
            isinstance(thread, str) and any(f for _, f in template_parts(thread))
        ):
            raise SpecValueError(
                "'thread_id' is the same for every example, so they would share one thread",
                hint='fill it from the row, e.g. thread_id: "{ticket_id}", or leave it out: '
                "agenteval then gives every call a thread of its own",
                at=("thread_id",),
            )
        return value

    def runnable_config(self) -> dict[str, Any]:
        """The keys that were given, as a RunnableConfig mapping."""
        return {
            key: value for key, value in self.model_dump().items() if value not in (None, {}, [])
        }


class RemoteSpec(SpecModel):
    """``remote:`` of a target: a graph served by LangGraph's Agent Server (``langgraph
    dev``, ``langgraph up``, a deployment). ``headers`` maps each HTTP header to the
    environment variable holding its value, which is a secret: read when the run starts,
    never written in the spec or stored."""

    url: NonEmptyStr = Field(description="give the server's URL, e.g. http://127.0.0.1:2024")
    graph: NonEmptyStr = Field(
        description="give the graph's id in the server's langgraph.json (or an assistant id)"
    )
    headers: dict[NonEmptyStr, NonEmptyStr] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")) or value.endswith("://"):
            raise SpecValueError(
                f"expected an http:// or https:// URL, got {value!r}",
                hint="e.g. http://127.0.0.1:2024 (langgraph dev's default)",
            )
        return value

    @field_validator("headers")
    @classmethod
    def _variable_names(cls, value: dict[str, str]) -> dict[str, str]:
        for header, variable in value.items():
            if not variable.replace("_", "").isalnum() or variable[0].isdigit():
                raise SpecValueError(
                    "expected the name of an environment variable, not a value",
                    hint=f"a header's value is a secret: put it in a variable and name it, "
                    f"e.g. {{{header}: LANGGRAPH_API_KEY}}",
                    at=(header,),
                )
        return value


class TargetSpec(SpecModel):
    """A system under test. ``name: pkg.mod:graph`` is short for ``name: {target: ...}``.

    ``input`` says how an example's inputs become the target's input: a mapping of
    ``{field}`` templates, or the import path of a function ``fn(inputs) -> dict``.
    ``output`` is the key or dotted path of the final answer in what the target returns.
    """

    internal_keys: ClassVar[frozenset[str]] = frozenset({"name"})

    name: SkipJsonSchema[str]  # its key under ``targets``
    target: str | None = Field(
        default=None, description=f"give an import path: {IMPORT_PATH_FORMS}"
    )
    # a graph served by LangGraph's Agent Server instead of one imported
    remote: RemoteSpec | None = None
    input_key: NonEmptyStr = "question"
    initial_state: dict[str, Any] = Field(default_factory=dict)
    input: dict[str, Any] | str | None = None
    output: str | None = None
    config: TargetConfig | None = None
    # agents that regain control by design (no ping-pong through them), beyond those found
    coordinators: list[NonEmptyStr] = Field(default_factory=list)
    # the state key that names the agent now at work, where one agent switches roles
    # (LangChain's handoffs by state: a tool sets current_step, middleware swaps the prompt)
    active_agent: ActiveAgentSpec | None = None
    # tools that load a skill: a list of tool names (the skill is the call's first
    # argument), or a mapping of tool name to the argument that names the skill
    skill_tools: dict[str, str | None] = Field(default_factory=dict)
    # environment variables the target reads that change its answers: part of the cache key
    cache_env: list[NonEmptyStr] = Field(default_factory=list)
    # calls made to fail from the outside (spec.faults), to measure recovery
    faults: list[FaultSpec] = Field(default_factory=list)

    @field_validator("target")
    @classmethod
    def _import_path(cls, value: str | None) -> str | None:
        if value is not None:
            split_import_path(value)
        return value

    @model_validator(mode="after")
    def _target_or_remote(self) -> TargetSpec:
        if self.target is None and self.remote is None:
            raise SpecValueError(
                "missing required key 'target'",
                hint=f"give an import path: {IMPORT_PATH_FORMS}; or remote: {{url: ..., "
                "graph: ...} for a graph served by LangGraph's Agent Server",
            )
        if self.target is not None and self.remote is not None:
            raise SpecValueError(
                "'target' and 'remote' both given",
                hint="a target is either imported (target:) or served (remote:); keep one",
                at=("remote",),
                about_key=True,
            )
        if self.remote is not None and self.faults:
            raise SpecValueError(
                "faults cannot be injected into a served graph",
                hint="its calls run on the server; import the graph with target: to inject faults",
                at=("faults",),
                about_key=True,
            )
        return self

    @property
    def described(self) -> str:
        """What the target is: its import path, or the served graph's URL and id."""
        if self.remote is not None:
            return f"{self.remote.url.rstrip('/')}#{self.remote.graph}"
        assert self.target is not None
        return self.target

    @field_validator("input", mode="before", json_schema_input_type=dict[str, Any] | str | None)
    @classmethod
    def _input_mapping_or_function(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str):
            split_import_path(value)
            return value
        if not isinstance(value, dict) or not value:
            raise SpecValueError(
                f"expected a mapping of graph keys to templates, or an import path, "
                f"got {describe(value)}",
                hint='e.g. {query: "{question}"} or prepare.py:to_state',
            )
        for key in value:
            if not isinstance(key, str):
                raise SpecValueError(f"expected a graph key (a string), got {describe(key)}")
        _check_templates(value, ())
        return value

    @field_validator(
        "active_agent", mode="before", json_schema_input_type=NonEmptyStr | ActiveAgentSpec | None
    )
    @classmethod
    def _state_key(cls, value: Any) -> Any:
        """``active_agent: current_step`` is ``{key: current_step}``."""
        if isinstance(value, str):
            return {"key": value}
        if value is not None and not isinstance(value, dict):
            raise SpecValueError(
                f"expected a state key or a mapping, got {describe(value)}",
                hint="e.g. active_agent: current_step, or {key: current_step, default: triage}",
            )
        return value

    @field_validator(
        "skill_tools",
        mode="before",
        json_schema_input_type=NonEmptyStr | list[NonEmptyStr] | dict[str, str | None] | None,
    )
    @classmethod
    def _skill_tool_names(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            for index, name in enumerate(value):
                if not isinstance(name, str) or not name.strip():
                    raise SpecValueError(
                        f"expected a tool name, got {describe(name)}",
                        hint="e.g. skill_tools: [load_skill]",
                        at=(index,),
                    )
            return dict.fromkeys(value)
        if not isinstance(value, dict):
            raise SpecValueError(
                f"expected a list of tool names or a mapping of tool name to argument, "
                f"got {describe(value)}",
                hint="e.g. skill_tools: [load_skill] or {load_skill: skill_name}",
            )
        for name, argument in value.items():
            if not isinstance(name, str) or not name.strip():
                raise SpecValueError(f"expected a tool name, got {describe(name)}")
            if argument is not None and (not isinstance(argument, str) or not argument.strip()):
                raise SpecValueError(
                    f"expected the name of the argument that names the skill, got "
                    f"{describe(argument)}",
                    hint=f"e.g. {{{name}: skill_name}}",
                    at=(name,),
                )
        return value

    @field_validator("output")
    @classmethod
    def _dotted_path(cls, value: str | None) -> str | None:
        if value is not None and not all(value.split(".")):
            raise SpecValueError(
                f"expected a key or a dotted path, got {value!r}", hint="e.g. answer or result.text"
            )
        return value

    @model_validator(mode="after")
    def _input_or_input_key(self) -> TargetSpec:
        if self.input is not None and "input_key" in self.model_fields_set:
            raise SpecValueError(
                "'input_key' and 'input' both given",
                hint="input: replaces input_key; name the field in it, e.g. "
                '{messages: "{question}"}',
                at=("input_key",),
                about_key=True,
            )
        return self


# An item of ``evaluators:`` as the YAML writes it; its options are the evaluator's own, which
# the registry knows (agenteval_cli.evaluators.options), so the spec's schema leaves the item
# to it (:data:`EVALUATOR_ITEM`).
EVALUATOR_ITEM = "EvaluatorItem"
EvaluatorItem = Annotated[
    Any,
    WithJsonSchema(
        {
            "title": EVALUATOR_ITEM,
            "anyOf": [
                {"type": "string", "minLength": 1},
                {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}},
                },
            ],
        }
    ),
]


class EvaluatorSpec(SpecModel):
    """An evaluator by registry name; a mapping adds options: ``{name: x, mode: superset}``."""

    name: NonEmptyStr
    options: dict[str, Any] = Field(default_factory=dict)


class Price(SpecModel):
    """USD per million tokens for one model."""

    input: PricePerMTok = Field(description="give the USD price per 1M input tokens")
    output: PricePerMTok = Field(description="give the USD price per 1M output tokens")
    # The parts providers bill apart, each named as genai-prices names its rate without
    # ``_mtok``; a part without a rate here is priced at the rate of the part holding it.
    cache_read: PricePerMTok | None = None  # cache hits (part of the input)
    cache_write: PricePerMTok | None = None  # cache writes (Anthropic's 5-minute ones)
    cache_write_1h: PricePerMTok | None = None  # Anthropic's 1-hour cache writes
    input_audio: PricePerMTok | None = None
    output_audio: PricePerMTok | None = None
    cache_audio_read: PricePerMTok | None = None
    input_image: PricePerMTok | None = None
    output_image: PricePerMTok | None = None
    cache_image_read: PricePerMTok | None = None
    output_reasoning: PricePerMTok | None = None  # the rare model billing it apart


Backoff = Literal["exponential", "constant"]
BACKOFFS: tuple[str, ...] = get_args(Backoff)


class RetrySpec(SpecModel):
    """``retries: {max: 5, backoff: exponential, on: [rate_limit, timeout, connection]}``."""

    max: NonNegativeInt = Field(default=2, description="extra attempts after the first")
    backoff: str = "exponential"
    on: list[str] = Field(default_factory=lambda: ["rate_limit", "connection"])
    initial_delay_s: NonNegativeFloat = 1.0
    max_delay_s: NonNegativeFloat = 60.0

    @classmethod
    def normalize(cls, data: Any) -> Any:
        # YAML 1.1 reads a bare ``on:`` key as the boolean true.
        if isinstance(data, dict) and True in data and "on" not in data:
            return {("on" if key is True else key): value for key, value in data.items()}
        return data

    @field_validator("backoff", mode="before", json_schema_input_type=Backoff)
    @classmethod
    def _known_backoff(cls, value: Any) -> Any:
        if isinstance(value, str) and value not in BACKOFFS:  # else the type's own error
            raise SpecValueError(
                f"unknown backoff {value!r}",
                hint=did_you_mean(value, BACKOFFS) or "use exponential or constant",
            )
        return value

    @field_validator("on", mode="before", json_schema_input_type=RetryKind | list[RetryKind])
    @classmethod
    def _known_kinds(cls, value: Any) -> Any:
        from agenteval_cli.core.retry import RETRY_KINDS

        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            raise SpecValueError(
                f"expected a list of error kinds, got {describe(value)}",
                hint="e.g. [rate_limit, timeout, connection]",
            )
        for index, kind in enumerate(items):
            if kind not in RETRY_KINDS:
                raise SpecValueError(
                    f"unknown error kind {kind!r}",
                    hint=did_you_mean(str(kind), RETRY_KINDS) or "use " + ", ".join(RETRY_KINDS),
                    at=(index,) if not isinstance(value, str) else (),
                )
        return items


class RateLimitSpec(SpecModel):
    """``rate_limit: {requests_per_minute: 60}``: target calls are spaced to stay under it."""

    requests_per_minute: PositiveFloat = Field(description="give the calls allowed per minute")


# What a simulated user replies when it is satisfied (agenteval_cli.targets.users).
DONE_MARKER = "###DONE###"


class StopSpec(SpecModel):
    """``stop:`` of a simulated user: what ends a conversation before ``max_turns``.

    A reply holding ``marker`` ends it (the user said it is done); with ``judge``, so does
    that evaluator scoring the last turn at ``threshold`` or above (the judge says resolved).
    """

    marker: NonEmptyStr = DONE_MARKER
    judge: NonEmptyStr | None = None
    threshold: NonNegativeFloat = 1.0  # a judge's scale: 0-1, or its choices (1-5)

    @model_validator(mode="after")
    def _threshold_needs_judge(self) -> StopSpec:
        if "threshold" in self.model_fields_set and self.judge is None:
            raise SpecValueError(
                "'threshold' needs 'judge'",
                hint="name the evaluator whose score ends the conversation, e.g. "
                "{judge: resolved, threshold: 1}",
                at=("threshold",),
                about_key=True,
            )
        return self


class SimulatedUserSpec(SpecModel):
    """``simulated_user:`` writes the turns of rows that have no ``inputs.turns``: a user
    function ``fn(transcript, *, inputs, turn)`` by import path, or an LLM (``model``, with
    ``base_url`` for an OpenAI-compatible server, and a ``system`` template of the row's
    inputs fields)."""

    function: str | None = None
    model: NonEmptyStr | None = None
    base_url: NonEmptyStr | None = None
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    system: NonEmptyStr | None = None
    max_turns: PositiveInt = 5
    stop: StopSpec = Field(default_factory=StopSpec)

    @field_validator("function")
    @classmethod
    def _import_path(cls, value: str | None) -> str | None:
        if value is not None:
            split_import_path(value)
        return value

    @field_validator("system")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        if value is not None:
            template_parts(value)
        return value

    @model_validator(mode="after")
    def _function_or_model(self) -> SimulatedUserSpec:
        if (self.function is None) == (self.model is None):
            raise SpecValueError(
                "give either 'function' or 'model'"
                if self.function is None
                else "both 'function' and 'model' given",
                hint="function: pkg.mod:fn for a user of your own, or model: "
                "openai:gpt-4.1-mini for an LLM user",
            )
        if self.function is not None:
            for key in ("base_url", "model_kwargs", "system"):
                if key in self.model_fields_set:
                    raise SpecValueError(
                        f"'{key}' is only for a model user",
                        hint="a function writes its own messages; remove it",
                        at=(key,),
                        about_key=True,
                    )
        return self


Executor = Literal["local", "ray"]  # where a run's calls are made


class RaySpec(SpecModel):
    """``ray: {address, workers, env}``: where ``executor: ray`` runs its calls."""

    # None: a local Ray instance with this machine's cores (or RAY_ADDRESS when set)
    address: str | None = None
    workers: Concurrency | None = None  # None: one per CPU of the cluster
    # names of environment variables (model providers' keys) given to the workers
    env: list[str] = Field(default_factory=list)


class Spec(SpecModel):
    """One experiment: every target runs every example of the dataset, scored by the evaluators.

    Built by :func:`load_spec`, which also sets ``source``, ``base_dir``, ``raw``
    and ``content_hash``. ``raw`` is the YAML data with ``${VAR}`` expanded, except
    variables with secret-looking names (``*_API_KEY``, ``*TOKEN``...), which stay
    as written, so ``raw`` can be stored in the experiment record.
    """

    experiment_prefix: str = Field(default="", description="defaults to the spec file's name")
    dataset: DatasetSpec = Field(
        description="add 'dataset: path/to/examples.jsonl', relative to the spec file"
    )
    targets: list[TargetSpec] = Field(
        description=f"add 'targets:' mapping a name to an import path, {IMPORT_PATH_FORMS}"
    )
    evaluators: list[EvaluatorSpec] = Field(default_factory=list)
    concurrency: Concurrency = 4
    repetitions: Repetitions = 1
    timeout_s: PositiveFloat = 60.0
    pricing: dict[str, Price] = Field(default_factory=dict)
    upload: bool = False  # also upload each experiment to LangSmith after the run
    cache: bool = False
    retries: RetrySpec = Field(default_factory=RetrySpec)
    rate_limit: RateLimitSpec | None = None
    # The evaluators' own pool: calls in flight across the run (None: sized by the run),
    # their retries (None: none) and their rate limit, apart from the targets'.
    evaluator_concurrency: Concurrency | None = None
    evaluator_retries: RetrySpec | None = None
    evaluator_rate_limit: RateLimitSpec | None = None
    # The longest one evaluator call (one attempt) may take before it is scored as failed.
    evaluator_timeout_s: PositiveFloat = 120.0  # scoring.EVALUATOR_TIMEOUT_S
    # The CI gate (agenteval_cli.gating): conditions on metrics, per target or for all, and
    # the largest drop against a baseline that does not fail the build.
    thresholds: dict[str, Any] = Field(default_factory=dict)
    baseline: Path | None = None
    max_regression: dict[str, NonNegativeFloat] = Field(default_factory=dict)
    # Pass a baseline check no result could fail (too few examples changed, or a metric one
    # side did not score) instead of failing the build on it; it is listed either way.
    allow_untested: bool = False
    # The least Cohen's kappa against people's labels (outputs.human) a score key must reach
    # before the gate uses it (agenteval judge calibrate); below it a gated run exits 3.
    min_kappa: dict[str, Fraction] = Field(default_factory=dict)
    # The share of target calls (per target) that may end in error before the run fails;
    # 0, as a test runner fails on any error.
    max_error_rate: Fraction = 0.0
    # The share of requests (per target) that may stop at interrupt() waiting for input
    # (status interrupted) before the run fails; 0: a graph that stops short fails the run.
    max_interrupt_rate: Fraction = 0.0
    # A name in the dataset (expected_agents, required_tools, expected_skills, ...) that no
    # agent, tool or skill of a target has refuses the run before any call (exit 2), rather
    # than being warned about (agenteval run --strict).
    strict_names: bool = False
    # Where the calls run: this process, or Ray workers (agenteval_cli.execution.ray_executor).
    executor: Executor = "local"
    ray: RaySpec = Field(default_factory=RaySpec)
    # Who writes the turns of rows without inputs.turns (None: such rows are single-turn).
    simulated_user: SimulatedUserSpec | None = None

    _source: Path = PrivateAttr(default=Path("spec.yaml"))
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    _raw: dict[str, Any] = PrivateAttr(default_factory=dict)
    _content_hash: str = PrivateAttr(default="")
    _document: YamlDocument = PrivateAttr(default_factory=lambda: YamlDocument(None))

    @field_validator("dataset", mode="before", json_schema_input_type=str | DatasetSpec)
    @classmethod
    def _dataset_file_or_mapping(cls, value: Any) -> Any:
        """``dataset: file.jsonl`` is short for ``{path: file.jsonl}`` (DatasetSpec.normalize)."""
        return value

    @field_validator(
        "targets",
        mode="before",
        json_schema_input_type=Annotated[dict[str, NonEmptyStr | TargetSpec], Field(min_length=1)],
    )
    @classmethod
    def _targets_in_file_order(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise SpecValueError(
                f"expected a mapping of target names to import paths, got {describe(value)}",
                hint="e.g. 'supervisor: mypkg.graphs:supervisor'",
            )
        if not value:
            raise SpecValueError(
                "no targets", hint="map a name to an import path, e.g. 'supervisor: mypkg:graph'"
            )
        targets = []
        for name, entry in value.items():
            if isinstance(entry, str):
                entry = {"target": entry}
            elif isinstance(entry, dict):
                if "name" in entry:
                    raise SpecValueError(
                        "unknown key 'name'",
                        hint="a target's name is its key under 'targets'",
                        at=(name, "name"),
                        about_key=True,
                    )
            else:
                raise SpecValueError(
                    f"expected an import path or a mapping with 'target', got {describe(entry)}",
                    at=(name,),
                )
            targets.append({**entry, "name": str(name)})
        return targets

    @field_validator("evaluators", mode="before", json_schema_input_type=list[EvaluatorItem] | None)
    @classmethod
    def _evaluators_with_options(cls, value: Any) -> Any:
        if value is None:
            return []
        if not isinstance(value, list):
            raise SpecValueError(
                f"expected a list of evaluators, got {describe(value)}",
                hint="e.g. [routing_accuracy, token_cost]",
            )
        return [_evaluator_entry(item, index) for index, item in enumerate(value)]

    @model_validator(mode="after")
    def _gate(self, info: ValidationInfo) -> Spec:
        _check_gate_form(self.thresholds, [t.name for t in self.targets])
        if self.baseline is not None:
            base_dir = (info.context or {}).get("base_dir") or Path.cwd()
            self.baseline = _resolve(base_dir, self.baseline)
        return self

    @model_validator(mode="after")
    def _judge_is_an_evaluator(self) -> Spec:
        user = self.simulated_user
        judge = user.stop.judge if user else None
        names = [e.name for e in self.evaluators]
        if judge is not None and judge not in names:
            raise SpecValueError(
                f"{judge!r} is not an evaluator of this spec",
                hint=did_you_mean(judge, names) or "add it to evaluators:, or remove stop.judge",
                at=("simulated_user", "stop", "judge"),
            )
        return self

    @model_validator(mode="after")
    def _default_prefix(self, info: ValidationInfo) -> Spec:
        if not self.experiment_prefix:
            source = (info.context or {}).get("source")
            self.experiment_prefix = Path(source).stem if source else "experiment"
        return self

    @property
    def source(self) -> Path:
        """The spec file, as given (relative paths stay relative, for messages)."""
        return self._source

    @property
    def base_dir(self) -> Path:
        """The spec file's folder, absolute: relative paths in the spec start here."""
        return self._base_dir

    def relocate(self, base_dir: Path) -> None:
        """The spec's folder was copied to ``base_dir`` (a Ray worker's working directory):
        the target and evaluator paths written relative to it are found there from now on."""
        self._base_dir = base_dir

    @property
    def raw(self) -> dict[str, Any]:
        return self._raw

    @property
    def content_hash(self) -> str:
        """SHA-256 of the spec file's bytes."""
        return self._content_hash

    def line_of(self, *keys: Any) -> int | None:
        """1-based line of the value at ``keys`` (or of its nearest parent that is in the file).

        ``spec.line_of("targets", "swarm")``, ``spec.line_of("evaluators", 2)``.
        """
        return self._document.line_of(*keys)

    def error_at(
        self, at: KeyPath, message: str, *, hint: str | None = None, about_key: bool = False
    ) -> UserError:
        """A failure found after loading (by a later check), at the line of ``at``, worded
        as the spec's own validation words it."""
        return error_at(self._document, self._source, at, message, hint=hint, about_key=about_key)


def _check_gate_form(thresholds: dict[str, Any], targets: list[str]) -> None:
    """A SpecValueError (with the key path) for a mapping under a name that is not a target
    or a condition that does not parse. Whether each metric is produced by an evaluator of
    the spec is checked once the evaluators are known
    (:func:`agenteval_cli.gating.thresholds.check_spec_metrics`)."""
    from agenteval_cli.spec.conditions import parse_condition_text

    for key, value in thresholds.items():
        entries: list[tuple[Any, tuple[str, ...]]]
        if isinstance(value, dict):
            if key not in targets:
                raise SpecValueError(
                    f"{key!r} is not a target, so it cannot hold thresholds",
                    hint=did_you_mean(key, targets) or f"targets: {', '.join(targets)}",
                    at=("thresholds", key),
                    about_key=True,
                )
            entries = [(v, ("thresholds", key, k)) for k, v in value.items()]
        else:
            entries = [(value, ("thresholds", key))]
        for condition, at in entries:
            try:
                parse_condition_text(condition)
            except ValueError as exc:
                raise SpecValueError(str(exc), at=at) from None


def _evaluator_entry(item: Any, index: int) -> Any:
    """``name`` or ``{name: x, **options}`` (the YAML forms) -> ``{name: x, options: {...}}``."""
    if isinstance(item, str):
        return {"name": item}
    if not isinstance(item, dict):
        raise SpecValueError(
            f"expected an evaluator name or mapping, got {describe(item)}", at=(index,)
        )
    if "name" not in item:
        raise SpecValueError(
            "evaluator mapping has no 'name'",
            hint="write {name: trajectory_match, mode: superset}",
            at=(index,),
        )
    return {"name": item["name"], "options": {k: v for k, v in item.items() if k != "name"}}


def resolve_path(spec: Spec, value: str | Path) -> Path:
    """An absolute path for ``value``, read relative to the spec file's folder."""
    return _resolve(spec.base_dir, value)


def _resolve(base_dir: Path, value: str | Path) -> Path:
    path = Path(value).expanduser()
    return (path if path.is_absolute() else base_dir / path).resolve()


MAX_SPEC_BYTES = 1024 * 1024


def load_spec(path: str | Path) -> Spec:
    """Read and validate a spec file; any problem is one UserError naming file:line."""
    source = Path(path)
    try:
        # A FIFO would block the read, /dev/zero never end it: only a regular file is read,
        # and only one of a spec's size (a sparse file can claim terabytes).
        status = source.stat()
        if not stat.S_ISREG(status.st_mode):
            raise UserError(
                "spec path is not a regular file", file=source, hint="point at a YAML file"
            )
        if status.st_size > MAX_SPEC_BYTES:
            raise UserError(
                f"spec file is larger than {MAX_SPEC_BYTES // 1024**2} MiB",
                file=source,
                hint="a spec names its dataset and targets; keep the data in their files",
            )
        content = source.read_bytes()
    except FileNotFoundError:
        raise UserError(f"spec file not found: {source}", hint="check the path") from None
    except OSError as exc:
        raise UserError(f"cannot read spec file: {exc.strerror}", file=source) from None
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = content.count(b"\n", 0, exc.start) + 1
        raise UserError(
            "not valid UTF-8", file=source, line=line, hint="save the file as UTF-8"
        ) from None
    document = load_yaml(text, file=source)
    if document.data is None:
        raise UserError(
            "spec file is empty", file=source, hint="add at least 'dataset:' and 'targets:'"
        )
    if not isinstance(document.data, dict):
        raise UserError(
            f"the top level must be a mapping of keys, got {describe(document.data)}",
            file=source,
            line=document.line_of(),
            hint="start with keys such as 'dataset:' and 'targets:'",
        )
    data, recorded = expand_env(document, file=source)
    # a lone surrogate (an escape, or a variable's undecodable bytes): the store could not
    # save the spec, nor a name taken from it
    surrogate = lone_surrogate_at(data)
    if surrogate is not None:
        at, code = surrogate
        where = format_key_path(at).encode("utf-8", "backslashreplace").decode()
        raise UserError(
            f"{where or 'the spec'} holds a lone surrogate ({code}), which UTF-8 cannot store",
            file=source,
            line=document.line_of(*at),
            hint="write the character itself, or a complete surrogate pair",
        )
    base_dir = source.parent.resolve()
    try:
        with without_pydantic_plugins():  # the first validation builds the validators
            spec = Spec.model_validate(data, context={"base_dir": base_dir, "source": source})
    except ValidationError as exc:
        raise user_error(exc, document, source) from None
    spec._source = source
    spec._base_dir = base_dir
    spec._raw = recorded
    spec._content_hash = hashlib.sha256(content).hexdigest()
    spec._document = document
    return spec
