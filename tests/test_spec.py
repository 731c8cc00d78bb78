import hashlib
from pathlib import Path

import pytest

from agenteval_cli.core.errors import UserError
from agenteval_cli.spec.model import (
    EvaluatorSpec,
    Price,
    SpecValueError,
    TargetConfig,
    TargetSpec,
    load_spec,
    resolve_path,
    split_import_path,
    template_parts,
)

SPECS = Path(__file__).parent / "data" / "specs"
DATASETS = Path(__file__).parent / "data" / "datasets"

# The smallest valid spec; error cases add to it, so line 4 is the first added line.
BASE = """\
dataset: data.jsonl
targets:
  supervisor: agenteval_cli.demo.supervisor:graph
"""


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A folder with a dataset, as the current directory, so messages read 'spec.yaml:N'."""
    (tmp_path / "data.jsonl").write_text('{"inputs": {"question": "hi"}}\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


def load_text(text: str):
    Path("spec.yaml").write_text(text, encoding="utf-8")
    return load_spec("spec.yaml")


def error_of(text: str) -> str:
    with pytest.raises(UserError) as caught:
        load_text(text)
    return str(caught.value)


# --- a valid spec ----------------------------------------------------------------------


def test_full_spec_round_trip():
    spec = load_spec(SPECS / "routing.yaml")
    assert spec.source == SPECS / "routing.yaml"
    assert spec.base_dir == SPECS.resolve()
    assert spec.experiment_prefix == "routing"
    assert spec.dataset.path == (DATASETS / "routing.jsonl").resolve()
    assert spec.dataset.name == "multi-agent-routing-evals"
    assert spec.targets == [
        TargetSpec(name="supervisor", target="agenteval_cli.demo.supervisor:graph"),
        TargetSpec(
            name="swarm",
            target="agenteval_cli.demo.swarm:graph",
            input_key="question",
            initial_state={"resolution_notes": []},
        ),
        TargetSpec(name="local", target="graphs/local_agent.py:build.graph"),
    ]
    assert spec.evaluators == [
        EvaluatorSpec(name="routing_accuracy"),
        EvaluatorSpec(name="resolution_coverage"),
        EvaluatorSpec(name="trajectory_match", options={"mode": "superset", "tool_args": "ignore"}),
    ]
    assert (spec.concurrency, spec.repetitions, spec.timeout_s) == (2, 3, 12.5)
    assert spec.pricing == {
        "scripted-small": Price(input=0.15, output=0.60),
        "scripted-large": Price(input=2.5, output=10.0),
    }
    assert spec.content_hash == hashlib.sha256((SPECS / "routing.yaml").read_bytes()).hexdigest()
    assert spec.raw["targets"]["supervisor"] == "agenteval_cli.demo.supervisor:graph"
    assert spec.raw["evaluators"][2] == {
        "name": "trajectory_match",
        "mode": "superset",
        "tool_args": "ignore",
    }


def test_defaults_and_short_dataset_form():
    spec = load_spec(SPECS / "minimal.yaml")
    assert spec.experiment_prefix == "minimal"  # the file's name
    assert spec.dataset.path == (DATASETS / "routing.csv").resolve()
    assert spec.dataset.name is None
    assert spec.targets[0].input_key == "question"
    assert spec.targets[0].initial_state == {}
    assert spec.evaluators == []
    assert (spec.concurrency, spec.repetitions, spec.timeout_s) == (4, 1, 60.0)
    assert spec.pricing == {}


def test_line_of_points_at_keys_and_list_items():
    spec = load_spec(SPECS / "routing.yaml")
    assert spec.line_of("targets") == 6
    assert spec.line_of("targets", "supervisor") == 7
    assert spec.line_of("targets", "swarm") == 8
    assert spec.line_of("targets", "swarm", "initial_state") == 11
    assert spec.line_of("evaluators", 2) == 16
    assert spec.line_of("dataset", "path") == 4


def test_line_of_falls_back_to_the_nearest_parent():
    spec = load_spec(SPECS / "minimal.yaml")
    assert spec.line_of("dataset", "path") == 1  # short form: no 'path' key in the file
    assert spec.line_of("concurrency") == 1  # not in the file: the top-level mapping


def test_resolve_path_is_relative_to_the_spec_file():
    spec = load_spec(SPECS / "routing.yaml")
    assert resolve_path(spec, "graphs/local_agent.py") == SPECS.resolve() / "graphs/local_agent.py"
    assert resolve_path(spec, "/abs/x.py") == Path("/abs/x.py")


def test_numbers_may_come_as_strings(workdir):
    spec = load_text(BASE + "concurrency: '8'\ntimeout_s: '2.5'\nrepetitions: 2.0\n")
    assert (spec.concurrency, spec.timeout_s, spec.repetitions) == (8, 2.5, 2)


def test_null_evaluators_means_none(workdir):
    assert load_text(BASE + "evaluators:\n").evaluators == []


def test_dataset_by_name_only(workdir):
    spec = load_text("dataset: {name: multi-agent-routing-evals}\n" + BASE.split("\n", 1)[1])
    assert (spec.dataset.path, spec.dataset.name) == (None, "multi-agent-routing-evals")


def test_utf8_bom_is_ignored(workdir):
    Path("spec.yaml").write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    assert load_spec("spec.yaml").targets[0].name == "supervisor"


# --- environment variables -------------------------------------------------------------


def test_env_vars_are_expanded(workdir, monkeypatch):
    monkeypatch.setenv("AGENTEVAL_PREFIX", "nightly")
    monkeypatch.setenv("AGENTEVAL_CONCURRENCY", "16")
    monkeypatch.delenv("AGENTEVAL_UNSET", raising=False)
    spec = load_text(
        BASE + "experiment_prefix: ${AGENTEVAL_PREFIX}-${AGENTEVAL_UNSET:-v1}\n"
        "concurrency: ${AGENTEVAL_CONCURRENCY}\n"
    )
    assert spec.experiment_prefix == "nightly-v1"
    assert spec.concurrency == 16


def test_default_applies_to_an_empty_variable(workdir, monkeypatch):
    monkeypatch.setenv("AGENTEVAL_EMPTY", "")
    assert load_text(
        BASE + "experiment_prefix: ${AGENTEVAL_EMPTY:-fallback}\n"
    ).experiment_prefix == ("fallback")


def test_double_dollar_is_a_literal(workdir):
    assert load_text(BASE + "experiment_prefix: $${HOME}\n").experiment_prefix == "${HOME}"


def test_secret_variables_stay_unexpanded_in_raw(workdir, monkeypatch):
    monkeypatch.setenv("AGENTEVAL_JUDGE_API_KEY", "sk-secret")
    monkeypatch.setenv("AGENTEVAL_JUDGE_MODEL", "small")
    spec = load_text(
        BASE + "evaluators:\n"
        "  - name: judge\n"
        "    api_key: ${AGENTEVAL_JUDGE_API_KEY}\n"
        "    model: ${AGENTEVAL_JUDGE_MODEL}\n"
    )
    assert spec.evaluators[0].options == {"api_key": "sk-secret", "model": "small"}
    assert spec.raw["evaluators"][0] == {
        "name": "judge",
        "api_key": "${AGENTEVAL_JUDGE_API_KEY}",
        "model": "small",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "experiment_prefix: ${AGENTEVAL_UNSET}\n",
            "spec.yaml:4: experiment_prefix: environment variable 'AGENTEVAL_UNSET' is not set "
            "(set it, or give a default: ${AGENTEVAL_UNSET:-value})",
            id="unset",
        ),
        pytest.param(
            "experiment_prefix: ${1X}\n",
            "spec.yaml:4: experiment_prefix: malformed variable reference '${1X}' "
            "(write ${NAME} or ${NAME:-default})",
            id="malformed",
        ),
        pytest.param(
            "experiment_prefix: a-${X\n",
            "spec.yaml:4: experiment_prefix: unterminated '${' "
            "(close it with '}', or write '$${' for '${')",
            id="unterminated",
        ),
    ],
)
def test_a_bad_variable_reference_names_the_key(workdir, monkeypatch, text, message):
    monkeypatch.delenv("AGENTEVAL_UNSET", raising=False)
    assert error_of(BASE + text) == message


# --- errors: the file itself -----------------------------------------------------------


def test_missing_spec_file(workdir):
    with pytest.raises(UserError) as caught:
        load_spec("nope.yaml")
    assert str(caught.value) == "spec file not found: nope.yaml (check the path)"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "# only a comment\n",
            "spec.yaml: spec file is empty (add at least 'dataset:' and 'targets:')",
            id="empty",
        ),
        pytest.param(
            "- dataset\n- targets\n",
            "spec.yaml:1: the top level must be a mapping of keys, got a list "
            "(start with keys such as 'dataset:' and 'targets:')",
            id="top-level-a-list",
        ),
        pytest.param(
            BASE + "concurrency: 4: 5\n",
            "spec.yaml:4: invalid YAML at column 15: mapping values are not allowed here "
            "(check the indentation, colons and quotes there)",
            id="yaml-syntax-names-line-and-column",
        ),
        pytest.param(
            BASE + "pricing:\n\tm: {input: 1, output: 2}\n",
            "spec.yaml:5: invalid YAML at column 1: found character '\\t' that cannot start any "
            "token (indent with spaces, not tabs)",
            id="tab-indentation",
        ),
        pytest.param(
            BASE + "concurrency: 2\nconcurrency: 3\n",
            "spec.yaml:5: duplicate key 'concurrency' (first on line 4) (keep only one of them)",
            id="duplicate-key",
        ),
        pytest.param(
            BASE + "experiment_prefix: !!python/object:os.system x\n",
            "spec.yaml:4: invalid YAML at column 20: could not determine a constructor for the tag "
            "'tag:yaml.org,2002:python/object:os.system' "
            "(use plain mappings, lists, strings and numbers)",
            id="python-tag",
        ),
        pytest.param(
            BASE + "evaluators: &loop [*loop]\n",
            "spec.yaml:4: invalid YAML: an alias refers to a node that contains it "
            "(an anchor cannot be used inside itself)",
            id="recursive-alias",
        ),
    ],
)
def test_a_broken_file_is_one_line_naming_where(workdir, text, message):
    assert error_of(text) == message


# --- errors: keys and values -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            BASE + "concurency: 4\n",
            "spec.yaml:4: unknown key 'concurency' (did you mean 'concurrency'?)",
            id="unknown-key-suggests-the-right-one",
        ),
        pytest.param(
            BASE + "  swarm:\n    target: pkg.swarm:graph\n    input_kye: q\n",
            "spec.yaml:6: unknown key 'input_kye' in targets.swarm (did you mean 'input_key'?)",
            id="unknown-nested-key",
        ),
        pytest.param(
            BASE + "  swarm:\n    target: pkg.swarm:graph\n    initial_state: [1]\n",
            "spec.yaml:6: targets.swarm.initial_state: expected a mapping, got a list",
            id="wrong-value-deep-in-a-target",
        ),
        pytest.param(
            BASE + "evaluators:\n  - routing_accuracy\n  - {mode: superset}\n",
            "spec.yaml:6: evaluators[1]: evaluator mapping has no 'name' "
            "(write {name: trajectory_match, mode: superset})",
            id="evaluator-mapping-without-name",
        ),
        pytest.param(
            "dataset: data.jsonl\n",
            "spec.yaml:1: missing required key 'targets' (add 'targets:' mapping a name to an "
            "import path, 'package.module:attr' or 'path/to/file.py:attr')",
            id="missing-targets",
        ),
        pytest.param(
            "# targets only\ntargets:\n  a: pkg.mod:graph\n",
            "spec.yaml:2: missing required key 'dataset' "
            "(add 'dataset: path/to/examples.jsonl', relative to the spec file)",
            id="missing-dataset",
        ),
        pytest.param(
            "dataset: data.jsonl\ntargets: {}\n",
            "spec.yaml:2: targets: no targets "
            "(map a name to an import path, e.g. 'supervisor: mypkg:graph')",
            id="no-targets",
        ),
        pytest.param(
            "dataset: data.jsonl\ntargets: [pkg.mod:graph]\n",
            "spec.yaml:2: targets: expected a mapping of target names to import paths, got a list "
            "(e.g. 'supervisor: mypkg.graphs:supervisor')",
            id="targets-as-a-list",
        ),
        pytest.param(
            BASE + "  swarm:\n    input_key: q\n",
            "spec.yaml:4: targets.swarm: missing required key 'target' "
            "(give an import path: 'package.module:attr' or 'path/to/file.py:attr'; or "
            "remote: {url: ..., graph: ...} for a graph served by LangGraph's Agent Server)",
            id="long-target-form-without-target",
        ),
        pytest.param(
            BASE + "  swarm: {target: pkg.swarm:graph, name: x}\n",
            "spec.yaml:4: unknown key 'name' in targets.swarm "
            "(a target's name is its key under 'targets')",
            id="target-name-key",
        ),
    ],
)
def test_a_wrong_key_or_structure_names_the_line(workdir, text, message):
    assert error_of(text) == message


def test_unknown_key_without_a_close_match_lists_the_keys(workdir):
    message = error_of(BASE + "zzz: 1\n")
    assert message.startswith(
        "spec.yaml:4: unknown key 'zzz' (valid keys: experiment_prefix, dataset, targets, "
        "evaluators, concurrency, repetitions, timeout_s, pricing"
    )
    from agenteval_cli.spec.model import Spec

    assert message.endswith(f"{', '.join(Spec.model_fields)})")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("concurrency: four", "concurrency: expected an integer from 1 to 1024, got 'four'"),
        ("concurrency: 0", "concurrency: expected an integer from 1 to 1024, got 0"),
        ("concurrency: 1000000", "concurrency: expected an integer from 1 to 1024, got 1000000"),
        (
            "concurrency: 1.0e+9",
            "concurrency: expected an integer from 1 to 1024, got 1000000000.0",
        ),
        ("concurrency: '١٢'", "concurrency: expected an integer from 1 to 1024, got '١٢'"),
        ("repetitions: 1.5", "repetitions: expected an integer from 1 to 1000, got 1.5"),
        ("repetitions: true", "repetitions: expected an integer from 1 to 1000, got true"),
        ("repetitions: 1001", "repetitions: expected an integer from 1 to 1000, got 1001"),
        ("timeout_s: 0", "timeout_s: expected a number > 0, got 0"),
        ("timeout_s: [1]", "timeout_s: expected a number > 0, got a list"),
        ("timeout_s: .nan", "timeout_s: expected a number > 0, got nan"),
        ("timeout_s: 'nan'", "timeout_s: expected a number > 0, got 'nan'"),
        ("timeout_s: '1e999'", "timeout_s: expected a number > 0, got '1e999'"),
        ("timeout_s: '٣'", "timeout_s: expected a number > 0, got '٣'"),
        (
            "retries: {initial_delay_s: .inf}",
            "retries.initial_delay_s: expected a number >= 0, got inf",
        ),
        (
            "retries: {max_delay_s: '-.inf'}",
            "retries.max_delay_s: expected a number >= 0, got '-.inf'",
        ),
        ("retries: {max: '٢'}", "retries.max: expected an integer >= 0, got '٢'"),
        ("max_error_rate: 1.5", "max_error_rate: expected a number from 0 to 1, got 1.5"),
        ("max_error_rate: .nan", "max_error_rate: expected a number from 0 to 1, got nan"),
        ("experiment_prefix: 3", "experiment_prefix: expected a string, got 3"),
        (
            "evaluators: routing_accuracy",
            "evaluators: expected a list of evaluators, got "
            "'routing_accuracy' (e.g. [routing_accuracy, token_cost])",
        ),
        ("evaluators: [1]", "evaluators[0]: expected an evaluator name or mapping, got 1"),
        (
            "pricing: {m: {input: x, output: 1}}",
            "pricing.m.input: expected a number from 0 to 10000, got 'x' "
            "(USD per 1M tokens; no provider charges above 10000)",
        ),
        ("pricing: {m: 3}", "pricing.m: expected a mapping, got 3"),
        (
            "pricing: {m: {input: 1.0e+308, output: 1}}",
            "pricing.m.input: expected a number from 0 to 10000, got 1e+308 "
            "(USD per 1M tokens; no provider charges above 10000)",
        ),
        (
            "pricing: {m: {input: 1, output: 2, cache_read: 10001}}",
            "pricing.m.cache_read: expected a number from 0 to 10000, got 10001 "
            "(USD per 1M tokens; no provider charges above 10000)",
        ),
        (
            "pricing: {m: {input: 1}}",
            "pricing.m: missing required key 'output' (give the USD price per 1M output tokens)",
        ),
    ],
)
def test_wrong_value_names_the_key_and_what_is_expected(workdir, line, message):
    assert error_of(BASE + line + "\n") == f"spec.yaml:4: {message}"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("pkg.swarm", "malformed import path 'pkg.swarm': no ':attr'"),
        ("'pkg swarm:graph'", "malformed import path 'pkg swarm:graph'"),
        ("'pkg.swarm:'", "malformed import path 'pkg.swarm:'"),
        ("'.py:graph'", "malformed import path '.py:graph'"),
    ],
)
def test_malformed_import_path(workdir, target, message):
    assert error_of(BASE + f"  swarm: {target}\n") == (
        f"spec.yaml:4: targets.swarm: {message} "
        "(write 'package.module:attr' or 'path/to/file.py:attr')"
    )


def test_target_input_output_and_config(workdir):
    spec = load_text(
        BASE
        + "  qa:\n"
        + "    target: pkg.qa:graph\n"
        + "    input: {query: 'Q: {question}', user: '{customer_id}', raw: '{{x}}'}\n"
        + "    output: result.text\n"
        + "    config:\n"
        + "      recursion_limit: '50'\n"
        + "      configurable: {user_id: u1}\n"
        + "      tags: [eval]\n"
        + "  prep: {target: pkg.qa:graph, input: prepare.py:to_state}\n"
    )
    qa, prep = spec.targets[1], spec.targets[2]
    assert qa.input == {"query": "Q: {question}", "user": "{customer_id}", "raw": "{{x}}"}
    assert qa.output == "result.text"
    assert qa.config == TargetConfig(
        recursion_limit=50, configurable={"user_id": "u1"}, tags=["eval"]
    )
    assert qa.config.runnable_config() == {
        "configurable": {"user_id": "u1"},
        "recursion_limit": 50,
        "tags": ["eval"],
    }
    assert (prep.input, prep.output, prep.config) == ("prepare.py:to_state", None, None)
    assert spec.targets[0].input is None


def test_template_parts():
    assert template_parts("Q: {question}!") == [("Q: ", "question"), ("!", None)]
    assert template_parts("{a}{b}") == [("", "a"), ("", "b")]
    assert template_parts("{{x}}") == [("{", None), ("x}", None)]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "config:\n      configurable:\n        thread_id: t1",
            "spec.yaml:8: targets.qa.config.configurable.thread_id: 'thread_id' is the same "
            "for every example, so they would share one thread (fill it from the row, e.g. "
            'thread_id: "{ticket_id}", or leave it out: agenteval then gives every call a '
            "thread of its own)",
        ),
        (
            "config: {recursion_limt: 5}",
            "spec.yaml:6: unknown key 'recursion_limt' in targets.qa.config "
            "(did you mean 'recursion_limit'?)",
        ),
        (
            "config: {recursion_limit: 0}",
            "spec.yaml:6: targets.qa.config.recursion_limit: expected an integer >= 1, got 0",
        ),
        (
            "config: {max_concurrency: many}",
            "spec.yaml:6: targets.qa.config.max_concurrency: expected an integer >= 1, got 'many'",
        ),
        ("config: {tags: [1]}", "spec.yaml:6: targets.qa.config.tags[0]: expected a string, got 1"),
        (
            "config: {metadata: [a]}",
            "spec.yaml:6: targets.qa.config.metadata: expected a mapping, got a list",
        ),
        (
            "input_key: q\n    input: {query: '{q}'}",
            "spec.yaml:6: 'input_key' and 'input' both given in targets.qa (input: replaces "
            'input_key; name the field in it, e.g. {messages: "{question}"})',
        ),
        (
            "input:\n      query: 'Q: {question'",
            "spec.yaml:7: targets.qa.input.query: expected '}' before end of string in "
            "'Q: {question' (write {{ and }} for literal braces)",
        ),
        (
            "input:\n      query: {deep: [ok, '{n:3}']}",
            "spec.yaml:7: targets.qa.input.query.deep[1]: placeholder '{n:3}' is not a plain "
            "{field} name (name an inputs field, e.g. '{question}'; write {{ and }} for "
            "literal braces)",
        ),
        (
            "input: [question]",
            "spec.yaml:6: targets.qa.input: expected a mapping of graph keys to templates, or "
            'an import path, got a list (e.g. {query: "{question}"} or prepare.py:to_state)',
        ),
        (
            "input: prepare",
            "spec.yaml:6: targets.qa.input: malformed import path 'prepare': no ':attr' "
            "(write 'package.module:attr' or 'path/to/file.py:attr')",
        ),
        (
            "output: result..text",
            "spec.yaml:6: targets.qa.output: expected a key or a dotted path, got "
            "'result..text' (e.g. answer or result.text)",
        ),
    ],
)
def test_wrong_target_options(workdir, entry, message):
    assert error_of(BASE + f"  qa:\n    target: pkg.qa:graph\n    {entry}\n") == message


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "active_agent: ''",
            "spec.yaml:6: targets.qa.active_agent: expected a non-empty string, got ''",
        ),
        (
            "active_agent: [current_step]",
            "spec.yaml:6: targets.qa.active_agent: expected a state key or a mapping, got a "
            "list (e.g. active_agent: current_step, or {key: current_step, default: triage})",
        ),
        (
            "active_agent: {key: current_step, defualt: triage}",
            "spec.yaml:6: unknown key 'defualt' in targets.qa.active_agent "
            "(did you mean 'default'?)",
        ),
        (
            "active_agent: {default: triage}",
            "spec.yaml:6: targets.qa.active_agent: missing required key 'key'",
        ),
        (
            "active_agent: state.current_step",
            "spec.yaml:6: targets.qa.active_agent: expected a state key, got "
            "'state.current_step' (name the key of the graph's state that holds the agent, "
            "e.g. current_step)",
        ),
        (
            "skill_tools: [load_skill, 3]",
            "spec.yaml:6: targets.qa.skill_tools[1]: expected a tool name, got 3 "
            "(e.g. skill_tools: [load_skill])",
        ),
        (
            "skill_tools: {load_skill: [skill_name]}",
            "spec.yaml:6: targets.qa.skill_tools.load_skill: expected the name of the argument "
            "that names the skill, got a list (e.g. {load_skill: skill_name})",
        ),
        (
            "skill_tools: 4",
            "spec.yaml:6: targets.qa.skill_tools: expected a list of tool names or a mapping of "
            "tool name to argument, got 4 (e.g. skill_tools: [load_skill] or "
            "{load_skill: skill_name})",
        ),
    ],
)
def test_wrong_pattern_options(workdir, entry, message):
    assert error_of(BASE + f"  qa:\n    target: pkg.qa:graph\n    {entry}\n") == message


def test_pattern_options(workdir):
    spec = load_text(
        BASE + "  qa:\n    target: pkg.qa:graph\n    active_agent: current_step\n"
        "    skill_tools: [load_skill]\n"
        "  qb:\n    target: pkg.qb:graph\n    skill_tools: {load_skill: skill_name}\n"
        "    active_agent: {key: current_step, default: triage}\n"
    )
    qa, qb = spec.targets[-2:]
    assert qa.active_agent is not None and qb.active_agent is not None
    assert (qa.active_agent.key, qa.active_agent.default) == ("current_step", None)
    assert qa.skill_tools == {"load_skill": None}
    assert (qb.active_agent.key, qb.active_agent.default) == ("current_step", "triage")
    assert qb.skill_tools == {"load_skill": "skill_name"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            BASE + "  swarm:\n    target: pkg.swarm\n",
            "spec.yaml:5: targets.swarm.target: malformed import path 'pkg.swarm': no ':attr' "
            "(write 'package.module:attr' or 'path/to/file.py:attr')",
            id="malformed-import-path-in-long-form",
        ),
        pytest.param(
            "dataset: rows.txt\ntargets:\n  a: pkg.mod:graph\n",
            "spec.yaml:1: dataset: unknown file format '.txt' "
            "(use .jsonl, .json, .yaml, .yml, .csv)",
            id="unknown-dataset-format",
        ),
        pytest.param(
            "dataset: rows.josnl\ntargets:\n  a: pkg.mod:graph\n",
            "spec.yaml:1: dataset: unknown file format '.josnl' (did you mean '.jsonl'?)",
            id="dataset-format-typo",
        ),
        pytest.param(
            "dataset: {}\ntargets:\n  a: pkg.mod:graph\n",
            "spec.yaml:1: dataset: no 'path' given (give a file path, or a LangSmith 'name')",
            id="dataset-without-path-or-name",
        ),
    ],
)
def test_a_wrong_import_path_or_dataset_entry_names_the_line(workdir, text, message):
    assert error_of(text) == message


def test_missing_dataset_file_names_the_resolved_path(workdir):
    text = "targets:\n  a: pkg.mod:graph\ndataset:\n  path: ../elsewhere/rows.jsonl\n"
    expected = (workdir / "../elsewhere/rows.jsonl").resolve()
    assert error_of(text) == (
        f"spec.yaml:4: dataset.path: file not found: {expected} "
        f"(the path is relative to the spec's folder, {workdir.resolve()})"
    )


def test_dataset_path_that_is_a_folder(workdir):
    (workdir / "rows.jsonl").mkdir()
    assert error_of("dataset: rows.jsonl\ntargets:\n  a: pkg.mod:graph\n") == (
        f"spec.yaml:1: dataset: file is not a file: {workdir.resolve() / 'rows.jsonl'} "
        f"(the path is relative to the spec's folder, {workdir.resolve()})"
    )


def test_errors_never_carry_pydantic_text(workdir):
    message = error_of(BASE + "pricing: {m: {input: 1, output: 2, cached: 3}}\n")
    assert message == "spec.yaml:4: unknown key 'cached' in pricing.m (did you mean 'cache_read'?)"
    assert "pydantic" not in message and "http" not in message


# --- import paths ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("agenteval_cli.demo.swarm:graph", ("agenteval_cli.demo.swarm", "graph")),
        ("pkg:build.graph", ("pkg", "build.graph")),
        ("graphs/local agent.py:graph", ("graphs/local agent.py", "graph")),
        ("C:\\work\\graphs.py:graph", ("C:\\work\\graphs.py", "graph")),
    ],
)
def test_split_import_path(text, parts):
    assert split_import_path(text) == parts


def test_split_import_path_error_carries_a_hint():
    with pytest.raises(SpecValueError) as caught:
        split_import_path("pkg.mod")
    assert caught.value.hint == "write 'package.module:attr' or 'path/to/file.py:attr'"


def test_shared_anchors_are_fine(workdir):
    spec = load_text(
        BASE + "  swarm: {target: pkg.swarm:graph, initial_state: &state {notes: []}}\n"
        "  other: {target: pkg.other:graph, initial_state: *state}\n"
    )
    assert spec.targets[1].initial_state == {"notes": []}
    assert spec.line_of("targets", "other", "initial_state") == 5
