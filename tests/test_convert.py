"""`moot convert`: the rumour sets' public releases (ACLR4RUMOR's Twitter-/Weibo-COVID19, RumourEval
2019) to one thread per line, on small trees written here in each release's layout (never the
data). The output reads through moot's dataset files for them; what is left out is counted; a file
out of layout is one line naming it, exit 2, nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from moot.cli import main
from moot.data.load import iter_items, load_dataset_spec

ROOT = Path(__file__).resolve().parents[1]
POSTS = ("r1\tNone\t1\t0.0\tthe root post\n"
         "r1\t1\t2\t5.5\ta reply\n"
         "r1\t2\t3\t9.0\ta reply to the reply\n"
         "r2\tNone\t1\t0\t新冠 病毒\n"
         "r2\t1\t2\t3\t回复\n"
         "r3\t1\t2\t1\ta tree without its root\n"
         "r9\tNone\t1\t0\ta tree with no label\n")
LABELS = "r1\t1\nr2\t0\nr3\tfalse\nr4\tnon-rumor\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def spec_in(tmp_path: Path, name: str) -> Path:
    (tmp_path / "datasets").mkdir(exist_ok=True)
    return Path(shutil.copy(ROOT / "datasets" / f"{name}.yaml", tmp_path / "datasets"))


def test_aclr4rumor_trees_become_threads_the_covid_datasets_read(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    posts, labels = write(tmp_path / "rel" / "posts.txt", POSTS), write(tmp_path / "rel" / "labels.txt", LABELS)
    out = tmp_path / "data" / "weibo_covid19.jsonl"
    assert main(["convert", "aclr4rumor", str(posts), str(labels), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote 2 threads (3 comments) to {out}" in printed
    for reason in ("1 labelled trees without posts", "1 posts of trees the label file does not name",
                   "1 trees with no root post(s)"):
        assert f"left out: {reason}" in printed
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows[0] == {"id": "r1", "claim": "the root post", "label": "1", "comments": [
        {"id": "2", "text": "a reply", "time": 5.5, "parent": "r1", "depth": 1},
        {"id": "3", "text": "a reply to the reply", "time": 9.0, "parent": "2", "depth": 2}]}
    assert rows[1]["claim"] == "新冠 病毒" and rows[1]["label"] == "0"
    items = list(iter_items(load_dataset_spec(spec_in(tmp_path, "weibo_covid19"), ("comments",))))
    assert [(i.id, i.label, len(i.value("comments"))) for i in items] == [("r1", "fake", 2), ("r2", "real", 1)]


@pytest.mark.parametrize("which, text, says", [
    ("posts", "r1\tNone\t1\t0.0\troot\nr1\t1\ttwo\t1.0\treply\n", "posts.txt:2: expected `root-id<TAB>parent"),
    ("labels", "r1\t1\nr2\tmaybe\n", "labels.txt:2: expected `root-id<TAB>label`"),
])
def test_a_file_out_of_layout_is_one_line_and_nothing_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               which: str, text: str, says: str) -> None:
    posts = write(tmp_path / "posts.txt", text if which == "posts" else POSTS)
    labels = write(tmp_path / "labels.txt", text if which == "labels" else LABELS)
    out = tmp_path / "out.jsonl"
    assert main(["convert", "aclr4rumor", str(posts), str(labels), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err
    assert not out.exists()


def test_an_existing_out_file_is_never_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    posts, labels = write(tmp_path / "posts.txt", POSTS), write(tmp_path / "labels.txt", LABELS)
    out = write(tmp_path / "out.jsonl", "mine\n")
    assert main(["convert", "aclr4rumor", str(posts), str(labels), "--out", str(out)]) == 2
    assert "exists; choose another path" in capsys.readouterr().err and out.read_text() == "mine\n"


def tweet(id_: str, text: str, at: str, parent: str | None = None) -> str:
    return json.dumps({"id_str": id_, "text": text, "created_at": f"Wed Jan 07 11:{at} +0000 2015",
                       "in_reply_to_status_id_str": parent})


def rumoureval_release(root: Path) -> Path:
    """A tiny RumourEval 2019 test release: a Twitter thread, a Reddit one, one the key does not label."""
    thread = root / "twitter-en-test-data" / "charliehebdo" / "100"
    write(thread / "source-tweet" / "100.json", tweet("100", "the claim", "00:00"))
    write(thread / "replies" / "101.json", tweet("101", "first reply", "00:30", "100"))
    write(thread / "replies" / "102.json", tweet("102", "a reply to it", "01:30", "101"))
    write(thread / "structure.json", json.dumps({"100": {"101": {"102": []}}}))
    reddit = root / "reddit-test-data" / "abc"
    write(reddit / "source-tweet" / "abc.json", json.dumps({"kind": "Listing", "data": {"children": [{"kind": "t3", "data": {
        "id": "abc", "title": "Is it true?", "selftext": "", "created_utc": 1000.0, "subreddit": "AskReddit"}}]}}))
    write(reddit / "replies" / "c1.json", json.dumps({"kind": "t1", "data": {
        "id": "c1", "body": "yes", "created_utc": 1060.0, "parent_id": "t3_abc"}}))
    write(reddit / "replies" / "c2.json", json.dumps({"kind": "t1", "data": {
        "id": "c2", "body": "[deleted]", "created_utc": 1070.0, "parent_id": "t1_c1"}}))
    write(reddit / "structure.json", json.dumps({"abc": {"c1": {"c2": []}}}))
    write(root / "twitter-en-test-data" / "ottawa" / "200" / "source-tweet" / "200.json", tweet("200", "x", "00:00"))
    return write(root.parent / "final-eval-key.json", json.dumps({
        "subtaskaenglish": {"101": "comment"}, "subtaskbenglish": {"100": "false", "abc": "true", "999": "unverified"}}))


def test_rumoureval_2019_threads_become_rows_the_test_split_reads(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    key = rumoureval_release(tmp_path / "rumoureval-2019-test-data")
    out = tmp_path / "data" / "rumoureval2019_test.jsonl"
    assert main(["convert", "rumoureval2019", str(tmp_path / "rumoureval-2019-test-data"), str(key),
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "left out: 1 labelled threads not in the folder" in printed
    assert "left out: 1 thread folders the key files do not label (task B)" in printed
    reddit, twitter = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert twitter == {"id": "100", "claim": "the claim", "label": "false", "comments": [
        {"id": "101", "text": "first reply", "time": 30.0, "parent": "100", "depth": 1},
        {"id": "102", "text": "a reply to it", "time": 90.0, "parent": "101", "depth": 2}],
        "event": "charliehebdo", "platform": "twitter", "split": "test", "n_dropped_deleted": 0}
    assert reddit["claim"] == "Is it true?" and reddit["event"] == "reddit/AskReddit"
    assert reddit["comments"] == [{"id": "c1", "text": "yes", "time": 60.0, "parent": "abc", "depth": 1}]
    assert reddit["n_dropped_deleted"] == 1  # the deleted comment is left out and counted
    items = list(iter_items(load_dataset_spec(spec_in(tmp_path, "rumoureval2019_test"), ("comments",))))
    assert [(i.id, i.label) for i in items] == [("abc", "true"), ("100", "false")]


def test_a_rumoureval_key_without_task_b_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = write(tmp_path / "key.json", json.dumps({"subtaskaenglish": {}}))
    (tmp_path / "rel").mkdir()
    assert main(["convert", "rumoureval2019", str(tmp_path / "rel"), str(key), "--out", str(tmp_path / "o")]) == 2
    assert "key.json: no `subtaskbenglish` mapping" in capsys.readouterr().err
