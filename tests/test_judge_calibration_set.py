"""The bundled labelled set for the ``routing_quality`` prompt, end to end offline: the
shipped spec runs the demo swarm, its judge is a loopback OpenAI-compatible server whose
replies are scripted per question, and the kappa ``judge calibrate``, the run table and the
reports show is the one counted by hand from those replies and the labels."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from openai_server import openai_server

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "configs" / "judge-calibration.yaml"
DATASET = ROOT / "datasets" / "routing-labelled.jsonl"
ROWS = [json.loads(line) for line in DATASET.read_text().splitlines()]

# Where the scripted judge differs from people: one level up on three partial answers and
# one wrong answer; every other row it scores as labelled.
DIFFERS = {
    "multi-upgrade-and-sso": 1.0,  # people 0.5
    "multi-phone-also-paypal": 1.0,  # people 0.5
    "tech-okta-sso-setup": 1.0,  # people 0.5
    "negative-sso-fine-invoice": 0.5,  # people 0
}


def label(row: dict) -> float:
    return float(row["outputs"]["human"]["routing_quality"])


def judged(question_of: dict[str, str]):
    """The judge's reply to a request: the scripted score of the question it asks about."""

    def reply(request: dict) -> dict:
        text = "\n".join(str(m.get("content") or "") for m in request["messages"])
        question = re.search(r"Customer query: (.*)", text).group(1)
        row_id = question_of[question]
        score = DIFFERS.get(row_id, label(next(r for r in ROWS if r["id"] == row_id)))
        return {"score": score, "reasoning": f"scripted for {row_id}"}

    return reply


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")


def test_the_labels_span_the_three_levels_and_name_their_reason():
    counts = {level: sum(label(r) == level for r in ROWS) for level in (0.0, 0.5, 1.0)}
    assert counts == {0.0: 3, 0.5: 11, 1.0: 18}
    assert all(r["metadata"]["label_note"] for r in ROWS)
    questions = [r["inputs"]["question"] for r in ROWS]
    routing = [
        json.loads(x) for x in (ROOT / "datasets" / "routing.jsonl").read_text().split("\n") if x
    ]
    assert questions == [r["inputs"]["question"] for r in routing]  # the demo's own questions


def test_the_shipped_spec_calibrates_routing_quality_against_a_scripted_judge(
    tmp_path, invoke, monkeypatch
):
    # people (rows) against the judge (columns), levels 0 / 0.5 / 1:
    #   0:   2 1 0      people's marginals 3, 11, 18; the judge's 2, 9, 21 (n = 32)
    #   0.5: 0 8 3      agreement (2 + 8 + 18) / 32 = 87.5%
    #   1:   0 0 18
    # Quadratic weights: 1 on the diagonal, 0.75 one level off, 0 two off. Observed
    # (28 + 0.75 * 4) / 32 = 31/32; chance sum_i r_i (W c)_i / 32^2 with W c = 8.75, 26.25,
    # 27.75: (3 * 8.75 + 11 * 26.25 + 18 * 27.75) / 1024 = 814.5 / 1024;
    # kappa = (992 - 814.5) / (1024 - 814.5) = 177.5 / 209.5 = 355/419.
    kappa = 355 / 419
    question_of = {r["inputs"]["question"]: r["id"] for r in ROWS}
    db, out = tmp_path / "db", tmp_path / "out"
    with openai_server() as server:
        server.reply_for = judged(question_of)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        ran = invoke(
            "run",
            SPEC,
            "--store",
            db,
            "--json",
            out / "run.json",
            "--markdown",
            out / "run.md",
            "--html",
            out / "run.html",
        )
        assert ran.exit_code == 0, ran.text
        assert len(server.requests) == len(ROWS)  # one judge call per row, none skipped

    headline = f"routing_quality: n=32, agreement 88%, weighted kappa {kappa:.2f} ["
    calibrated = invoke("judge", "calibrate", SPEC, "--store", db)
    assert calibrated.exit_code == 0, calibrated.text
    lines = calibrated.stdout.splitlines()
    assert lines[0].startswith("swarm (judge-calibration-swarm-")
    assert lines[0].split(") ", 1)[1].startswith(headline)
    assert [line.split() for line in lines[1:]] == [
        ["people\\judge", "0", "0.5", "1"],
        ["0", "2", "1", "0"],
        ["0.5", "0", "8", "3"],
        ["1", "0", "0", "18"],
    ]
    low, high = (float(x) for x in lines[0].rsplit("[", 1)[1].rstrip("]").split(", "))
    assert low < kappa < high

    # the run table: a block under the table, the same headline
    table = ran.stdout.splitlines()
    block = table.index("  judges against people (outputs.human):")
    assert table[block + 1].strip().startswith(f"swarm {headline}")

    exported = json.loads((out / "run.json").read_text())["experiments"][0]
    [entry] = exported["calibration"]
    assert entry["kappa"] == pytest.approx(kappa)
    assert entry["confusion"] == [[2, 1, 0], [0, 8, 3], [0, 0, 18]]
    assert entry["weighted"] == "quadratic"

    shown = f"{kappa:.2f} [{entry['kappa_ci'][0]:.2f}, {entry['kappa_ci'][1]:.2f}]"
    markdown = (out / "run.md").read_text()
    assert "#### Judges against people (outputs.human)" in markdown
    assert f"| `swarm` | routing\\_quality | 32 | 88% | {shown} | quadratic | 0 |" in markdown

    cells = _tables((out / "run.html").read_text(), "calibration")
    assert cells[0] == [
        ["target", "judge", "n", "agreement", "kappa [95% CI]", "weighting", "unscored"],
        ["swarm", "routing_quality", "32", "88%", shown, "quadratic", "0"],
    ]
    confusion = _tables((out / "run.html").read_text(), "kappa-confusion")
    assert confusion[0][1:] == [["0", "2", "1", "0"], ["0.5", "0", "8", "3"], ["1", "0", "0", "18"]]


def test_the_labels_still_describe_what_the_swarm_does(tmp_path, invoke):
    """The labels were read off the swarm's results: a row labelled 0 has no resolution note
    from a specialist it expects, 0.5 one from some, 1 one from each and none from another;
    a change to the demo that moves these fails here, not in a user's kappa."""
    db, out = tmp_path / "db", tmp_path / "run.json"
    assert invoke("run", SPEC, "--store", db, "--json", out).exit_code == 0
    results = {r["example_id"]: r for r in json.loads(out.read_text())["experiments"][0]["results"]}
    for row in ROWS:
        notes = results[row["id"]]["outputs"]["resolution_notes"]
        acted = {note.split(":", 1)[0] for note in notes}
        expected = set(row["outputs"]["expected_agents"])
        if label(row) == 0:
            assert not acted & expected, row["id"]
        elif label(row) == 1:
            assert acted == expected, row["id"]
        else:  # partial: some expected specialist acted
            assert acted & expected, row["id"]


class _Cells(HTMLParser):
    """The text of each cell of the tables of one class, row by row."""

    def __init__(self, css: str) -> None:
        super().__init__()
        self.css, self.tables, self.depth, self.cell = css, [], 0, None

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if tag == "table" and self.css in classes:
            self.tables.append([])
            self.depth = 1
        elif self.depth and tag == "tr":
            self.tables[-1].append([])
        elif self.depth and tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if self.depth and tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append(" ".join(self.cell.split()))
            self.cell = None
        elif tag == "table":
            self.depth = 0

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def _tables(page: str, css: str) -> list[list[list[str]]]:
    parser = _Cells(css)
    parser.feed(page)
    return parser.tables
