"""``.env`` files: read from the spec's folder up to the project root, nearer ones first, the
process environment first of all; ``--env-file`` and ``AGENTEVAL_NO_DOTENV``; their secrets
redacted and never stored; a bad line is one line naming the file and the line."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from projects import project

from agenteval_cli.core.envfiles import env_files, project_root, read_env_file, spec_env
from agenteval_cli.core.errors import UserError

WORD = "AGENTEVAL_DOTENV_TEST_WORD"
KEY = "AGENTEVAL_DOTENV_TEST_API_KEY"
SECRET = "sk-dotenv-0123456789abcdefghijklmnop"

# The target answers with the variable it reads, so the run's --json says what it saw.
SAYS_WORD = (
    "import os\n"
    "def answer(inputs):\n"
    f"    return {{'final_response': os.environ.get('{WORD}', 'unset')}}\n"
)


OTHER = "AGENTEVAL_DOTENV_TEST_OTHER"
SAYS_BOTH = (
    "import os\n"
    "def answer(inputs):\n"
    f"    words = [os.environ.get(name, 'unset') for name in ('{WORD}', '{OTHER}')]\n"
    "    return {'final_response': ' '.join(words)}\n"
)


@pytest.fixture(autouse=True)
def _environment_kept():
    """A command sets the variables of the files it reads for the rest of its process:
    this one's tests leave the environment as they found it."""
    before = dict(os.environ)
    yield
    for name in set(os.environ) - set(before):
        del os.environ[name]
    os.environ.update(before)


def _tree(tmp_path: Path) -> Path:
    """outside/.env, above the project; project/ (pyproject.toml) and its .env;
    project/evals/.env; the spec's folder, project/evals/nested, without one."""
    (tmp_path / ".env").write_text("OUTSIDE=1\n")
    root = tmp_path / "project"
    (root / "evals" / "nested").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (root / ".env").write_text("A=root\nB=root\n")
    (root / "evals" / ".env").write_text("B=evals\n")
    return root / "evals" / "nested"


def test_the_files_from_the_project_root_down_to_the_spec(tmp_path):
    folder = _tree(tmp_path)
    root = tmp_path / "project"
    assert project_root(folder) == root.resolve()
    assert env_files(folder) == [root.resolve() / ".env", root.resolve() / "evals" / ".env"]
    # the nearer file wins; the .env above the project root is never read
    assert spec_env(folder) == {"A": "root", "B": "evals"}


def test_without_a_project_root_only_the_spec_folder_is_read(tmp_path):
    (tmp_path / ".env").write_text("ABOVE=1\n")
    folder = tmp_path / "loose"
    folder.mkdir()
    (folder / ".env").write_text("HERE=1\n")
    if project_root(folder) is None:  # no pyproject.toml or .git above the temporary folder
        assert env_files(folder) == [folder.resolve() / ".env"]
        assert spec_env(folder) == {"HERE": "1"}


def test_a_git_folder_is_a_project_root(tmp_path):
    folder = _tree(tmp_path)
    (tmp_path / "project" / "evals" / ".git").mkdir()
    assert env_files(folder) == [(tmp_path / "project" / "evals" / ".env").resolve()]


def test_the_forms_python_dotenv_reads(tmp_path):
    path = tmp_path / ".env"
    path.write_text(
        "# a comment\n"
        "export PLAIN=one\n"
        'QUOTED="two words"\n'
        "NESTED=${PLAIN}-and-more\n"
        "EMPTY=\n"
        "NO_VALUE\n"
    )
    assert read_env_file(path) == {
        "PLAIN": "one",
        "QUOTED": "two words",
        "NESTED": "one-and-more",
        "EMPTY": "",
    }


def test_a_bad_line_names_the_file_and_the_line(tmp_path):
    path = tmp_path / ".env"
    path.write_text("GOOD=1\n\n# fine\nthis is not a variable\nLATER=2\n")
    with pytest.raises(UserError) as caught:
        read_env_file(path)
    assert str(caught.value).startswith(f"{path}:4: not a NAME=value line of an env file")


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("GOOD=1\nBAD=x\0y\n", 2, "a NUL byte in a variable's name or value"),
        ("GOOD=1\n\nB\0AD=1\n", 3, "a NUL byte in a variable's name or value"),
        ("export BAD='x\0'\n", 1, "a NUL byte in a variable's name or value"),
        ('GOOD=1\nBAD="first\nsecond\0"\n', 3, "a NUL byte in a variable's name or value"),
        ("GOOD=1\n'A=B'=1\n", 2, "the name 'A=B' holds '='"),
    ],
)
def test_a_variable_no_environment_can_hold_names_its_line(tmp_path, text, line, message):
    """os.environ refuses a NUL anywhere and '=' in a name: said at the file's line."""
    path = tmp_path / ".env"
    path.write_text(text)
    with pytest.raises(UserError) as caught:
        read_env_file(path)
    assert str(caught.value).startswith(f"{path}:{line}: {message}"), caught.value


def test_a_nul_byte_in_a_comment_sets_nothing_and_is_left_alone(tmp_path):
    path = tmp_path / ".env"
    path.write_text("# a comment \0 with a NUL\nGOOD=1\n")
    assert read_env_file(path) == {"GOOD": "1"}


@pytest.mark.parametrize("command", [("run", "SPEC"), ("dataset", "validate", "--spec", "SPEC")])
def test_a_nul_byte_stops_the_command_in_one_line(tmp_path, invoke, command):
    spec = project(tmp_path / "p", data=1)
    env = tmp_path / "p" / ".env"
    env.write_text("OK=1\nAGENTEVAL_DOTENV_TEST_NUL=a\0b\n")
    store = ("--store", tmp_path / "s.db") if command[0] == "run" else ()
    result = invoke(*[spec if part == "SPEC" else part for part in command], *store)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert result.text.startswith(f"error: {env}:2: a NUL byte in a variable's name or value")
    assert not (tmp_path / "s.db").exists()


def _run(invoke, spec: Path, tmp_path: Path, *options: object, env=None):
    out = tmp_path / "r.json"
    result = invoke("run", spec, "--store", tmp_path / "s.db", "--json", out, *options, env=env)
    assert result.exit_code == 0, result.output
    (experiment,) = json.loads(out.read_text())["experiments"]
    return {r["outputs"]["final_response"] for r in experiment["results"]}


def test_a_run_reads_the_spec_folders_env(tmp_path, invoke, monkeypatch):
    monkeypatch.delenv(WORD, raising=False)
    spec = project(tmp_path / "p", SAYS_WORD, data=2)
    (tmp_path / "p" / ".env").write_text(f"{WORD}=from-dotenv\n")
    monkeypatch.chdir(tmp_path)  # not the spec's folder: the spec's, not the working one's
    assert _run(invoke, spec, tmp_path) == {"from-dotenv"}


def test_the_process_environment_wins(tmp_path, invoke):
    spec = project(tmp_path / "p", SAYS_WORD, data=2)
    (tmp_path / "p" / ".env").write_text(f"{WORD}=from-dotenv\n")
    assert _run(invoke, spec, tmp_path, env={WORD: "from-process"}) == {"from-process"}


def test_a_spec_variable_is_expanded_from_the_env_file(tmp_path, invoke, monkeypatch):
    monkeypatch.delenv(WORD, raising=False)
    spec = project(tmp_path / "p", data=1, prefix=f"${{{WORD}}}")
    (tmp_path / "p" / ".env").write_text(f"{WORD}=named-by-dotenv\n")
    result = invoke("run", spec, "--store", tmp_path / "s.db", "-q")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1].startswith("named-by-dotenv: passed")


def test_env_file_replaces_the_files_found(tmp_path, invoke, monkeypatch):
    monkeypatch.delenv(WORD, raising=False)
    monkeypatch.delenv(OTHER, raising=False)
    spec = project(tmp_path / "p", SAYS_BOTH, data=2)
    (tmp_path / "p" / ".env").write_text(f"{WORD}=from-dotenv\n{OTHER}=from-dotenv\n")
    other = tmp_path / "ci.env"
    other.write_text(f"{WORD}=from-env-file\n")
    # the spec's own .env is not read at all: OTHER, which only it sets, stays unset
    assert _run(invoke, spec, tmp_path, "--env-file", other) == {"from-env-file unset"}


def test_agenteval_no_dotenv_reads_none(tmp_path, invoke, monkeypatch):
    monkeypatch.delenv(WORD, raising=False)
    spec = project(tmp_path / "p", SAYS_WORD, data=2)
    (tmp_path / "p" / ".env").write_text(f"{WORD}=from-dotenv\n")
    assert _run(invoke, spec, tmp_path, env={"AGENTEVAL_NO_DOTENV": "1"}) == {"unset"}


def test_a_missing_env_file_is_bad_input(tmp_path, invoke):
    spec = project(tmp_path / "p", data=1)
    result = invoke("run", spec, "--store", tmp_path / "s.db", "--env-file", tmp_path / "no.env")
    assert result.exit_code == 2
    assert f"error: env file not found: {tmp_path / 'no.env'}" in result.text
    assert "Traceback" not in result.output
    assert not (tmp_path / "s.db").exists()


def test_a_bad_line_stops_the_run_before_it_starts(tmp_path, invoke):
    spec = project(tmp_path / "p", data=1)
    env = tmp_path / "p" / ".env"
    env.write_text("OK=1\nnot a variable\n")
    result = invoke("run", spec, "--store", tmp_path / "s.db")
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert result.text.startswith(f"error: {env}:2: not a NAME=value line of an env file")
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(
    "command", [("rescore", "SPEC", "x"), ("judge", "calibrate", "SPEC"), ("view", "SPEC")]
)
def test_every_command_reading_a_spec_reads_its_env(tmp_path, invoke, command):
    """The spec's ${VAR} is read from its .env by each command that reads a spec: a bad
    line of it is that command's error too."""
    spec = project(tmp_path / "p", data=1)
    (tmp_path / "p" / ".env").write_text("not a variable\n")
    args = [spec if part == "SPEC" else part for part in command]
    result = invoke(*args, "--store", tmp_path / "s.db")
    assert result.exit_code == 2, result.output
    assert f"{tmp_path / 'p' / '.env'}:1: not a NAME=value line" in result.text


@pytest.mark.parametrize(
    "command",
    [("run",), ("rescore",), ("import",), ("view",), ("judge", "calibrate"),
     ("dataset", "validate"), ("dataset", "push")],
)  # fmt: skip
def test_every_command_reading_a_spec_takes_env_file(invoke, command):
    assert invoke(*command, "--help").text.count("--env-file PATH") == 1


def test_dataset_validate_expands_the_spec_with_its_env(tmp_path, invoke, monkeypatch):
    monkeypatch.delenv(WORD, raising=False)
    spec = project(tmp_path / "p", data=2, dataset="rows.jsonl")
    spec.write_text(spec.read_text().replace("dataset: rows.jsonl", f"dataset: ${{{WORD}}}"))
    (tmp_path / "p" / ".env").write_text(f"{WORD}=rows.jsonl\n")
    result = invoke("dataset", "validate", "--spec", spec)
    assert result.exit_code == 0, result.output
    assert "2 examples, all valid" in result.text


SECRET_TARGET = (
    "import os\n"
    "def answer(inputs):\n"
    f"    key = os.environ['{KEY}']\n"
    "    if inputs['question'] == 'q0':\n"
    "        raise RuntimeError('the provider refused key ' + key)\n"
    "    return {'final_response': 'answered with a key of %d characters' % len(key)}\n"
)


def test_a_secret_from_the_env_file_is_never_stored_or_shown(tmp_path, invoke, monkeypatch):
    monkeypatch.delenv(KEY, raising=False)
    spec = project(
        tmp_path / "p",
        SECRET_TARGET,
        data=2,
        extra=f"max_error_rate: 1\nray: {{address: '${{{KEY}}}'}}\n",  # the spec reads it too
    )
    (tmp_path / "p" / ".env").write_text(f"{KEY}={SECRET}\n")
    out = tmp_path / "r.json"
    result = invoke("run", spec, "--store", tmp_path / "s.db", "--json", out)
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output
    with sqlite3.connect(tmp_path / "s.db") as db:
        errors = [row[0] for row in db.execute("SELECT error FROM results ORDER BY error")]
        dump = "\n".join(db.iterdump())
    assert errors == [None, "RuntimeError: the provider refused key ***"]
    assert SECRET not in dump
    exported = out.read_text()
    results = json.loads(exported)["experiments"][0]["results"]
    answers = {(r["outputs"] or {}).get("final_response") for r in results}
    assert answers == {None, f"answered with a key of {len(SECRET)} characters"}
    assert "RuntimeError: the provider refused key ***" in exported
    (recorded,) = [row for row in dump.splitlines() if 'INSERT INTO "experiments"' in row]
    assert f"${{{KEY}}}" in recorded  # the spec is recorded as written
    assert SECRET not in exported


def test_the_library_reads_the_env_file_for_the_run_only(tmp_path, monkeypatch):
    import agenteval_cli as agenteval

    monkeypatch.delenv(WORD, raising=False)
    spec = project(tmp_path / "p", SAYS_WORD, data=2)
    (tmp_path / "p" / ".env").write_text(f"{WORD}=from-dotenv\n")
    other = tmp_path / "api.env"
    other.write_text(f"{WORD}=from-the-api\n")
    found = agenteval.run(spec, store=tmp_path / "s.db")
    given = agenteval.run(spec, store=tmp_path / "s.db", env_file=other)
    assert found.ok() and given.ok()
    assert WORD not in os.environ  # set for each run, unset after it
    (seen_found, seen_given) = agenteval.load_experiments(
        [found.ids[0], given.ids[0]], store=tmp_path / "s.db"
    )
    assert {r.outputs["final_response"] for r in seen_found.runs} == {"from-dotenv"}
    assert {r.outputs["final_response"] for r in seen_given.runs} == {"from-the-api"}
