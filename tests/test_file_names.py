"""Names that become file names (core.filenames): whatever an experiment, a dataset or a
worker is called, its file stays in the folder meant for it; and every command that
writes a file, run with hostile experiment names, writes only where it was meant to."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from projects import project

from agenteval_cli.core.filenames import MAX_BYTES, file_name, path_in

DEVICES = ("CON", "PRN", "AUX", "NUL", "COM1", "COM9", "LPT1", "LPT¹", "CONIN$")
# One of each class: a climb, absolute paths, NUL and controls, a long name, reserved names,
# dots and dashes at the ends, separators of both systems, characters Windows refuses.
HOSTILE = [
    "../escaped",
    "../../../../etc/passwd",
    "/tmp/absolute",
    "C:\\Windows\\system32",
    "\\\\server\\share",
    "a\x00b",
    "tab\there\nnewline\x7f\x85",
    "x" * 300,
    "é" * 300,
    *DEVICES,
    "con.txt",
    "Nul .json",
    ".",
    "..",
    "...",
    "",
    " ",
    ".hidden",
    "-rf",
    "--help",
    "trailing.",
    "trailing ",
    'what<>:"|?*',
    "\ud800lone",
]


def assert_safe(name: str, suffix: str = "") -> None:
    """What a safe file name is: one component, nothing a filesystem reads otherwise."""
    assert name.endswith(suffix)
    stem = name[: len(name) - len(suffix)] if suffix else name
    assert stem, name
    assert not any(c in name for c in '/\\<>:"|?*') and name.isprintable(), name
    assert stem[0] not in ".- " and stem[-1] not in ". ", name
    assert stem.split(".")[0].rstrip(" ").upper() not in DEVICES, name
    assert len(name.encode("utf-8")) <= MAX_BYTES, name
    assert name not in (".", "..")


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_becomes_one_safe_file_name_in_its_folder(tmp_path, name):
    got = file_name(name, ".html")
    assert_safe(got, ".html")
    path = path_in(tmp_path / "reports", name, ".html")
    assert path.parent == tmp_path / "reports"
    assert path.resolve().parent == (tmp_path / "reports").resolve()


def test_any_name_at_all_becomes_a_safe_file_name():
    """Random names over the characters that matter, each kept to the rule."""
    alphabet = "ab./\\\x00\x01 -:*?CONUL1é日\ud800\u2028"
    rng = random.Random(35)
    for _ in range(2000):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 400)))
        assert_safe(file_name(name, ".json"), ".json")


def test_a_safe_name_is_kept_and_names_that_reduce_alike_stay_distinct():
    assert file_name("routing-supervisor-3f52e185", ".html") == "routing-supervisor-3f52e185.html"
    assert file_name("my agents v2") == "my agents v2"
    long = "x" * 300
    names = [long + "a", long + "b", "a/b", "a_b", "a\x00b", "CON", "_CON", "", "."]
    assert len({file_name(n, ".html") for n in names}) == len(names)
    assert file_name(long) == file_name(long)  # stable: the same name, the same file


# --- every command that writes a file -----------------------------------------------------

# A prefix the spec accepts of each hostile class; `ABSOLUTE` is made absolute in the test.
# The first three quick; the other classes with the slow tests.
PREFIXES = [
    "../escaped",
    "ABSOLUTE",
    '"a\\0b"',
    *(
        pytest.param(prefix, marks=pytest.mark.slow)
        for prefix in ("x" * 300, "CON", "..", "-rf", "'trailing. '")
    ),
]


def _files(folder: Path) -> set[Path]:
    """The files under ``folder``, Python's own byte-code cache (of the target) aside."""
    return {p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.parametrize("prefix", PREFIXES)
def test_every_command_writing_a_file_keeps_it_in_its_folder(tmp_path, invoke, prefix):
    """run (each output and the shards), merge, view, report and dataset add-failures with
    an experiment named by a hostile prefix: every file written is where it was meant to be."""
    if prefix == "ABSOLUTE":
        prefix = str(tmp_path / "abs" / "x")
    work = tmp_path / "work"
    code = "def answer(inputs):\n    return {'final_response': 'no'}\n"
    spec = project(
        work,
        code,
        prefix=prefix,
        data=[{"inputs": {"question": "q0"}, "outputs": {"must_mention": ["yes"]}}],
        evaluators="[resolution_coverage]",
        extra="thresholds: {resolution_coverage: 1.0}\n",
    )
    before = _files(tmp_path)
    out, store = work / "out", work / ".agenteval" / "agenteval.db"
    reports = store.parent / "reports"
    outputs = ["--json", out / "r.json", "--html", out / "r.html", "--markdown", out / "r.md"]
    outputs += ["--junit", out / "r.xml", "--save-baseline", out / "b.json"]
    shards = [work / "shards" / "1.db", work / "shards" / "2.db"]
    commands = [
        ("run", spec, "--store", store, *outputs),
        ("run", spec, "--store", shards[0], "--shard", "1/2"),
        ("run", spec, "--store", shards[1], "--shard", "2/2"),
        ("merge", *shards, "--store", store, "--json", out / "m.json"),
        ("view", "--store", store, "--no-open"),
        ("view", spec, "--store", store, "--no-open"),
        ("report", out / "r.json", "-o", out / "from-json.html", "--store", store),
        ("dataset", "add-failures", out / "r.json", "--to", out / "failures.jsonl"),
    ]
    for command in commands:
        result = invoke(*command)
        assert result.exit_code in (0, 1), (command[0], result.output)  # 1: the gate failed
    names = {e["name"] for e in json.loads((out / "r.json").read_text())["experiments"]}
    assert len(names) == 1
    written = _files(tmp_path) - before
    stores = {p for p in written if p.parent in (store.parent, work / "shards")}
    assert all(p.name.split(".db")[0] in ("agenteval", "1", "2") for p in stores), stores
    shown = {p for p in written if p.parent == reports}
    assert len(shown) >= 1 and all(p.suffix == ".html" for p in shown)
    for report in shown:
        assert_safe(report.name, ".html")
    assert written - stores - shown == {p for p in written if p.parent == out}
    assert not (tmp_path / "abs").exists() and not (work / "escaped").exists()
    assert {p.name for p in tmp_path.iterdir()} == {"work"}


def test_dataset_pull_names_its_default_file_safely(server, tmp_path, invoke, monkeypatch):
    """A LangSmith dataset's name becomes the file pull writes when -o is not given."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"inputs": {"question": "q"}}\n')
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for name in ("../escaped", str(tmp_path / "abs"), "CON", "x" * 300):
        pushed = invoke("dataset", "push", rows, "--name", name, "--store", tmp_path / "s.db")
        assert pushed.exit_code == 0, pushed.output
        pulled = invoke("dataset", "pull", name)
        assert pulled.exit_code == 0, pulled.output
        assert (work / file_name(name, ".jsonl")).is_file()
    assert {p.parent for p in work.iterdir()} == {work} and len(list(work.iterdir())) == 4
    assert not (tmp_path / "escaped.jsonl").exists() and not (tmp_path / "abs.jsonl").exists()
