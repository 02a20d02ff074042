"""Tests for moot.data.load, on small files the tests write (never the shared samples, except
the optional smoke test of the shipped specs at the end)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
import yaml

from moot.data.load import (
    Comment,
    DatasetError,
    DatasetSpec,
    Item,
    dataset_fingerprint,
    iter_items,
    load_dataset_spec,
)
from moot.api.checking import dataset_columns
from moot.data.spec import spec_model

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def write_spec(folder: Path, text: str, name: str = "data.yaml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def load(folder: Path, text: str) -> DatasetSpec:
    return load_dataset_spec(write_spec(folder, text))


def error_of(folder: Path, text: str) -> str:
    with pytest.raises(DatasetError) as info:
        load(folder, text)
    message = str(info.value)
    assert "\n" not in message
    return message


def iter_error(spec: DatasetSpec, **kw) -> str:
    with pytest.raises(DatasetError) as info:
        list(iter_items(spec, **kw))
    message = str(info.value)
    assert "\n" not in message
    return message


# --- formats -------------------------------------------------------------------------------


def test_vast_like_csv(tmp_path: Path) -> None:
    (tmp_path / "vast.csv").write_text(
        "Tweet,Target,Stance,seen?\n"
        '"He said ""no"", twice.",online class,0,1\n'
        '"two\nlines",democracy,1,0\n'
        "plain,guns,7,0\n"
        "last one,guns,2,0\n",
        encoding="utf-8",
    )
    spec = load(tmp_path, (
        "path: vast.csv\n"
        "columns: {text: Tweet, target: Target, label: Stance}\n"
        'labels: {"0": against, "1": favor, "2": neutral}\n'
    ))
    items = list(iter_items(spec))
    assert [(i.id, i.text, i.target, i.label) for i in items] == [
        ("0", 'He said "no", twice.', "online class", "against"),
        ("1", "two\nlines", "democracy", "favor"),
        ("3", "last one", "guns", "neutral"),  # row 2 has an unlisted label: skipped, ids stay
    ]
    assert items[0].comments == ()
    assert items[0].raw == {"Tweet": 'He said "no", twice.', "Target": "online class",
                            "Stance": "0", "seen?": "1"}


def test_filter_applies_before_limit(tmp_path: Path) -> None:
    rows = "".join(f"t{i},x,{i % 2},{i % 2}\n" for i in range(6))
    (tmp_path / "d.csv").write_text("Tweet,Target,Stance,seen?\n" + rows, encoding="utf-8")
    spec = load(tmp_path, (
        "path: d.csv\ncolumns: {text: Tweet, label: Stance}\n"
        "filter: {'seen?': ['1']}\n"
    ))
    assert [i.text for i in iter_items(spec, limit=2)] == ["t1", "t3"]
    assert [i.label for i in iter_items(spec)] == ["1", "1", "1"]  # no labels map: passthrough
    assert list(iter_items(spec, limit=0)) == []
    with pytest.raises(ValueError):
        list(iter_items(spec, limit=-1))
    scalar = load(tmp_path, "path: d.csv\ncolumns: {text: Tweet}\nfilter: {'seen?': 0}\n")
    assert [i.text for i in iter_items(scalar)] == ["t0", "t2", "t4"]


def test_semeval_like_tsv_latin1_crlf_bare_quotes(tmp_path: Path) -> None:
    data = (
        "ID\tTarget\tTweet\tStance\r\n"
        '101\tAtheism\tcaf\xe9 "quoted bit\tAGAINST\r\n'
        '102\tHillary Clinton\tsays "hi" and \'bye\'\tFAVOR\r\n'
        "103\tAtheism\tnothing\tNONE\r\n"
    ).encode("latin-1")
    (tmp_path / "semeval.txt").write_bytes(data)
    spec = load(tmp_path, (
        "path: semeval.txt\nformat: tsv\nencoding: latin-1\nquoting: none\n"
        "columns: {id: ID, text: Tweet, target: Target, label: Stance}\n"
        "labels: {FAVOR: favor, AGAINST: against}\n"
    ))
    items = list(iter_items(spec))
    assert [(i.id, i.text, i.target, i.label) for i in items] == [
        ("101", 'café "quoted bit', "Atheism", "against"),
        ("102", "says \"hi\" and 'bye'", "Hillary Clinton", "favor"),
    ]


def test_ibm_like_dotted_columns_and_stripped_label_keys(tmp_path: Path) -> None:
    (tmp_path / "ibm.csv").write_text(
        '"topicText","claims.claimId","claims.claimCorrectedText","claims.claimSentiment"\n'
        '"free market","11","markets work","1"\n'
        '"free market","12","markets fail","-1"\n'
        '"free market","13","no sentiment",""\n'
        '"free market","14","so-so"," 0 "\n',
        encoding="utf-8",
    )
    spec = load(tmp_path, (
        "path: ibm.csv\n"
        "columns: {id: claims.claimId, text: claims.claimCorrectedText, target: topicText,\n"
        "          label: claims.claimSentiment}\n"
        "labels: {-1: negative, ' 0': neutral, 1: positive}\n"
    ))
    assert [(i.id, i.text, i.target, i.label) for i in iter_items(spec)] == [
        ("11", "markets work", "free market", "positive"),
        ("12", "markets fail", "free market", "negative"),
        ("14", "so-so", "free market", "neutral"),
    ]


def test_rumoureval_like_jsonl_with_comments(tmp_path: Path) -> None:
    lines = [
        {"id": 7, "claim": "plane down", "label": "true", "meta": {"event": "crash"},
         "comments": [{"text": "oh no", "time": 55.0}, {"text": "source?", "time": 3},
                      {"text": "no time"}]},
        {"id": "8", "claim": "dup", "label": "false", "meta": {"event": "x"}, "comments": []},
        {"id": "9", "claim": "skip me", "label": "comment", "meta": {"event": "x"}, "comments": []},
    ]
    (tmp_path / "r.jsonl").write_text(
        json.dumps(lines[0]) + "\r\n\n" + json.dumps(lines[1]) + "\n" + json.dumps(lines[2]) + "\n",
        encoding="utf-8",
    )
    spec = load(tmp_path, (
        "path: r.jsonl\nformat: jsonl\n"
        "columns: {id: id, text: claim, target: meta.event, label: label, comments: comments}\n"
        'labels: {"true": "true", "false": "false", "unverified": "unverified"}\n'
    ))
    items = list(iter_items(spec))
    assert [(i.id, i.text, i.target, i.label) for i in items] == [
        ("7", "plane down", "crash", "true"), ("8", "dup", "x", "false")]
    assert items[0].comments == (Comment("oh no", 55.0), Comment("source?", 3.0), Comment("no time", None))
    assert items[1].comments == ()
    assert items[0].raw == lines[0]

    (tmp_path / "c.jsonl").write_text(
        json.dumps({"t": "x", "replies": [{"body": "hi", "secs": "2.5"}]}) + "\n", encoding="utf-8")
    custom = load(tmp_path, (
        "path: c.jsonl\nformat: jsonl\n"
        "columns: {text: t, comments: replies, comment_text: body, comment_time: secs}\n"
    ))
    assert list(iter_items(custom)) == [Item("0", "x", comments=(Comment("hi", 2.5),))]


def test_lines_format_sst2_like(tmp_path: Path) -> None:
    (tmp_path / "sst.txt").write_text(
        "0 it 's dull , really .\n1  starts with a space\n\n1 good\n", encoding="utf-8")
    spec = load(tmp_path, (
        'path: sst.txt\nformat: lines\nseparator: " "\ncolumns: {label: "0", text: "1"}\n'
        'labels: {"0": negative, "1": positive}\n'
    ))
    items = list(iter_items(spec))
    assert [(i.id, i.text, i.label, i.target) for i in items] == [
        ("0", "it 's dull , really .", "negative", None),
        ("1", " starts with a space", "positive", None),
        ("2", "good", "positive", None),
    ]
    assert items[0].raw == {"0": "0", "1": "it 's dull , really ."}
    (tmp_path / "tab.txt").write_text("pos\ta\tb\n", encoding="utf-8")
    tab = load(tmp_path, 'path: tab.txt\nformat: lines\nseparator: "\\t"\ncolumns: {label: 0, text: 1}\n')
    assert [(i.label, i.text) for i in iter_items(tab)] == [("pos", "a\tb")]


def test_role_from_a_column_else_from_target_roles(tmp_path: Path) -> None:
    """An item's role (COLA's domain specialist): its own column first, then the spec's map."""
    (tmp_path / "r.csv").write_text("t,target,role\na,Atheism,\nb,atheism,priest\nc,Other,\n", encoding="utf-8")
    spec = load(tmp_path, "path: r.csv\ncolumns: {text: t, target: target, role: role}\n"
                          "target_roles: {Atheism: theologian}\n")
    assert [i.role for i in iter_items(spec)] == ["theologian", "priest", None]
    mapped = load(tmp_path, "path: r.csv\ncolumns: {text: t, target: target}\ntarget_roles: {ATHEISM: theologian}\n")
    assert [i.role for i in iter_items(mapped)] == ["theologian", "theologian", None]


def test_paths_fingerprint_and_items(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "specs").mkdir()
    (tmp_path / "data" / "d.csv").write_bytes(b"a\r\nx\r\n")
    spec = load_dataset_spec(write_spec(tmp_path / "specs", "path: ../data/d.csv\ncolumns: {text: a}\n"))
    monkeypatch.chdir(tmp_path / "data")  # relative paths are taken from the spec's folder, not cwd
    assert spec.data_path == (tmp_path / "data" / "d.csv").resolve()
    assert dataset_fingerprint(spec) == hashlib.sha256(b"a\r\nx\r\n").hexdigest()
    absolute = load(tmp_path / "specs", f"path: {(tmp_path / 'data' / 'd.csv').as_posix()}\ncolumns: {{text: a}}\n")
    assert list(iter_items(absolute)) == [Item("0", "x")]
    item = next(iter_items(spec))
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.text = "y"  # type: ignore[misc]
    assert hash(item) == hash(Item("0", "x"))


def test_iteration_is_lazy(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"t": "a"}\n{"t": "b"}\nnot json\n', encoding="utf-8")
    spec = load(tmp_path, "path: d.jsonl\nformat: jsonl\ncolumns: {text: t}\n")
    assert [i.text for i in iter_items(spec, limit=2)] == ["a", "b"]


# --- spec errors: one line naming file, key path and line -------------------------------------


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "d.csv").write_text("a,b\nx,y\n", encoding="utf-8")
    return tmp_path


def test_error_unknown_column_key(folder: Path) -> None:
    message = error_of(folder, "path: d.csv\nformat: csv\n\ncolumns:\n  text: a\n  txt: b\n")
    assert message == f"{folder / 'data.yaml'}:6: columns.txt: unknown key (did you mean 'text'?)"
    message = error_of(folder, "path: d.csv\nformat: csv\n\ncolumns:\n  text: a\n  colour: b\n")
    assert message == (f"{folder / 'data.yaml'}:6: columns.colour: unknown key "
                       "(allowed: text, target, label, id, comments, comment_text, comment_time, role)")


def test_error_unknown_top_level_key(folder: Path) -> None:
    message = error_of(folder, "path: d.csv\ncolumns: {text: a}\nlabel: {x: y}\n")
    assert message == f"{folder / 'data.yaml'}:3: label: unknown key (did you mean 'labels'?)"
    message = error_of(folder, "path: d.csv\ncolumns: {text: a}\nsplit: train\n")
    assert message.startswith(f"{folder / 'data.yaml'}:3: split: unknown key (allowed: path, format,")


@pytest.mark.parametrize("text, line, key, meant", [
    ("path: d.csv\nformat: csv\n\ncolums: {text: a}\n", 4, "colums", "columns"),  # `columns` is not missing
    ("path: d.csv\ncolumns:\n  label: b\n  txet: a\n", 4, "columns.txet", "text"),  # `text` is not missing
])
def test_error_misspelled_key_is_the_one_problem(folder: Path, text: str, line: int, key: str, meant: str) -> None:
    message = error_of(folder, text)
    assert message == f"{folder / 'data.yaml'}:{line}: {key}: unknown key (did you mean {meant!r}?)"


def test_error_missing_key(folder: Path) -> None:
    message = error_of(folder, "path: d.csv\ncolumns:\n  label: b\n")
    assert message == f"{folder / 'data.yaml'}:2: columns.text: missing required key"


def test_error_bad_value(folder: Path) -> None:
    message = error_of(folder, "path: d.csv\nformat: xml\ncolumns: {text: a}\n")
    assert message.startswith(f"{folder / 'data.yaml'}:2: format: Input should be 'csv', 'tsv'")
    assert "'xml'" in message


def test_error_yaml_boolean_label(folder: Path) -> None:
    message = error_of(folder, "path: d.csv\ncolumns: {text: a, label: b}\nlabels:\n  true: real\n")
    assert message.startswith(f"{folder / 'data.yaml'}:4: labels.true: ")
    assert "quote" in message


def test_error_unknown_encoding(folder: Path) -> None:
    message = error_of(folder, "path: d.csv\nencoding: latin-99\ncolumns: {text: a}\n")
    assert message == f"{folder / 'data.yaml'}:2: encoding: unknown encoding 'latin-99'"


def test_error_inconsistent_keys(folder: Path) -> None:
    name = folder / "data.yaml"
    assert error_of(folder, "path: d.csv\ncolumns:\n  text: a\n  comments: b\n") == (
        f"{name}:4: columns.comments: only supported for format jsonl")
    assert error_of(folder, "path: d.csv\ncolumns: {text: a}\nlabels: {x: y}\n") == (
        f"{name}:3: labels: needs columns.label")
    assert error_of(folder, "path: d.csv\nformat: lines\ncolumns:\n  text: a\n").startswith(
        f"{name}:4: columns.text: format lines has only fields")


def test_error_invalid_yaml(folder: Path) -> None:
    message = error_of(folder, "path: d.csv\ncolumns: {text: a\nfoo: [\n")
    assert message.startswith(f"{folder / 'data.yaml'}:3: invalid YAML")


def test_error_spec_not_a_mapping(folder: Path) -> None:
    assert error_of(folder, "- a\n").startswith(f"{folder / 'data.yaml'}: top level must be a mapping")


def test_error_spec_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="nope.yaml: file not found"):
        load_dataset_spec(tmp_path / "nope.yaml")


def test_error_data_file_not_found(folder: Path) -> None:
    message = error_of(folder, "path: missing.csv\ncolumns: {text: a}\n")
    assert message == f"{folder / 'data.yaml'}: path: file not found: {(folder / 'missing.csv').resolve()}"


def test_a_missing_data_file_names_where_the_spec_says_it_is_published(folder: Path) -> None:
    message = error_of(folder, "path: missing.csv\ncolumns: {text: a}\nsource: >-\n  example.org/data\n  (v2)\n")
    assert message == (f"{folder / 'data.yaml'}: path: file not found: {(folder / 'missing.csv').resolve()} "
                       "(published at example.org/data (v2))")


# --- data errors: one line naming the data file and line ------------------------------------


def test_error_raised_at_call_for_direct_spec(tmp_path: Path) -> None:
    spec = DatasetSpec(path=str(tmp_path / "gone.csv"), columns={"text": "a"})
    with pytest.raises(DatasetError, match=r"^dataset spec: path: file not found: .*gone\.csv$"):
        iter_items(spec)  # not only when iterated
    with pytest.raises(DatasetError, match="file not found"):
        dataset_fingerprint(spec)


def test_error_header_missing_column(folder: Path) -> None:
    spec = load(folder, "path: d.csv\ncolumns: {text: a, label: Stance}\n")
    data = (folder / "d.csv").resolve()
    assert iter_error(spec) == f"{data}:1: columns.label: column 'Stance' not in header (have: a, b)"


def test_error_row_missing_column(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text('a,b\n"multi\nline",1\n\nshort\n', encoding="utf-8")
    spec = load(tmp_path, "path: d.csv\ncolumns: {text: a, label: b}\n")
    assert iter_error(spec) == f"{(tmp_path / 'd.csv').resolve()}:5: columns.label: row has no column 'b'"
    (tmp_path / "d.jsonl").write_text('{"t": "a"}\n{"x": "b"}\n', encoding="utf-8")
    spec = load(tmp_path, "path: d.jsonl\nformat: jsonl\ncolumns: {text: t}\n")
    assert iter_error(spec) == f"{(tmp_path / 'd.jsonl').resolve()}:2: columns.text: row has no column 't'"
    (tmp_path / "l.txt").write_text("1 ok\n0\n", encoding="utf-8")
    spec = load(tmp_path, 'path: l.txt\nformat: lines\ncolumns: {label: "0", text: "1"}\n')
    assert iter_error(spec) == f"{(tmp_path / 'l.txt').resolve()}:2: columns.text: row has no column '1'"


def test_error_invalid_json_line(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"t": "a"}\n{"t": \n', encoding="utf-8")
    spec = load(tmp_path, "path: d.jsonl\nformat: jsonl\ncolumns: {text: t}\n")
    assert iter_error(spec).startswith(f"{(tmp_path / 'd.jsonl').resolve()}:2: invalid JSON")


def test_error_bad_comment(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text(
        '{"t": "a", "c": [{"text": "x", "time": "soon"}]}\n{"t": "b", "c": [{"body": "x"}]}\n', encoding="utf-8")
    spec = load(tmp_path, "path: d.jsonl\nformat: jsonl\ncolumns: {text: t, comments: c}\n")
    data = (tmp_path / "d.jsonl").resolve()
    assert iter_error(spec) == f"{data}:1: columns.comment_time: comment 0 time 'soon' is not a number"
    spec2 = load(tmp_path, "path: d.jsonl\nformat: jsonl\ncolumns: {text: t, comments: c}\nfilter: {t: b}\n")
    assert iter_error(spec2) == f"{data}:2: columns.comment_text: comment 0 has no 'text' key"


def test_error_wrong_encoding(tmp_path: Path) -> None:
    (tmp_path / "d.tsv").write_bytes("a\tb\ncaf\xe9\t1\n".encode("latin-1"))
    spec = load(tmp_path, "path: d.tsv\nformat: tsv\ncolumns: {text: a}\n")
    message = iter_error(spec)
    assert message.startswith(f"{(tmp_path / 'd.tsv').resolve()}: cannot decode as utf-8")


# --- shipped specs against the shared samples (skipped when they are absent) -----------------
# The specs name the full splits under the repository's data/; each is read here with its `path`
# pointed at the shared sample of that split instead (VAST's sample also renames the columns).

SHIPPED = {
    "vast.yaml": ("vast_dev_sample.csv", {"against", "favor", "neutral"}),
    "vast_all.yaml": ("vast_dev_sample.csv", {"against", "favor", "neutral"}),
    "semeval2016.yaml": ("semeval2016_train_sample.txt", {"against", "favor", "neutral"}),
    "ibm_claim_stance.yaml": ("ibm_claim_stance_train_sample.csv", {"against", "favor"}),
    "ibm_claim_polarity.yaml": ("ibm_claim_stance_train_sample.csv", {"negative", "neutral", "positive"}),
    "rumoureval2019.yaml": ("rumoureval2019_train_sample.jsonl", {"true", "false", "unverified"}),
    "rumoureval2019_veracity.yaml": ("rumoureval2019_train_sample.jsonl", {"real", "fake"}),
    "sst2.yaml": ("sst2_dev_sample.txt", {"negative", "positive"}),
}
VAST_SAMPLE_COLUMNS = "columns: {text: Tweet, target: Target, label: Stance}"


def on_sample(tmp_path: Path, name: str) -> DatasetSpec:
    """The shipped spec `name` reading its shared sample."""
    lines = (REPO / "datasets" / name).read_text(encoding="utf-8").splitlines()
    lines = [f"path: {SHARED / SHIPPED[name][0]}" if line.startswith("path:")
             else VAST_SAMPLE_COLUMNS if name.startswith("vast") and line.startswith("columns:") else line
             for line in lines]
    return load(tmp_path, "\n".join(lines) + "\n")


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared dataset samples not available")
@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_specs_load_samples(tmp_path: Path, name: str) -> None:
    spec = on_sample(tmp_path, name)
    items = list(iter_items(spec))
    assert len(items) > 0
    assert {i.label for i in items} <= SHIPPED[name][1]
    assert all(i.text for i in items)
    assert len({i.id for i in items}) == len(items)
    if name.startswith("rumoureval2019"):
        assert all(c.text and c.time is not None for i in items for c in i.comments)
        assert any(i.comments for i in items)
    assert len(dataset_fingerprint(spec)) == 64
    if name == "vast.yaml":  # the papers' VAST condition: zero-shot topics only
        assert {i.raw["seen?"] for i in items} == {"0"}
        assert len(items) < len(list(iter_items(on_sample(tmp_path, "vast_all.yaml"))))


@pytest.mark.parametrize("spec", sorted((REPO / "datasets").glob("*.yaml")), ids=lambda p: p.name)
def test_no_shipped_spec_points_outside_the_repository(spec: Path) -> None:
    """A clone is all a user has: every file is shipped, or goes under the repository's data/
    (which git ignores) and the spec says where it is published."""
    data = (spec.parent / yaml.safe_load(spec.read_text(encoding="utf-8"))["path"]).resolve()
    assert data.is_relative_to(REPO), data
    if not data.is_relative_to(REPO / "datasets"):
        assert data.parent == REPO / "data"
        assert yaml.safe_load(spec.read_text(encoding="utf-8")).get("source"), f"{spec.name} names no source:"


# the headline metric each paper reports for the data (COLA: F_avg on SEM16, macro-F1 on VAST; ...)
METRICS = {"vast.yaml": "macro_f1", "vast_all.yaml": "macro_f1", "semeval2016.yaml": "f_avg",
           "ibm_claim_stance.yaml": "accuracy", "ibm_claim_polarity.yaml": "accuracy",
           "rumoureval2019.yaml": "macro_f1", "rumoureval2019_veracity.yaml": "macro_f1",
           "sst2.yaml": "accuracy", "sst2_train.yaml": "accuracy",
           "demo-stance.yaml": "macro_f1", "demo-rumour.yaml": "macro_f1", "demo-rumour-veracity.yaml": "macro_f1",
           "demo-sentiment.yaml": "accuracy", "demo-sentiment-train.yaml": "accuracy",
           "demo-preference.yaml": "accuracy", "faireval.yaml": "accuracy",
           # the papers' test splits (moot ships none of their data: tests/test_test_splits.py)
           "vast_test.yaml": "macro_f1", "vast_test_zeroshot.yaml": "macro_f1", "semeval2016_test.yaml": "f_avg",
           "semeval2016_test_trump.yaml": "f_avg", "pstance_test_trump.yaml": "f_avg",
           "pstance_test_biden.yaml": "f_avg", "pstance_test_bernie.yaml": "f_avg",
           "ibm_claim_stance_test.yaml": "accuracy", "ibm_claim_polarity_test.yaml": "accuracy",
           "sst2_test.yaml": "accuracy", "rumoureval2019_test.yaml": "macro_f1",
           "twitter_covid19.yaml": "macro_f1", "weibo_covid19.yaml": "macro_f1"}


def test_every_shipped_spec_declares_its_headline_metric() -> None:
    assert {p.name for p in (REPO / "datasets").glob("*.yaml")} == set(METRICS)
    for name, metric in METRICS.items():
        model = spec_model(tuple(dataset_columns()))  # a spec may name any registered protocol's input columns
        data = model.model_validate(yaml.safe_load((REPO / "datasets" / name).read_text()))
        assert data.metric == metric, name
