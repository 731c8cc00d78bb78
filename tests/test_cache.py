"""The response cache, --rescore and `agenteval cache clear`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from projects import project, rows

from agenteval_cli.execution.cache import cache_key, target_identity

TARGETS = """
calls = []

def answer(inputs):
    calls.append(inputs["question"])
    if inputs["question"] == "q 3":
        raise RuntimeError("no answer for q 3")
    return {"final_response": inputs["question"] + " refund", "n": len(calls)}
"""


# the project of every test here: six rows, one target 'a' that fails on q 3
CACHED: dict[str, Any] = {
    "code": TARGETS,
    "module": "targets.py",
    "targets": {"a": "answer"},
    "data": rows(6, question="q {i}", outputs={"must_mention": ["refund"]}),
    "prefix": "cached",
    "evaluators": "[resolution_coverage]",
}


def target_calls(spec: Path) -> list[str]:
    import sys

    module = next(
        m
        for m in list(sys.modules.values())
        if getattr(m, "__file__", None) == str((spec.parent / "targets.py").resolve())
    )
    return module.calls


def stored(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT e.name, r.example_id, r.repetition, r.cached, r.attempts, r.error,"
            " r.outputs_json FROM results r JOIN experiments e ON e.id = r.experiment_id"
            " ORDER BY e.started_at, r.example_id, r.repetition"
        ).fetchall()


def test_keys_depend_on_identity_inputs_and_repetition():
    base = target_identity("pkg.mod:graph")
    key = cache_key(base, {"question": "q"}, 0)
    assert key == cache_key(target_identity("pkg.mod:graph", "question", {}), {"question": "q"}, 0)
    assert key != cache_key(base, {"question": "q"}, 1)
    assert key != cache_key(base, {"question": "Q"}, 0)
    assert key != cache_key(target_identity("pkg.mod:other"), {"question": "q"}, 0)
    assert key != cache_key(target_identity("pkg.mod:graph", "text"), {"question": "q"}, 0)
    assert key != cache_key(
        target_identity("pkg.mod:graph", initial_state={"notes": []}), {"question": "q"}, 0
    )
    assert len(key) == 64


def test_a_cached_run_reuses_outputs_and_retries_only_errors(tmp_path, invoke):
    spec = project(tmp_path, **CACHED, extra="max_error_rate: 1\ncache: true\nrepetitions: 2\n")
    db = tmp_path / "db"
    first = invoke("run", spec, "--store", db)
    assert first.exit_code == 0, first.output
    calls = target_calls(spec)
    assert len(calls) == 12  # 6 examples x 2 repetitions: each repetition its own answer
    second = invoke("run", spec, "--store", db)
    assert second.exit_code == 0, second.output
    assert len(calls) == 14  # only q 3 (an error, never cached) was called again
    rows = stored(db)
    first_rows, second_rows = rows[:12], rows[12:]
    assert all(cached == 0 and attempts == 1 for _, _, _, cached, attempts, _, _ in first_rows)
    hits = [r for r in second_rows if r[3] == 1]
    assert len(hits) == 10 and all(r[4] == 0 for r in hits)
    # a hit carries the very outputs of the first call, "n" included
    before = {(r[1], r[2]): r[6] for r in first_rows}
    assert all(before[(r[1], r[2])] == r[6] for r in hits)
    assert [r[5] for r in second_rows if r[1] == "e3"] == ["RuntimeError: no answer for q 3"] * 2

    cleared = invoke("cache", "clear", "--store", db)
    assert cleared.exit_code == 0
    assert "cleared 10 cached call(s)" in cleared.text
    invoke("run", spec, "--store", db)
    assert len(calls) == 26


def test_cache_flag_and_cache_info_and_clear_by_target(tmp_path, invoke):
    spec = project(tmp_path, **CACHED, extra="max_error_rate: 1\n")
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    info = invoke("cache", "info", "--store", db)
    assert "is empty" in info.text  # no cache: nothing written
    assert invoke("run", spec, "--cache", "--store", db).exit_code == 0
    info = invoke("cache", "info", "--store", db)
    path = f"{(spec.parent / 'targets.py').resolve()}:answer"  # two specs' targets.py differ
    assert f"5{path}" in info.squeezed
    assert "cleared 0" in invoke("cache", "clear", "-t", "other:t", "--store", db).text
    assert "cleared 5" in invoke("cache", "clear", "-t", path, "--store", db).text
    missing = invoke("cache", "clear", "--store", tmp_path / "none.db")
    assert missing.exit_code == 2 and "no experiment store" in missing.text


def test_rescore_scores_stored_outputs_again_without_calling_the_target(tmp_path, invoke):
    spec = project(tmp_path, **CACHED, extra="max_error_rate: 1\n")
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    calls = len(target_calls(spec))
    spec.write_text(
        spec.read_text().replace(
            "[resolution_coverage]", "[resolution_coverage, handoff_chain_length]"
        )
    )
    out = tmp_path / "r.json"
    rescored = invoke("rescore", spec, "a", "--store", db, "--json", out)
    assert rescored.exit_code == 0, rescored.output
    assert len(target_calls(spec)) == calls
    [experiment] = json.loads(out.read_text())["experiments"]
    assert experiment["status"] == "finished"
    results = {r["example_id"]: r for r in experiment["results"]}
    # a plain function without LangChain: nothing traced, so no handoff figures at all
    assert results["e0"]["scores"] == {
        "resolution_coverage": 1.0,
        "handoff_chain_length": None,
        "ping_pong": None,
    }
    assert results["e3"]["error"] == "RuntimeError: no answer for q 3"
    # an errored result is rescored too: its trace's figures (none here: untraced), and
    # coverage, which needs the answer it never gave, null saying so
    assert results["e3"]["scores"] == dict.fromkeys(
        ["handoff_chain_length", "ping_pong", "resolution_coverage"]
    )
    assert results["e3"]["comments"]["resolution_coverage"].startswith(
        "no answer: the target raised (RuntimeError: no answer for q 3)"
    )
    assert results["e3"]["comments"]["ping_pong"].startswith("untraced: ")
    unknown = invoke("rescore", spec, "nobody", "--store", db)
    assert unknown.exit_code == 2 and "rescore 'nobody': no target or experiment" in unknown.text
    # the option of a run that did it before this release: forwarded, with a note
    old = invoke("run", spec, "--rescore", "a", "--store", db, "-q")
    assert old.exit_code == 0, old.output
    said = " ".join(old.text.split())
    assert f"note: 'run --rescore' is now 'agenteval rescore {spec} a'" in said


def wording_project(folder: Path, target_options: str = "") -> Path:
    """The CACHED project, its target importing a file of its own."""
    spec = project(folder, **CACHED, extra="max_error_rate: 1\ncache: true\n")
    (folder / "cachesig_wording.py").write_text('SUFFIX = " refund"\n')
    (folder / "targets.py").write_text(
        TARGETS.replace("calls = []", "from cachesig_wording import SUFFIX\n\ncalls = []").replace(
            '+ " refund"', "+ SUFFIX"
        )
    )
    if target_options:
        spec.write_text(
            spec.read_text().replace(
                "a: targets.py:answer", f"a: {{target: targets.py:answer, {target_options}}}"
            )
        )
    return spec


def test_an_edited_target_file_or_a_file_it_imports_is_a_miss(tmp_path, invoke):
    """Stale answers are never served: the key holds the target's source (the project files
    it imports); ``cache info`` says why entries no longer match."""
    spec = wording_project(tmp_path)
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    calls = target_calls(spec)
    assert len(calls) == 6
    assert invoke("run", spec, "--store", db).exit_code == 0
    assert len(calls) == 7  # hits, and q 3 (an error) again
    info = invoke("cache", "info", "--store", db)
    assert "no longer match" not in info.text, info.text

    # a project file the target imports is edited: every entry misses, and info says why
    (tmp_path / "cachesig_wording.py").write_text('SUFFIX = " refund, today"\n')
    info = invoke("cache", "info", "--store", db)
    wording = (tmp_path / "cachesig_wording.py").resolve()
    assert f"5 no longer match: {wording} changed since they were cached" in info.text
    assert invoke("run", spec, "--store", db).exit_code == 0
    assert len(calls) == 13
    # the target's own file, edited: a miss as well
    (tmp_path / "targets.py").write_text((tmp_path / "targets.py").read_text() + "\n# edited\n")
    assert invoke("run", spec, "--store", db).exit_code == 0
    assert len(calls) == 19
    info = invoke("cache", "info", "--store", db)
    assert f"{(tmp_path / 'targets.py').resolve()} changed" in info.text
    assert invoke("run", spec, "--store", db).exit_code == 0
    assert len(calls) == 20  # unchanged since: hits again


def test_a_changed_cache_env_variable_is_a_miss_and_its_value_is_never_shown(
    tmp_path, invoke, monkeypatch
):
    monkeypatch.setenv("AGENTEVAL_TEST_CACHE_MODEL", "small")
    spec = wording_project(tmp_path, "cache_env: [AGENTEVAL_TEST_CACHE_MODEL]")
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    calls = target_calls(spec)
    assert invoke("run", spec, "--store", db).exit_code == 0
    assert len(calls) == 7
    monkeypatch.setenv("AGENTEVAL_TEST_CACHE_MODEL", "large")
    info = invoke("cache", "info", "--store", db)
    assert "5 no longer match: $AGENTEVAL_TEST_CACHE_MODEL changed since they were cached" in (
        info.text
    )
    assert "large" not in info.text and "small" not in info.text
    assert invoke("run", spec, "--store", db).exit_code == 0
    assert len(calls) == 13
    monkeypatch.delenv("AGENTEVAL_TEST_CACHE_MODEL")
    assert invoke("run", spec, "--store", db).exit_code == 0
    assert len(calls) == 19  # unset is a value of its own
    with sqlite3.connect(db) as conn:
        stored_fingerprints = " ".join(
            r for (r,) in conn.execute("SELECT fingerprint_json FROM cache")
        )
    assert "large" not in stored_fingerprints and "small" not in stored_fingerprints


def test_entries_cached_before_fingerprints_were_kept_are_named_stale(tmp_path, invoke):
    spec = project(tmp_path, **CACHED, extra="max_error_rate: 1\ncache: true\n")
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE cache SET fingerprint_json = NULL")
    info = invoke("cache", "info", "--store", db)
    assert "5 no longer match: cached before the target's source was part of the key" in (info.text)


def test_a_package_target_fingerprint_follows_its_project_imports_only():
    from agenteval_cli.execution import fingerprint

    taken = fingerprint.take("agenteval_cli.demo.supervisor:graph", Path("."), ["X_UNSET_VAR"])
    names = {Path(path).relative_to(Path(fingerprint.__file__).parents[2]) for path in taken.files}
    # the module, the demo files it imports (agents -> model ...) and the packages' __init__
    assert {
        Path("agenteval_cli/demo/supervisor.py"),
        Path("agenteval_cli/demo/agents.py"),
        Path("agenteval_cli/demo/model.py"),
        Path("agenteval_cli/demo/__init__.py"),
        Path("agenteval_cli/__init__.py"),
    } <= names
    # not what a package's __init__ re-exports, nor other projects (langgraph)
    assert Path("agenteval_cli/store/db.py") not in names
    assert all(str(name).startswith("agenteval_cli/") for name in names)
    assert taken.env == {"X_UNSET_VAR": "unset"}


def test_the_demo_declares_the_model_variable_it_reads():
    from agenteval_cli.demo.model import MODEL_ENV_VAR
    from agenteval_cli.spec.model import load_spec

    spec = load_spec(Path(__file__).parents[1] / "configs" / "routing.yaml")
    assert {t.name: t.cache_env for t in spec.targets} == {
        "supervisor": [MODEL_ENV_VAR],
        "swarm": [MODEL_ENV_VAR],
    }
