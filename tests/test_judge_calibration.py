"""Judges checked against people's labels: kappa by hand counts, the CLI and --json."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example, Run
from agenteval_cli.evaluators.reference_fields import Reads, reference_warnings
from agenteval_cli.metrics.agreement import Z_95, agreement, weighted_kappa
from agenteval_cli.results.calibration import calibrate


def _pairs(table: list[list[int]], values: list[float]) -> list[tuple[float, float]]:
    """(person, judge) pairs making up a confusion table, rows the person's value."""
    return [
        (values[i], values[j])
        for i, row in enumerate(table)
        for j, count in enumerate(row)
        for _ in range(count)
    ]


def test_a_two_by_two_table_of_known_kappa_and_its_fleiss_cohen_everitt_interval():
    # po = 0.8, pe = 0.5*0.5 + 0.5*0.5 = 0.5, kappa = 0.3 / 0.5 = 0.6. Every mean weight
    # is 0.5, so (w_i. + w_.j)(1 - kappa) = 0.4: the sum is 2*0.4*0.6^2 + 2*0.1*0.4^2 = 0.32,
    # less (0.6 - 0.5*0.4)^2 = 0.16, over n(1 - pe)^2 = 25: variance 0.0064, se 0.08.
    a = agreement(_pairs([[40, 10], [10, 40]], [0.0, 1.0]))
    assert (a.n, a.agreement, a.weighted) == (100, 0.8, False)
    assert a.confusion == ((40, 10), (10, 40))
    assert a.kappa == pytest.approx(0.6)
    assert a.kappa_low == pytest.approx(0.6 - Z_95 * 0.08)
    assert a.kappa_high == pytest.approx(0.6 + Z_95 * 0.08)
    assert (round(a.kappa_low, 4), round(a.kappa_high, 4)) == (0.4432, 0.7568)


def test_perfect_agreement_is_one_and_chance_agreement_zero():
    perfect = agreement([(1, 1), (1, 1), (0, 0), (1, 1), (0, 0)])
    assert (perfect.kappa, perfect.kappa_low, perfect.kappa_high) == (1.0, 1.0, 1.0)
    assert perfect.confusion == ((2, 0), (0, 3))
    chance = agreement(_pairs([[25, 25], [25, 25]], [0.0, 1.0]))
    assert chance.agreement == 0.5
    assert chance.kappa == pytest.approx(0.0)
    # se^2 = (0.5 - 0.25) / (100 * 0.25) = 0.01 (every weight term is 1/2 off 1/2)
    assert chance.kappa_high == pytest.approx(Z_95 * 0.1)


def test_worse_than_chance_is_negative_and_booleans_are_zero_and_one():
    a = agreement([(True, False), (False, True), (True, False), (False, True)])
    assert a.categories == (0.0, 1.0)
    assert a.kappa == pytest.approx(-1.0)
    assert a.kappa_low == -1.0  # clipped


def test_one_value_on_both_sides_leaves_kappa_undefined():
    a = agreement([(1, 1), (1, 1)])
    assert (a.agreement, a.kappa, a.kappa_low) == (1.0, None, None)


def test_quadratic_weighted_kappa_on_three_levels_by_hand():
    # people (rows) 1,2,3 against the judge: weights 1, 0.75 (one level off), 0 (two off).
    # observed = (2+3+2 + 0.75*(1+1+1)) / 10 = 0.925; people's marginals .3/.4/.3, the
    # judge's .2/.5/.3: chance = .3*.575 + .4*.875 + .3*.675 = 0.725; kappa = .2/.275 = 8/11.
    table = [[2, 1, 0], [0, 3, 1], [0, 1, 2]]
    a = agreement(_pairs(table, [1.0, 2.0, 3.0]))
    assert a.weighted and a.categories == (1.0, 2.0, 3.0)
    assert a.confusion == tuple(tuple(r) for r in table)
    assert a.agreement == pytest.approx(0.7)
    assert a.kappa == pytest.approx(8 / 11)
    assert a.kappa_low < 8 / 11 < a.kappa_high
    # unweighted, the same table: po = .7, pe = .06 + .2 + .09 = .35, kappa = 7/13
    unweighted, _ = weighted_kappa(table, [[float(i == j) for j in range(3)] for i in range(3)])
    assert unweighted == pytest.approx(7 / 13)


def test_the_interval_by_hand_on_an_uneven_table():
    # table [[1, 1], [0, 2]] on 0/1: p = .25 .25 / 0 .5; people .5 .5, judge .25 .75;
    # po = .75, pe = .125 + .375 = .5, kappa = .5. Fleiss, Cohen & Everitt's unweighted
    # form: A = sum p_ii (1 - (p_i. + p_.i)(1 - k))^2 = .25*(1 - .75*.5)^2 + .5*(1 - 1.25*.5)^2
    # = .09765625 + .0703125; B = (1 - k)^2 sum_(i!=j) p_ij (p_.i + p_j.)^2 = .25*.25*.75^2
    # = .03515625; C = (k - pe(1 - k))^2 = .0625; (A + B - C) / (n(1 - pe)^2) = .140625 / 1,
    # se = .375.
    a = agreement(_pairs([[1, 1], [0, 2]], [0.0, 1.0]))
    assert a.kappa == pytest.approx(0.5)
    assert a.kappa_low == pytest.approx(0.5 - Z_95 * 0.375)
    assert a.kappa_high == 1.0  # 0.5 + 0.735, clipped


def test_the_standard_error_matches_the_unweighted_formula_on_three_categories():
    table = [[5, 2, 1], [1, 6, 3], [2, 0, 4]]
    n, k = 24, 3
    p = [[c / n for c in row] for row in table]
    rows = [sum(r) for r in p]
    cols = [sum(p[i][j] for i in range(k)) for j in range(k)]
    po = sum(p[i][i] for i in range(k))
    pe = sum(rows[i] * cols[i] for i in range(k))
    kappa = (po - pe) / (1 - pe)
    a = sum(p[i][i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in range(k))
    b = (1 - kappa) ** 2 * sum(
        p[i][j] * (cols[i] + rows[j]) ** 2 for i in range(k) for j in range(k) if i != j
    )
    c = (kappa - pe * (1 - kappa)) ** 2
    identity = [[float(i == j) for j in range(k)] for i in range(k)]
    got, se = weighted_kappa(table, identity)
    assert got == pytest.approx(kappa)
    assert se == pytest.approx(((a + b - c) / (n * (1 - pe) ** 2)) ** 0.5)


def test_a_calibration_pairs_each_scored_result_and_counts_the_unscored():
    runs = [
        Run("a", reference={"human": {"verdict": 1}}, scores={"verdict": 1.0}),
        Run("b", reference={"human": {"verdict": False}}, scores={"verdict": 0.0}),
        Run("c", reference={"human": {"verdict": 1}}, scores={"verdict": None}),
        Run("d", reference={}, scores={"verdict": 1.0}),
    ]
    [found] = calibrate("t", "exp", runs)
    assert (found.key, found.agreement.n, found.unscored, found.agreement.kappa) == (
        "verdict",
        2,
        1,
        1.0,
    )
    with pytest.raises(UserError, match=r"example 'x': outputs.human.verdict is 'good'"):
        calibrate("t", "exp", [Run("x", reference={"human": {"verdict": "good"}})])


def test_the_labels_field_is_never_warned_about_as_unread():
    reads = [Reads("routing_accuracy", ("expected_agents",))]
    rows = [Example("a", {"question": "q"}, {"human": {"verdict": 1}})]
    assert reference_warnings(reads, rows, "data.jsonl") == []


GRAPH = """
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph


def answer(state):
    question = state["messages"][-1].content
    return {"messages": [AIMessage("yes" if "good" in question else "no", name="answerer")]}


builder = StateGraph(MessagesState)
builder.add_node("answerer", answer)
builder.add_edge(START, "answerer")
builder.add_edge("answerer", END)
graph = builder.compile()


def verdict(outputs):
    # stands in for a judge: its verdict is whether the answer says yes
    return 1.0 if outputs["final_response"] == "yes" else 0.0
"""


def _project(tmp_path: Path, labels: list[object]) -> Path:
    """A spec over five rows answered by a real graph; the judge says 1, 1, 0, 0, 1."""
    (tmp_path / "judges.py").write_text(textwrap.dedent(GRAPH))
    questions = ["good a", "good b", "bad c", "bad d", "good e"]
    rows = []
    for i, (question, label) in enumerate(zip(questions, labels, strict=True)):
        outputs = {} if label is None else {"human": {"verdict": label}}
        rows.append(
            json.dumps({"id": f"r{i}", "inputs": {"question": question}, "outputs": outputs})
        )
    (tmp_path / "data.jsonl").write_text("\n".join(rows) + "\n")
    spec = tmp_path / "judged.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets: {answerer: judges.py:graph}\n"
        "evaluators:\n  - {name: verdict, type: custom, target: judges.py:verdict}\n"
    )
    return spec


def test_calibrate_reads_the_latest_run_and_prints_kappa_and_the_confusion(tmp_path, invoke):
    # people 1, 1, 0, 0, 0 against the judge 1, 1, 0, 0, 1: agreement 4/5; people's
    # marginals .6/.4, the judge's .4/.6, chance .48, kappa = .32/.52 = 8/13 = 0.615.
    spec = _project(tmp_path, [1, True, 0, False, 0])
    db = tmp_path / "db"
    ran = invoke("run", spec, "--store", db, "--json", tmp_path / "out.json")
    assert ran.exit_code == 0, ran.text
    result = invoke("judge", "calibrate", spec, "--store", db)
    assert result.exit_code == 0, result.text
    lines = result.stdout.splitlines()
    assert lines[0].startswith("answerer (")
    assert lines[0].split(") ", 1)[1].startswith("verdict: n=5, agreement 80%, kappa 0.62 [")
    assert lines[1].split() == ["people\\judge", "0", "1"]
    assert lines[2].split() == ["0", "2", "1"]
    assert lines[3].split() == ["1", "0", "2"]
    exported = json.loads((tmp_path / "out.json").read_text())["experiments"][0]
    [calibration] = exported["calibration"]
    assert calibration["key"] == "verdict" and calibration["n"] == 5
    assert calibration["kappa"] == pytest.approx(8 / 13)
    assert calibration["confusion"] == [[2, 1], [0, 2]]
    assert calibration["categories"] == [0.0, 1.0] and calibration["weighted"] is None
    low, high = calibration["kappa_ci"]
    assert low < 8 / 13 < high


def test_calibrate_with_no_labelled_row_is_one_line_and_exit_2_and_json_has_no_key(
    tmp_path, invoke
):
    spec = _project(tmp_path, [None] * 5)
    db = tmp_path / "db"
    ran = invoke("run", spec, "--store", db, "--json", tmp_path / "out.json")
    assert ran.exit_code == 0, ran.text
    assert "calibration" not in json.loads((tmp_path / "out.json").read_text())["experiments"][0]
    result = invoke("judge", "calibrate", spec, "--store", db)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.text.startswith("error: no row of judged-answerer-")
    assert "has outputs.human labels to check a judge against" in result.text
    assert len(result.text.strip().splitlines()) == 1


def test_calibrate_before_any_run_says_to_run_first(tmp_path, invoke):
    spec = _project(tmp_path, [1, 1, 0, 0, 0])
    (tmp_path / "db").parent.mkdir(exist_ok=True)
    result = invoke("judge", "calibrate", spec, "--store", tmp_path / "db")
    assert result.exit_code == 2
    assert "agenteval run" in result.text


def test_a_three_level_judge_reads_as_weighted_kappa_with_its_confusion():
    from agenteval_cli.report.calibration import calibration_lines
    from agenteval_cli.results.calibration import Calibration

    table = [[2, 1, 0], [0, 3, 1], [0, 1, 2]]
    found = Calibration("t", "exp-1", "quality", agreement(_pairs(table, [1.0, 2.0, 3.0])), 2)
    lines = calibration_lines([found])
    assert lines[0].startswith("t (exp-1) quality: n=10, agreement 70%, weighted kappa 0.73 [")
    assert lines[0].endswith("], 2 labelled result(s) unscored")
    assert [line.split() for line in lines[1:]] == [
        ["people\\judge", "1", "2", "3"],
        ["1", "2", "1", "0"],
        ["2", "0", "3", "1"],
        ["3", "0", "1", "2"],
    ]


def test_calibrate_an_experiment_named_and_a_misspelt_label_key_is_a_note(tmp_path, invoke):
    spec = _project(tmp_path, [1, 1, 0, 0, 1])
    rows = (tmp_path / "data.jsonl").read_text().splitlines()
    rows[4] = rows[4].replace('"verdict"', '"verdikt"')
    (tmp_path / "data.jsonl").write_text("\n".join(rows) + "\n")
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    result = invoke("judge", "calibrate", spec, "--store", db, "--experiment", "answerer")
    assert result.exit_code == 0, result.text
    # r4 labels "verdikt": four labelled pairs, all agreeing (1, 1, 0, 0 against 1, 1, 0, 0)
    assert "verdict: n=4, agreement 100%, kappa 1.00 [1.00, 1.00]" in result.stdout
    assert "rows label 'verdikt', which no result of it scored" in result.stderr


def _gated(spec: Path, min_kappa: float) -> Path:
    text = (
        spec.read_text() + f"thresholds: {{verdict: '>= 0'}}\nmin_kappa: {{verdict: {min_kappa}}}\n"
    )
    spec.write_text(text)
    return spec


@pytest.mark.parametrize(("least", "code"), [(0.6, 0), (0.7, 3)])
def test_the_gate_refuses_a_judge_below_min_kappa_with_one_line_and_exit_3(
    tmp_path, invoke, least, code
):
    spec = _gated(_project(tmp_path, [1, True, 0, False, 0]), least)  # kappa 8/13 = 0.615
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == code, result.text
    if code == 0:
        assert "gate passed" in result.stdout
        return
    assert result.text.count("error:") == 1
    assert result.text.split("error: ", 1)[1].startswith(
        "the gate refuses judges people have not confirmed: answerer: 'verdict' agrees "
        "with people at kappa 0.62 over 5 labelled result(s), below min_kappa 0.7"
    )
    assert "gate passed" not in result.text


def test_the_gate_refuses_a_judge_with_min_kappa_that_no_row_labels(tmp_path, invoke):
    spec = _gated(_project(tmp_path, [None] * 5), 0.5)
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 3
    assert "answerer: no row labels 'verdict' (outputs.human)" in result.text


def test_min_kappa_on_a_metric_no_evaluator_gives_is_refused_at_its_line(tmp_path, invoke):
    spec = _project(tmp_path, [1, 1, 0, 0, 0])
    spec.write_text(spec.read_text() + "min_kappa: {verdikt: 0.6}\n")
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 2
    assert "unknown metric 'verdikt'" in result.text


def test_the_streamed_export_with_calibration_is_the_whole_dump(tmp_path, invoke):
    from agenteval_cli.report.json_report import experiment_json, strict_json, write_json
    from agenteval_cli.store.db import Store

    spec = _project(tmp_path, [1, True, 0, None, 0])  # r3 unlabelled: four pairs
    assert invoke("run", spec, "--store", tmp_path / "db").exit_code == 0
    with Store(tmp_path / "db") as store:
        ids = [e.id for e in store.experiments()]
        write_json(tmp_path / "r.json", store, ids)
        whole = {"experiments": [experiment_json(store, i) for i in ids]}
    text = (tmp_path / "r.json").read_text()
    assert text == strict_json(whole, indent=2) + "\n"
    [calibration] = json.loads(text)["experiments"][0]["calibration"]
    # people 1, 1, 0, 0 against the judge 1, 1, 0, 1: po .75, pe .5*.25 + .5*.75 = .5, k .5
    assert (calibration["n"], calibration["agreement"]) == (4, 0.75)
    assert calibration["kappa"] == pytest.approx(0.5)
    assert calibration["confusion"] == [[1, 1], [0, 2]]


def test_a_conversations_turns_are_labelled_under_outputs_turns():
    from agenteval_cli.core.records import Score, Trace, Turn

    def turn(score: float | None) -> Turn:
        return Turn(inputs={}, outputs={}, trace=Trace(), scores=[Score("turn_ok", score)])

    run = Run(
        "c",
        reference={
            "turns": [{"human": {"turn_ok": 1}}, {}, {"human": {"turn_ok": 0}}],
            "human": {"goal": True},
        },
        scores={"goal": 1.0},
        turns=[turn(1.0), turn(0.0), turn(1.0)],
    )
    found = {c.key: c.agreement for c in calibrate("t", "exp", [run])}
    assert found["goal"].confusion == ((1,),)
    # turn 1: person 1, judge 1; turn 3: person 0, judge 1 (turn 2 unlabelled)
    assert found["turn_ok"].confusion == ((0, 1), (0, 1))
    assert found["turn_ok"].agreement == 0.5
    bad = Run("c", reference={"turns": [{"human": {"turn_ok": "yes"}}]}, turns=[turn(1.0)])
    with pytest.raises(UserError, match=r"example 'c' \(outputs.turns\[0\]\): outputs.human"):
        calibrate("t", "exp", [bad])


def _run_with_reports(invoke, spec: Path, store: Path, out: Path):
    """``agenteval run SPEC`` writing its Markdown and HTML reports into ``out``."""
    return invoke(
        "run", spec, "--store", store, "--markdown", out / "r.md", "--html", out / "r.html"
    )


def test_the_run_table_and_reports_show_the_judge_beside_its_figures(tmp_path, invoke):
    # the five rows of the first test: kappa 8/13, agreement 80%, two values, unweighted
    spec = _project(tmp_path, [1, True, 0, False, 0])
    out = tmp_path / "out"
    result = _run_with_reports(invoke, spec, tmp_path / "db", out)
    assert result.exit_code == 0, result.text
    lines = result.stdout.splitlines()
    at = lines.index("  judges against people (outputs.human):")
    assert lines[at + 1].startswith("    answerer verdict: n=5, agreement 80%, kappa 0.62 [")
    markdown = (out / "r.md").read_text()
    assert "| `answerer` | verdict | 5 | 80% | 0.62 [" in markdown
    assert "| none (two values) | 0 |" in markdown
    page = (out / "r.html").read_text()
    assert '<table class="calibration">' in page and "kappa-confusion" in page


def _docs_blocks() -> list[list[str]]:
    """The code blocks of docs/evaluators.md, each as its lines (less its fence's indent)."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "evaluators.md").read_text()
    blocks: list[list[str]] = []
    current: list[str] | None = None
    indent = 0  # a block inside a list item is indented as its fence is
    for line in page.splitlines():
        if line.strip().startswith("```"):
            if current is None:
                current, indent = [], len(line) - len(line.lstrip())
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append(line[indent:])
    return blocks


def test_the_docs_show_what_calibrate_the_run_table_and_markdown_print(tmp_path, invoke):
    """docs/evaluators.md's samples are this project's output (the experiment id aside)."""
    spec = _project(tmp_path, [1, True, 0, False, 0])
    db, markdown = tmp_path / "db", tmp_path / "r.md"
    ran = invoke("run", spec, "--store", db, "--markdown", markdown)
    assert ran.exit_code == 0, ran.text
    calibrated = invoke("judge", "calibrate", spec, "--store", db)
    assert calibrated.exit_code == 0, calibrated.text
    blocks = _docs_blocks()
    [shown] = [b for b in blocks if b and b[0] == "$ agenteval judge calibrate judged.yaml"]
    ids = re.compile(r"-[0-9a-f]{8}\)")
    assert [ids.sub("-…)", line) for line in shown[1:]] == [
        ids.sub("-…)", line) for line in calibrated.stdout.splitlines()
    ]
    [table] = [b for b in blocks if b and b[0].strip() == "judges against people (outputs.human):"]
    assert "\n".join(table) in ran.stdout
    [rows] = [b for b in blocks if b and b[0].strip().startswith("| target | judge |")]
    assert "\n".join(line.strip() for line in rows) in markdown.read_text()


def test_a_run_without_labels_shows_no_judge_block(tmp_path, invoke):
    spec = _project(tmp_path, [None] * 5)
    out = tmp_path / "out"
    result = invoke("run", spec, "--store", tmp_path / "db", "--markdown", out / "r.md")
    assert result.exit_code == 0, result.text
    assert "judges against people" not in result.stdout
    assert "Judges against people" not in (out / "r.md").read_text()


def test_a_malformed_label_is_said_in_the_table_and_reports_which_are_still_written(
    tmp_path, invoke
):
    spec = _project(tmp_path, [1, "yes", 0, 0, 0])
    out = tmp_path / "out"
    result = _run_with_reports(invoke, spec, tmp_path / "db", out)
    assert result.exit_code == 0, result.text
    said = "example 'r1': outputs.human.verdict is 'yes', not a number or true/false"
    lines = result.stdout.splitlines()
    at = lines.index("  judges against people (outputs.human):")
    assert lines[at + 1].startswith(f"    answerer: {said}")
    shown = said.replace("'", "&#x27;")
    assert f"> **Warning:** answerer: {shown}" in (out / "r.md").read_text()
    page = (out / "r.html").read_text()
    in_page = said.replace("'", "&#39;")
    assert f'<p class="warning">⚠ answerer: {in_page}' in page


def test_the_run_table_reads_only_the_labelled_rows(tmp_path, invoke):
    # r3 unlabelled: people 1, 1, 0, 0 against the judge 1, 1, 0, 1 (r4): kappa .5
    spec = _project(tmp_path, [1, True, 0, None, 0])
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 0, result.text
    assert "    answerer verdict: n=4, agreement 75%, kappa 0.50 [" in result.stdout
