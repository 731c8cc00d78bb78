import hashlib
import json
from dataclasses import astuple
from pathlib import Path

import pytest

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example
from agenteval_cli.data import examples as datasets
from agenteval_cli.data.examples import (
    SUPPORTED_SUFFIXES,
    dataset_hash,
    example_id,
    iter_examples,
    load_examples,
)

DATA = Path(__file__).parent / "data" / "datasets"

ROUTING = [
    Example(
        id="billing-1",
        inputs={"question": "I need to change my payment method to a credit card."},
        outputs={"expected_agents": ["billing"], "must_mention": ["payment", "credit card"]},
        metadata={"difficulty": "easy"},
    ),
    Example(
        id="2",
        inputs={"question": "My SSO integration is returning error code SAML-401."},
        outputs={"expected_agents": ["tech_support"], "must_mention": ["SSO", "SAML"]},
    ),
    Example(
        id="8985229e13955714",
        inputs={"question": "I want to upgrade to Enterprise and also fix my broken SSO."},
        outputs={
            "expected_agents": ["tech_support", "account"],
            "must_mention": ["SSO", "upgrade"],
        },
    ),
]


def content(examples: list[Example]) -> list[tuple]:
    """Everything but the row number, which depends on the file's layout."""
    return [astuple(example)[:-1] for example in examples]


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(UserError) as caught:
        load_examples(path)
    return str(caught.value)


# --- the four formats ------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["jsonl", "json", "yaml", "csv"])
def test_every_format_reads_the_same_examples(suffix):
    assert content(load_examples(DATA / f"routing.{suffix}")) == content(ROUTING)


@pytest.mark.parametrize(
    ("suffix", "rows"),
    [("jsonl", [1, 2, 4]), ("json", [1, 2, 3]), ("yaml", [1, 2, 3]), ("csv", [2, 3, 4])],
)
def test_row_is_the_line_for_jsonl_and_csv_and_the_position_otherwise(suffix, rows):
    assert [example.row for example in load_examples(DATA / f"routing.{suffix}")] == rows


def test_supported_suffixes():
    assert SUPPORTED_SUFFIXES == (".jsonl", ".json", ".yaml", ".yml", ".csv")


def test_yml_suffix_and_plain_list(tmp_path):
    path = write(tmp_path, "rows.yml", "- inputs: {question: hi}\n")
    assert load_examples(path) == [Example(id="930e351559a2e4ab", inputs={"question": "hi"}, row=1)]


def test_json_examples_wrapper(tmp_path):
    path = write(tmp_path, "rows.json", '{"examples": [{"inputs": {"question": "hi"}}]}')
    assert [example.id for example in load_examples(path)] == ["930e351559a2e4ab"]


def test_yaml_dates_stay_strings(tmp_path):
    path = write(tmp_path, "rows.yaml", "- inputs: {question: hi, since: 2024-05-01}\n")
    assert load_examples(path)[0].inputs == {"question": "hi", "since": "2024-05-01"}


def test_iter_examples_streams_jsonl(tmp_path):
    path = write(tmp_path, "rows.jsonl", '{"inputs": {"q": 1}}\n{"inputs": {"q": 2}}\nnot json\n')
    examples = iter_examples(path)
    assert next(examples).inputs == {"q": 1}
    assert next(examples).inputs == {"q": 2}
    with pytest.raises(UserError, match=r"rows\.jsonl:3: invalid JSON"):
        next(examples)


# --- ids -------------------------------------------------------------------------------


def test_content_id_is_a_stable_hash():
    assert example_id({"question": "hi"}, {}) == "930e351559a2e4ab"
    expected = hashlib.sha256(b'{"inputs":{"question":"hi"},"outputs":{}}').hexdigest()[:16]
    assert example_id({"question": "hi"}, {}) == expected


def test_content_id_ignores_key_order_and_metadata(tmp_path):
    path = write(
        tmp_path,
        "rows.jsonl",
        '{"inputs": {"b": 2, "a": 1}, "metadata": {"x": 1}}\n{"inputs": {"a": 1, "b": 3}}\n',
    )
    first, second = load_examples(path)
    assert first.id == example_id({"a": 1, "b": 2}, {})
    assert first.id != second.id


def test_content_id_keeps_non_ascii_text(tmp_path):
    path = write(tmp_path, "rows.jsonl", '{"inputs": {"question": "caf\\u00e9"}}\n')
    canonical = '{"inputs":{"question":"café"},"outputs":{}}'.encode()
    assert load_examples(path)[0].id == hashlib.sha256(canonical).hexdigest()[:16]


def test_integer_id_becomes_a_string(tmp_path):
    path = write(tmp_path, "rows.jsonl", '{"id": 7, "inputs": {"q": 1}}\n')
    assert load_examples(path)[0].id == "7"


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        pytest.param(
            "rows.jsonl",
            '{"id": "a", "inputs": {"q": 1}}\n\n{"id": "a", "inputs": {"q": 2}}\n',
            ":3: duplicate id 'a' (same as line 1) (give each row a unique 'id')",
            id="duplicate-id-names-both-rows",
        ),
        pytest.param(
            "rows.json",
            '[{"inputs": {"q": 1}}, {"inputs": {"q": 1}}]',
            " row 2: duplicate example (same as row 1) (remove one of the identical rows)",
            id="duplicate-content-names-both-rows",
        ),
        pytest.param(
            "rows.jsonl",
            '{"id": true, "inputs": {"q": 1}}\n',
            ":1: 'id' must be a non-empty string or an integer, got true "
            "(or leave 'id' out to use a content hash)",
            id="bad-id-type",
        ),
    ],
)
def test_a_bad_id_is_one_line_naming_the_row(tmp_path, name, data, message):
    path = write(tmp_path, name, data)
    assert error_of(path) == f"{path}{message}"


# --- row errors ------------------------------------------------------------------------


def test_reference_outputs_is_an_alias_of_outputs(tmp_path):
    path = write(tmp_path, "rows.jsonl", '{"inputs": {"q": 1}, "reference_outputs": {"a": 1}}\n')
    assert load_examples(path)[0].outputs == {"a": 1}


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"q": 1}, "outputs": {}, "reference_outputs": {}}\n',
            ":1: row has both 'outputs' and 'reference_outputs' "
            "(they are the same thing; keep one)",
            id="outputs-and-reference-outputs-together",
        ),
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"q": 1}, "output": {}}\n',
            ":1: unknown key 'output' (did you mean 'outputs'?)",
            id="unknown-row-key-suggests-the-right-one",
        ),
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"q": 1}, "zzz": {}}\n',
            ":1: unknown key 'zzz' "
            "(allowed keys: id, inputs, outputs, reference_outputs, metadata)",
            id="unknown-row-key-lists-the-keys",
        ),
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"q": 1}}\n{"inputs": {"q": 1,}}\n',
            ":2: invalid JSON: Expecting property name enclosed in double quotes (column 20) "
            "(each line must be one complete JSON object)",
            id="invalid-json-line-names-line-and-column",
        ),
        pytest.param(
            "rows.json",
            '[\n  {"inputs": {}}\n  {"inputs": {}}\n]',
            ":3: invalid JSON: Expecting ',' delimiter (column 3) "
            "(the file must be one JSON list of rows)",
            id="invalid-json-file-names-line-and-column",
        ),
        pytest.param(
            "rows.jsonl",
            "[1, 2]\n",
            ':1: row is not an object, got a list (write {"inputs": {...}, "outputs": {...}})',
            id="row-not-an-object",
        ),
        pytest.param(
            "rows.jsonl",
            '{"outputs": {"a": 1}}\n',
            ':1: row has no \'inputs\' (add "inputs": {"question": "..."})',
            id="missing-inputs",
        ),
        pytest.param(
            "rows.yaml",
            "- inputs: {q: 1}\n- inputs: hello\n",
            ":2 row 2: 'inputs' must be an object, got 'hello' "
            '(write "inputs": {"field": value, ...})',
            id="inputs-not-an-object",
        ),
        pytest.param(
            "rows.yaml",
            "- inputs: {q: !!set {a: null}}\n",
            ":1 row 1: row holds a value JSON cannot represent "
            "(use only strings, numbers, booleans, null, lists and mappings)",
            id="yaml-value-json-cannot-hold",
        ),
        pytest.param(
            "rows.yaml",
            "- inputs: {q: 1\n",
            ":2: invalid YAML at column 1: expected ',' or '}', but got '<stream end>' "
            "(check the indentation, colons and quotes there)",
            id="yaml-syntax-error",
        ),
        pytest.param(
            "rows.json",
            '{"inputs": {"q": 1}}',
            ": expected a list of rows, got a single row (wrap it in a list)",
            id="single-row-instead-of-a-list",
        ),
        pytest.param(
            "rows.yaml",
            "example:\n  - inputs: {q: 1}\n",
            ": unknown top-level key 'example' (did you mean 'examples'?)",
            id="unknown-top-level-key",
        ),
        pytest.param(
            "rows.josnl",
            "",
            ": unknown dataset format '.josnl' (did you mean '.jsonl'?)",
            id="unknown-format",
        ),
        # conversation rows: inputs.turns, and outputs.turns beside it
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"turns": ["hi"]}}\n{"inputs": {"turns": []}}\n',
            ":2: inputs.turns must be a non-empty list of turns, got an empty list "
            '(give strings, mappings of input fields, or {"resume": value})',
            id="conversation-without-turns",
        ),
        pytest.param(
            "rows.yaml",
            "- inputs: {turns: [hi]}\n- inputs: {turns: hello}\n",
            ":2 row 2: inputs.turns must be a non-empty list of turns, got 'hello' "
            '(give strings, mappings of input fields, or {"resume": value})',
            id="conversation-turns-not-a-list",
        ),
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"turns": ["hi", "  "]}}\n',
            ":1: inputs.turns[2] is an empty message "
            "(write what the user says, or leave the turn out)",
            id="conversation-empty-message",
        ),
        pytest.param(
            "rows.csv",
            'id,turns\nc1,"[""hi"", 3]"\n',
            ":2: inputs.turns[2] is 3 "
            '(give a string, a mapping of input fields, or {"resume": value})',
            id="conversation-turn-neither-text-nor-mapping",
        ),
        pytest.param(
            "rows.jsonl",
            '{"id": 7, "inputs": {"turns": ["hi", {}]}}\n',
            ":1: inputs.turns[2] is an empty object "
            '(give a string, a mapping of input fields, or {"resume": value})',
            id="conversation-empty-turn-in-a-row-with-an-integer-id",
        ),
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"turns": ["hi", {"resume": "yes", "question": "and?"}]}}\n',
            ':1: inputs.turns[2] mixes "resume" with other fields (give resume alone in its turn)',
            id="conversation-resume-with-other-fields",
        ),
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"turns": [{"resume": "yes"}, "hi"]}}\n',
            ":1: inputs.turns[1] is a resume (start the conversation with a message)",
            id="conversation-starting-with-a-resume",
        ),
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"turns": ["hi"], "user": "u1"}}\n',
            ":1: inputs has user beside turns (put each turn's fields in its turn)",
            id="conversation-inputs-beside-turns",
        ),
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"turns": ["a", "b"]}, "outputs": {"turns": [{}]}}\n',
            ":1: outputs.turns has 1 entry for 2 turns "
            "(give one per turn, {} for a turn with no references)",
            id="conversation-references-for-fewer-turns",
        ),
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"turns": ["a"]}, "outputs": {"turns": {"must_mention": ["x"]}}}\n',
            ":1: outputs.turns must be a list (give one mapping of references per turn)",
            id="conversation-references-not-a-list",
        ),
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"turns": ["a", "b"]}, "outputs": {"turns": [{}, "billing"]}}\n',
            ":1: outputs.turns[2] must be an object of references, got 'billing' "
            "(write {} for a turn with no references)",
            id="conversation-turn-references-not-an-object",
        ),
        pytest.param(
            "rows.jsonl",
            '{"inputs": {"question": "a"}, "outputs": {"turns": [{}]}}\n',
            ":1: outputs.turns is given but inputs.turns is not (add the turns to inputs)",
            id="turn-references-on-a-single-turn-row",
        ),
    ],
)
def test_a_bad_row_or_file_is_one_line_naming_where(tmp_path, name, data, message):
    path = write(tmp_path, name, data)
    assert error_of(path) == f"{path}{message}"


def test_a_conversation_row_is_read_as_it_is_and_its_id_hashes_its_turns(tmp_path):
    first = {"turns": ["hi", {"question": "and my invoice?"}, {"resume": True}]}
    second = {"turns": ["hi", {"question": "and my plan?"}, {"resume": True}]}
    references = {"turns": [{}, {"expected_agents": ["billing"]}, {}], "must_mention": ["x"]}
    path = write(
        tmp_path,
        "rows.jsonl",
        json.dumps({"inputs": first, "outputs": references})
        + "\n"
        + json.dumps({"inputs": second}),
    )
    one, two = load_examples(path)
    assert (one.inputs, one.outputs) == (first, references)
    canonical = json.dumps(
        {"inputs": first, "outputs": references}, sort_keys=True, separators=(",", ":")
    )
    assert one.id == hashlib.sha256(canonical.encode()).hexdigest()[:16]
    assert two.id == example_id(second, {}) != one.id  # only a later turn differs


@pytest.mark.parametrize(
    ("name", "text", "hint"),
    [
        (
            "rows.jsonl",
            "\n\n",
            'add one JSON object per line, e.g. {"inputs": {"question": "..."}}',
        ),
        ("rows.json", "[]", 'add a list of rows, e.g. [{"inputs": {"question": "..."}}]'),
        ("rows.yaml", "# nothing yet\n", "add a list of rows, e.g. '- inputs: {question: ...}'"),
        ("rows.csv", "question\n", "add a header line and one line per example"),
        ("rows.csv", "", "add a header line and one line per example"),
    ],
)
def test_empty_file(tmp_path, name, text, hint):
    path = write(tmp_path, name, text)
    assert error_of(path) == f"{path}: contains no examples ({hint})"


def test_missing_file(tmp_path):
    path = tmp_path / "nope.jsonl"
    assert error_of(path) == f"{path}: dataset file not found (check the path)"


# --- encodings -------------------------------------------------------------------------

BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("rows.jsonl", b'{"inputs": {"question": "hi"}}\r\n'),
        ("rows.json", b'[{"inputs": {"question": "hi"}}]'),
        ("rows.yaml", b"- inputs: {question: hi}\n"),
        ("rows.csv", b"question\r\nhi\r\n"),
    ],
)
def test_utf8_bom_is_ignored(tmp_path, name, data):
    examples = load_examples(write(tmp_path, name, BOM + data))
    assert [(example.id, example.inputs) for example in examples] == [
        ("930e351559a2e4ab", {"question": "hi"})
    ]


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        pytest.param(
            "rows.jsonl",
            b'{"inputs": {"q": "ok"}}\n{"inputs": {"q": "\xff"}}\n',
            ":2: not valid UTF-8 (byte 0xff at column 19) (save the file as UTF-8)",
            id="jsonl",
        ),
        pytest.param(
            "rows.json",
            b'[\n{"inputs": {"q": "\xc3\xa9\xff"}}]\n',
            ":2: not valid UTF-8 (byte 0xff at column 20) (save the file as UTF-8)",
            id="json",
        ),
        pytest.param(
            "rows.csv",
            BOM + b"q\xff\n",
            ":1: not valid UTF-8 (byte 0xff at column 2) (save the file as UTF-8)",
            id="csv-after-a-bom-counts-columns-without-it",
        ),
    ],
)
def test_an_undecodable_byte_names_its_line_and_column(tmp_path, name, data, message):
    path = write(tmp_path, name, data)
    assert error_of(path) == f"{path}{message}"


# --- the CSV rule ----------------------------------------------------------------------


def test_csv_cells_starting_with_bracket_or_brace_are_json(tmp_path):
    path = write(
        tmp_path,
        "rows.csv",
        "question,outputs.expected_agents,outputs.rubric,metadata.tags\n"
        'hi,"[""billing"", ""account""]","{""tone"": ""calm""}"," [1, 2]"\n',
    )
    example = load_examples(path)[0]
    assert example.outputs == {
        "expected_agents": ["billing", "account"],
        "rubric": {"tone": "calm"},
    }
    assert example.metadata == {"tags": [1, 2]}


def test_csv_other_cells_are_strings_and_empty_cells_are_left_out(tmp_path):
    path = write(tmp_path, "rows.csv", "id,question,inputs.count,outputs.answer\n,hi,3,\n")
    [example] = load_examples(path)
    assert example.inputs == {"question": "hi", "count": "3"}
    assert example.outputs == {}
    assert example.id == example_id({"question": "hi", "count": "3"}, {})


def test_csv_reference_outputs_prefix_and_quoted_multiline_cell(tmp_path):
    path = write(
        tmp_path, "rows.csv", 'question,reference_outputs.answer\n"two\nlines",yes\nb,no\n'
    )
    examples = load_examples(path)
    assert [(e.inputs["question"], e.outputs, e.row) for e in examples] == [
        ("two\nlines", {"answer": "yes"}, 2),
        ("b", {"answer": "no"}, 4),
    ]


def test_csv_blank_lines_are_skipped_but_counted(tmp_path):
    path = write(tmp_path, "rows.csv", "question\n\na\n,\nb\n")
    assert [(e.inputs["question"], e.row) for e in load_examples(path)] == [("a", 3), ("b", 5)]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(
            "question,outputs.answer\nhi,yes\nhi, again,yes\n",
            ":3: row has 3 cells but the header has 2 columns (quote cells that contain commas)",
            id="ragged-row",
        ),
        pytest.param(
            "question,outputs.agents\nhi,[billing]\n",
            ":2: column 'outputs.agents': invalid JSON: Expecting value (column 2) "
            '(a cell starting with [ or { is JSON, e.g. ["billing", "account"])',
            id="invalid-json-cell",
        ),
        pytest.param(
            "question,output.answer\nhi,yes\n",
            ":1: column 'output.answer' has unknown prefix 'output' (did you mean 'outputs'?)",
            id="unknown-prefix",
        ),
        pytest.param(
            "question,outputs\nhi,yes\n",
            ":1: column 'outputs' needs a field name (outputs.<field>)",
            id="part-without-field",
        ),
        pytest.param(
            "question,inputs.question\nhi,yes\n",
            ":1: columns 'question' and 'inputs.question' set the same field (keep one of them)",
            id="two-columns-for-one-field",
        ),
        pytest.param("question,,x\nhi,1,2\n", ":1: column 2 has no name", id="unnamed-column"),
        pytest.param(
            "id,outputs.answer\na,yes\n",
            ":2: row has no inputs (fill an inputs column)",
            id="row-without-inputs",
        ),
        pytest.param(
            'question\nok\n"never closed\nmore\n',
            ":3: invalid CSV: unexpected end of data "
            '(close quoted cells, and write a quote inside one as "")',
            id="unclosed-quote",
        ),
    ],
)
def test_a_bad_csv_is_one_line_naming_where(tmp_path, data, message):
    path = write(tmp_path, "rows.csv", data)
    assert error_of(path) == f"{path}{message}"


# --- hashing ---------------------------------------------------------------------------


def test_dataset_hash_is_sha256_of_the_bytes():
    path = DATA / "routing.csv"
    assert dataset_hash(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_dataset_hash_of_missing_file(tmp_path):
    with pytest.raises(UserError) as caught:
        dataset_hash(tmp_path / "nope.jsonl")
    assert (
        str(caught.value)
        == f"{tmp_path / 'nope.jsonl'}: cannot read dataset: No such file or directory"
    )


def _rows(path: Path, count: int) -> None:
    path.write_text(
        "".join(f'{{"id": "e{i}", "inputs": {{"question": "q{i}"}}}}\n' for i in range(count))
    )


def test_a_large_jsonl_file_is_read_again_per_pass_and_must_not_change(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "HELD_EXAMPLES", 2)  # three rows: more than are held
    path = tmp_path / "rows.jsonl"
    _rows(path, 3)
    examples = datasets.open_examples(path)
    assert len(examples) == 3 and examples[2].id == "e2"
    assert [e.id for e in examples] == [e.id for e in examples] == ["e0", "e1", "e2"]
    path.write_text(path.read_text().replace("q1", "changed"))
    with pytest.raises(datasets.DatasetChanged, match="changed during the run"):
        list(examples)


def test_a_small_jsonl_file_is_held_from_its_check(tmp_path):
    path = tmp_path / "rows.jsonl"
    _rows(path, 3)
    examples = datasets.open_examples(path, limit=2)
    path.unlink()  # held: iterating again does not read the file
    assert [e.inputs["question"] for e in examples] == ["q0", "q1"]
    assert examples[-1].id == "e1" and len(examples) == 2


# --- a file changed during a run, and the limits every format shares ---------------------


def test_lines_appended_during_a_run_are_not_read_and_the_change_is_known(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "HELD_EXAMPLES", 2)
    path = tmp_path / "rows.jsonl"
    _rows(path, 3)
    examples = datasets.open_examples(path)
    assert not examples.changed()
    with path.open("a") as handle:
        handle.write('{"id": "late", "inputs": {"question": "appended"}}\n')
    assert [e.id for e in examples] == ["e0", "e1", "e2"]  # the rows it was checked with
    assert len(examples) == 3 and examples.changed()


def test_a_changed_block_is_refused_before_any_of_its_rows_is_used(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "HELD_EXAMPLES", 2)
    monkeypatch.setattr(datasets, "_BLOCK", 64)  # each row is 44 bytes: rows span blocks
    path = tmp_path / "rows.jsonl"
    _rows(path, 6)
    examples = datasets.open_examples(path)
    seen = []
    with pytest.raises(datasets.DatasetChanged) as caught:
        for example in examples:
            seen.append(example.inputs["question"])
            if len(seen) == 1:  # the last row changes while the first is being run
                path.write_text(path.read_text().replace('"q5"', '"zz"'))
    assert 1 <= len(seen) < 6 and seen == [f"q{i}" for i in range(len(seen))]
    assert str(caught.value) == (
        f"{path}: the dataset file changed during the run; the results so far are kept "
        "(restore the file and run again with --resume to finish, or run without --resume "
        "to start over)"
    )


def nested_row(levels: int) -> str:
    """A JSON row nested ``levels`` deep: the row, its inputs, then lists."""
    lists = levels - 2
    return '{"inputs": {"question": ' + "[" * lists + "]" * lists + "}}"


def nested_file(tmp_path: Path, suffix: str, levels: int) -> Path:
    lists = levels - 2
    cell = "[" * lists + "]" * lists
    text = {
        "jsonl": nested_row(levels) + "\n",
        "json": "[" + nested_row(levels) + "]",
        "yaml": "examples:\n  - inputs: {question: " + cell + "}\n",
        "csv": f"id,question\nrow,{cell}\n",
    }[suffix]
    return write(tmp_path, f"deep.{suffix}", text)


@pytest.mark.parametrize(
    ("suffix", "where"),
    [("jsonl", ":1:"), ("json", " row 1:"), ("yaml", ":2:"), ("csv", ":2:")],
)
def test_rows_nested_up_to_100_levels_are_read_and_deeper_ones_refused(tmp_path, suffix, where):
    from agenteval_cli.data.readers import MAX_DEPTH

    assert MAX_DEPTH == 100
    deepest = load_examples(nested_file(tmp_path, suffix, 100))
    assert len(deepest) == 1
    path = nested_file(tmp_path, suffix, 101)
    assert (
        error_of(path) == f"{path}{where} row is nested deeper than 100 levels (flatten the data)"
    )


@pytest.mark.parametrize(
    ("suffix", "levels", "message"),
    [
        ("jsonl", 1000, ":1: row is nested deeper than 100 levels"),
        ("json", 1000, ": data nested deeper than 100 levels"),
        ("yaml", 500, ":2: row is nested deeper than 100 levels"),
        ("csv", 1000, ":2: row is nested deeper than 100 levels"),
    ],
)
def test_nesting_deeper_than_the_stack_is_refused_not_a_recursion_error(
    tmp_path, suffix, levels, message
):
    path = nested_file(tmp_path, suffix, levels)
    assert error_of(path) == f"{path}{message} (flatten the data)"


def sized_file(tmp_path: Path, suffix: str, size: int) -> Path:
    """A two-row file whose second row holds a ``size``-character question."""
    text = "x" * size
    body = {
        "jsonl": f'{{"inputs": {{"question": "a"}}}}\n{{"inputs": {{"question": "{text}"}}}}\n',
        "json": f'[{{"inputs": {{"question": "a"}}}}, {{"inputs": {{"question": "{text}"}}}}]',
        "yaml": f"- inputs: {{question: a}}\n- inputs: {{question: {text}}}\n",
        "csv": f"question\na\n{text}\n",
    }[suffix]
    return write(tmp_path, f"big.{suffix}", body)


@pytest.mark.parametrize(
    ("suffix", "where"),
    [("jsonl", ":2:"), ("json", " row 2:"), ("yaml", ":2 row 2:"), ("csv", ":3:")],
)
def test_one_row_size_limit_for_every_format(tmp_path, monkeypatch, suffix, where):
    from agenteval_cli.data import readers as dataset_readers

    monkeypatch.setattr(dataset_readers, "MAX_ROW_BYTES", 1024)
    fits = load_examples(sized_file(tmp_path, suffix, 900))
    assert len(fits[1].inputs["question"]) == 900
    path = sized_file(tmp_path, suffix, 1100)
    assert error_of(path) == (
        f"{path}{where} row is larger than 0 MiB (keep each row under the limit; give a large "
        "document to the target by its path)"
    )


def test_a_csv_cell_over_128_kib_is_read_and_a_row_over_16_mib_refused(tmp_path):
    from agenteval_cli.data.readers import MAX_ROW_BYTES

    assert MAX_ROW_BYTES == 16 * 1024 * 1024
    cell = "y" * (200 * 1024)  # over csv's own 128 KiB limit
    read = load_examples(write(tmp_path, "wide.csv", f"question\n{cell}\n"))
    assert read[0].inputs["question"] == cell
    # a quoted cell of many lines counts as one row
    lines = ("z" * 1023 + "\n") * (16 * 1024 + 1)
    path = write(tmp_path, "tall.csv", f'question\na\n"{lines}"\n')
    assert error_of(path).startswith(f"{path}:3: row is larger than 16 MiB")
    line = write(
        tmp_path, "long.jsonl", '{"inputs": {"question": "' + "w" * MAX_ROW_BYTES + '"}}\n'
    )
    assert error_of(line).startswith(f"{line}:1: row is larger than 16 MiB")


@pytest.mark.parametrize(
    ("suffix", "text", "where", "field"),
    [
        ("jsonl", '{"inputs": {"question": "a\\ud800"}}\n', ":1:", "inputs.question"),
        (
            "json",
            '[{"inputs": {"q": "ok"}, "outputs": {"\\udfff": 1}}]',
            " row 1:",
            "outputs.\\udfff",
        ),
        ("yaml", '- inputs: {question: "\\ud800"}\n', ":1 row 1:", "inputs.question"),
        ("csv", 'question,outputs.tags\nhi,"[""a"", ""\\udc80""]"\n', ":2:", "outputs.tags[1]"),
        ("jsonl", '{"id": "\\ud800", "inputs": {"question": "a"}}\n', ":1:", "id"),
    ],
)
def test_a_row_holding_a_lone_surrogate_is_refused(tmp_path, suffix, text, where, field):
    path = write(tmp_path, f"s.{suffix}", text)
    code = "\\udfff" if "udfff" in text else "\\udc80" if "udc80" in text else "\\ud800"
    assert error_of(path) == (
        f"{path}{where} {field} holds a lone surrogate ({code}), which UTF-8 cannot store "
        "(write the character itself, or a complete surrogate pair)"
    )


def test_a_surrogate_pair_escape_is_one_character_and_fine(tmp_path):
    path = write(tmp_path, "pair.jsonl", '{"inputs": {"question": "\\ud83d\\ude00"}}\n')
    assert load_examples(path)[0].inputs["question"] == "\U0001f600"


def test_a_row_that_is_a_number_is_refused_as_not_an_object_before_any_limit(tmp_path):
    path = write(tmp_path, "numbers.yaml", "- 5\n")
    assert error_of(path) == (
        f'{path}:1 row 1: row is not an object, got 5 (write {{"inputs": {{...}}, '
        '"outputs": {...}})'
    )


@pytest.mark.parametrize(
    ("suffix", "text", "message"),
    [
        ("jsonl", '{"inputs": {"q": DIGITS}}\n', ":1: invalid JSON: a number with more than"),
        ("json", '[{"inputs": {"q": DIGITS}}]', ": invalid JSON: a number with more than"),
        ("yaml", "- inputs: {q: DIGITS}\n", ": invalid YAML: a number with more than"),
        ("csv", "q\n[DIGITS]\n", ":2: column 'q': invalid JSON: a number with more than"),
    ],
)
def test_a_number_of_more_digits_than_python_converts_is_refused(tmp_path, suffix, text, message):
    import sys

    limit = sys.get_int_max_str_digits()
    path = write(tmp_path, f"n.{suffix}", text.replace("DIGITS", "7" * (limit + 1)))
    assert error_of(path).startswith(f"{path}{message} {limit} digits (write a number that long")
    fits = write(tmp_path, f"ok.{suffix}", text.replace("DIGITS", "7" * limit))
    (example,) = load_examples(fits)
    value = example.inputs["q"]
    assert (value[0] if isinstance(value, list) else value) == int("7" * limit)


def test_validate_reports_every_bad_row_with_counts(tmp_path):
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    path = tmp_path / "rows.jsonl"
    path.write_text(
        '{"inputs": {"question": "a"}}\n'  # 1 valid
        '{"inputs": oops}\n'  # 2 invalid JSON
        '{"inputs": {"question": "b"}, "extra": 1}\n'  # 3 unknown key
        "\n"  # 4 blank, skipped
        '{"inputs": {"question": "a"}}\n'  # 5 duplicate of line 1
        '{"inputs": {"question": "c"}}\n'  # 6 valid
    )
    result = CliRunner().invoke(app, ["dataset", "validate", str(path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert [text.split(": ", 2)[1] for text in lines[:3]] == [f"{path}:{n}" for n in (2, 3, 5)]
    assert "duplicate example (same as line 1)" in lines[2]
    assert lines[3] == f"{path}: 2 examples valid, 3 bad row(s)"


def test_validate_shows_twenty_bad_rows_and_counts_the_rest(tmp_path):
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    path = tmp_path / "rows.jsonl"
    good = [json.dumps({"inputs": {"question": f"q{i}"}}) for i in range(7)]
    path.write_text("\n".join([*good, *(["not json"] * 25)]) + "\n")
    result = CliRunner().invoke(app, ["dataset", "validate", str(path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 20 + 2
    assert lines[0].startswith(f"error: {path}:8: invalid JSON")
    assert lines[19].startswith(f"error: {path}:27: invalid JSON")
    assert lines[20] == "and 5 more bad row(s)"
    assert lines[21] == f"{path}: 7 examples valid, 25 bad row(s)"


def test_validate_counts_one_example_in_the_singular(tmp_path):
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    path = tmp_path / "one.jsonl"
    path.write_text('{"inputs": {"question": "a"}}\n')
    result = CliRunner().invoke(app, ["dataset", "validate", str(path)])
    assert result.exit_code == 0
    assert result.output.startswith(f"{path}: 1 example, all valid (sha256 ")


def test_validate_reports_conversation_rows_of_the_wrong_shape(tmp_path):
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    path = tmp_path / "rows.jsonl"
    path.write_text(
        '{"inputs": {"turns": ["a", "b"]}, "outputs": {"turns": [{}, {}]}}\n'  # 1 valid
        '{"inputs": {"turns": "a"}}\n'  # 2 not a list
        '{"inputs": {"question": "c"}}\n'  # 3 valid, single-turn
        '{"inputs": {"turns": ["a", "b"]}, "outputs": {"turns": [{}]}}\n'  # 4 too few
    )
    result = CliRunner().invoke(app, ["dataset", "validate", str(path)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: {path}:2: inputs.turns must be a non-empty list of turns, got 'a' "
        '(give strings, mappings of input fields, or {"resume": value})',
        f"error: {path}:4: outputs.turns has 1 entry for 2 turns "
        "(give one per turn, {} for a turn with no references)",
        f"{path}: 2 examples valid, 2 bad row(s)",
    ]
