"""``agenteval schema``: the JSON Schema an editor checks a spec with, and the loader's own
checks, agree; every spec of the repository and its docs passes it; ``agenteval init``
points its spec at it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from agenteval_cli.core.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "tests" / "data" / "datasets" / "routing.jsonl"


class _Yaml12Loader(yaml.SafeLoader):
    """YAML as an editor's language server reads it (YAML 1.2): ``on`` and ``yes`` are
    strings, only true and false are booleans."""


_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def _yaml(text: str) -> Any:
    return yaml.load(text, Loader=_Yaml12Loader)


@pytest.fixture(scope="module")
def schema(tmp_path_factory, invoke) -> dict[str, Any]:
    """The schema as ``agenteval schema -o FILE`` writes it."""
    path = tmp_path_factory.mktemp("schema") / "agenteval.schema.json"
    result = invoke("schema", "-o", path)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"wrote {path}"
    found = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(found)
    return found


def _errors(schema: dict[str, Any], data: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)
    ]


def _loader_error(folder: Path, text: str | None, *, name: str = "spec.yaml") -> str | None:
    """What the loader says of the spec ``text`` (written as ``folder/name``; None: the file
    there as it is) before any target is called (the spec, its metrics and its evaluators'
    options, as ``agenteval run`` checks them), or None when it takes it."""
    from agenteval_cli import api
    from agenteval_cli.evaluators.loading import bind_evaluators

    path = folder / name
    if text is not None:
        path.write_text(text, encoding="utf-8")
    try:
        bind_evaluators(api.load(path), warn=lambda _: None)
    except UserError as exc:
        return str(exc)
    return None


def test_stdout_and_file_are_the_same_schema(schema, invoke):
    result = invoke("schema")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["dataset", "targets"]


def test_each_built_in_evaluator_has_its_options(schema):
    """The options come from each factory's signature: trajectory_match's modes, llm_judge's
    required prompt and model, retrieval's k as a number or a list."""
    from agenteval_cli.evaluators import REGISTRY

    items = schema["properties"]["evaluators"]["anyOf"][0]["items"]["anyOf"]
    assert items[0]["enum"] == list(REGISTRY)
    refs = [item["$ref"].rsplit("/", 1)[-1] for item in items[1:]]
    assert refs == [name + suffix for name in REGISTRY for suffix in ("", "_named")]
    trajectory = schema["$defs"]["trajectory_match"]["properties"]
    assert trajectory["mode"]["enum"] == ["strict", "unordered", "subset", "superset"]
    assert trajectory["tool_args"]["enum"] == ["exact", "ignore", "subset", "superset"]
    assert "pricing" not in schema["$defs"]["token_cost"]["properties"]  # filled in by a run
    judge = schema["$defs"]["llm_judge"]
    assert sorted(judge["required"]) == ["model", "name", "prompt"]
    assert schema["$defs"]["llm_judge_named"]["required"][:2] == ["name", "type"]
    k = schema["$defs"]["retrieval"]["properties"]["k"]
    assert {"type": "integer"} in k["anyOf"]


def _repository_specs() -> list[Path]:
    """Every spec file kept in the repository, the deliberately broken ones aside."""
    found = []
    for path in sorted(ROOT.rglob("*.y*ml")):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in (".git", ".venv") or relative.parts[:3] == ("tests", "data", "bad"):
            continue
        data = _yaml(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "targets" in data:
            found.append(path)
    return found


def test_the_repository_has_the_specs_this_test_checks():
    names = {str(p.relative_to(ROOT)) for p in _repository_specs()}
    assert {"configs/routing.yaml", "configs/conversations.yaml"} <= names
    assert "tests/data/specs/routing.yaml" in names


@pytest.mark.parametrize("path", _repository_specs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_spec_of_the_repository_passes(schema, path):
    text = path.read_text(encoding="utf-8")
    assert _errors(schema, _yaml(text)) == []
    assert _loader_error(path.parent, None, name=path.name) is None  # and so does the loader


def _broken_specs() -> list[Path]:
    return sorted((ROOT / "tests" / "data" / "bad" / "specs").glob("*.yaml"))


@pytest.mark.parametrize("path", _broken_specs(), ids=lambda p: p.name)
def test_what_the_schema_refuses_the_loader_refuses(schema, path):
    """The deliberately broken specs: the schema flags none the loader would run (some it
    cannot see, such as a module that does not import, are the run's to find)."""
    try:
        data = _yaml(path.read_bytes().decode("utf-8-sig"))
    except (UnicodeDecodeError, yaml.YAMLError):
        return  # not YAML an editor could check either
    if _errors(schema, data):
        assert _loader_error(path.parent, None, name=path.name) is not None


def _doc_blocks() -> list[tuple[str, Any]]:
    """Every YAML block of the docs and the README that is a spec, or a part of one: a
    mapping of spec keys, or a list of evaluator items (a CI workflow is neither)."""
    from agenteval_cli.spec.model import Spec

    blocks = []
    for path in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"```ya?ml\n(.*?)```", text, re.DOTALL):
            data = _yaml(match.group(1))
            line = text.count("\n", 0, match.start()) + 1
            where = f"{path.relative_to(ROOT)}:{line}"
            if isinstance(data, list) or (
                isinstance(data, dict) and set(data) & set(Spec.model_fields)
            ):
                blocks.append((where, data))
    return blocks


def test_the_docs_have_the_blocks_this_test_checks():
    where = [w for w, _ in _doc_blocks()]
    assert any(w.startswith("docs/spec.md") for w in where)
    assert sum(w.startswith("docs/evaluator-reference.md") for w in where) >= len(
        __import__("agenteval_cli.evaluators", fromlist=["REGISTRY"]).REGISTRY
    )


@pytest.mark.parametrize("where, data", _doc_blocks(), ids=[w for w, _ in _doc_blocks()])
def test_every_spec_in_the_docs_passes(schema, where, data):
    """A whole spec against the schema; a part of one (a few keys, an evaluators list)
    against the schema of the keys it has."""
    if isinstance(data, list):
        data = {"evaluators": data}
    part = {**schema, "required": [key for key in schema["required"] if key in data]}
    assert _errors(part, data) == [], where


SPEC = f"""dataset: {DATASET}
targets:
  demo: agenteval_cli.demo.supervisor:graph
"""

GOOD = {
    "short forms": SPEC,
    "long forms": f"""experiment_prefix: long
dataset: {{path: {DATASET}}}
targets:
  demo:
    target: agenteval_cli.demo.swarm:graph
    input: {{messages: "{{question}}"}}
    output: messages
    config: {{recursion_limit: 20, tags: [eval]}}
    active_agent: current_step
    skill_tools: [load_skill]
    coordinators: [triage]
evaluators:
  - routing_accuracy
  - {{name: trajectory_match, mode: superset, tool_args: ignore}}
  - {{name: routing_precision, ignore_agents: [triage]}}
  - {{name: retrieval, k: [1, 3]}}
  - {{name: precise, type: routing_precision, sample: 0.5, seed: 3}}
  - {{name: resolution_coverage, label: coverage, direction: higher, format: percent}}
concurrency: ${{AGENTEVAL_SCHEMA_TEST_CONCURRENCY:-3}}
repetitions: 2
timeout_s: 12.5
retries: {{max: 1, backoff: constant, on: timeout}}
rate_limit: {{requests_per_minute: 60}}
pricing:
  scripted-small: {{input: 0.15, output: 0.6, cache_read: 0.01}}
max_error_rate: 0.25
executor: local
""",
    "per-key metrics": SPEC
    + "evaluators:\n  - {name: retrieval, metrics: {mrr: {label: MRR, format: number}}}\n",
}

BAD = {
    "a misspelled key": SPEC + "concurency: 2\n",
    "a misspelled key of a target": f"""dataset: {DATASET}
targets:
  demo: {{target: "agenteval_cli.demo.supervisor:graph", input_keys: question}}
""",
    "a misspelled key of the dataset": f"dataset: {{pth: {DATASET}}}\n" + SPEC.split("\n", 1)[1],
    "a misspelled evaluator option": SPEC
    + "evaluators:\n  - {name: trajectory_match, mdoe: superset}\n",
    "an unknown evaluator": SPEC + "evaluators: [routing_acuracy]\n",
    "an option out of its choices": SPEC
    + "evaluators:\n  - {name: trajectory_match, mode: supper}\n",
    "an option of the wrong type": SPEC
    + "evaluators:\n  - {name: routing_precision, ignore_agents: 5}\n",
    "a required option left out": SPEC + "evaluators:\n  - {name: llm_judge, model: m}\n",
    "a sample above 1": SPEC + "evaluators:\n  - {name: routing_accuracy, sample: 1.5}\n",
    "an unknown level": SPEC + "evaluators:\n  - {name: routing_accuracy, level: turn}\n",
    "an unknown direction": SPEC + "evaluators:\n  - {name: routing_accuracy, direction: up}\n",
    "a misspelled metric field": SPEC
    + "evaluators:\n  - {name: retrieval, metrics: {mrr: {lable: MRR}}}\n",
    "no targets": f"dataset: {DATASET}\n",
    "no target in targets": f"dataset: {DATASET}\ntargets: {{}}\n",
    "targets as a list": f"dataset: {DATASET}\ntargets: [agenteval_cli.demo.supervisor:graph]\n",
    "concurrency 0": SPEC + "concurrency: 0\n",
    "concurrency too large": SPEC + "concurrency: 5000\n",
    "a negative timeout": SPEC + "timeout_s: -1\n",
    "an error rate above 1": SPEC + "max_error_rate: 1.5\n",
    "an unknown retry kind": SPEC + "retries: {on: [ratelimit]}\n",
    "an unknown backoff": SPEC + "retries: {backoff: linear}\n",
    "an unknown executor": SPEC + "executor: spark\n",
    "cache not a boolean": SPEC + "cache: sometimes\n",
    "a price not a number": SPEC + "pricing:\n  m: {input: cheap, output: 1}\n",
}


@pytest.mark.parametrize("text", GOOD.values(), ids=list(GOOD))
def test_a_good_spec_passes_the_schema_and_the_loader(schema, tmp_path, text):
    assert _errors(schema, _yaml(text)) == []
    assert _loader_error(tmp_path, text) is None


@pytest.mark.parametrize("text", BAD.values(), ids=list(BAD))
def test_a_bad_spec_fails_the_schema_and_the_loader(schema, tmp_path, text):
    assert _errors(schema, _yaml(text)) != []
    assert _loader_error(tmp_path, text) is not None


def test_a_misspelled_key_is_named(schema, tmp_path):
    assert _errors(schema, _yaml(BAD["a misspelled key"])) == [
        ": Additional properties are not allowed ('concurency' was unexpected)"
    ]
    assert "unknown key 'concurency' (did you mean 'concurrency'?)" in str(
        _loader_error(tmp_path, BAD["a misspelled key"])
    )


def test_init_points_the_spec_at_the_schema_beside_it(tmp_path, invoke, schema):
    result = invoke("init", tmp_path / "evals")
    assert result.exit_code == 0, result.output
    spec = tmp_path / "evals" / "agenteval.yaml"
    first = spec.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=agenteval.schema.json"
    written = json.loads((tmp_path / "evals" / "agenteval.schema.json").read_text())
    assert written == schema
    assert _errors(written, _yaml(spec.read_text(encoding="utf-8"))) == []


def test_a_schema_file_that_cannot_be_written_is_one_error(tmp_path, invoke):
    (tmp_path / "file").write_text("")
    result = invoke("schema", "-o", tmp_path / "file" / "agenteval.schema.json")
    assert result.exit_code == 2
    assert result.text.startswith(
        f"error: cannot write {tmp_path / 'file' / 'agenteval.schema.json'}"
    )
    assert "Traceback" not in result.output


def test_an_option_of_the_wrong_type_is_named_with_its_declared_type(tmp_path):
    """The loader checks an option's value against the factory's own type hint, the one
    the schema is made from."""
    error = _loader_error(tmp_path, BAD["an option of the wrong type"])
    assert error == (
        f"{tmp_path / 'spec.yaml'}:5: evaluator 'routing_precision': ignore_agents: expected "
        "list[str] | None, got 5 (see 'agenteval evaluators show routing_precision')"
    )
