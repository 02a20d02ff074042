"""The papers' test-split dataset files (datasets/*_test*.yaml, *_covid19.yaml): moot ships none of
the data. Each file reads a file in its public release's shape (made here, never the data) with the
release's columns and label mapping, names the published dataset it is (`benchmark`), and without
the data says in one line which file it expects, where it goes and where it is published."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from moot.data.load import iter_items, load_dataset_spec
from moot.data.spec import DatasetError

ROOT = Path(__file__).resolve().parents[1]
VAST = "author,post,ori_topic,ori_id,new_topic,label,type_idx,new_id,arc_id,text,text_s,topic,topic_str,seen?,contains_topic?\n"
CLAIMS = ('"topicId","split","topicText","topicTarget","topicSentiment","claims.claimId","claims.stance",'
          '"claims.claimCorrectedText","claims.claimTarget.text","claims.claimSentiment"\n')
THREAD = {"claim": "c", "comments": [{"id": "r", "text": "reply", "time": 5.0, "parent": "x", "depth": 1}]}
# spec -> (data file, its text in the release's shape, (id, target, label) of the items read)
RELEASES = {
    "vast_test": ("vast_test.csv", VAST + 'a,p one,t,1,t,1,1,11,9,x,x,x,gun control,0,1\n'
                                          'a,p two,t,2,t,0,1,12,9,x,x,x,taxes,1,0\n',
                  [("11", "gun control", "favor"), ("12", "taxes", "against")]),
    "vast_test_zeroshot": ("vast_test.csv", VAST + 'a,p one,t,1,t,2,4,11,9,x,x,x,gun control,0,1\n'
                                                   'a,p two,t,2,t,0,1,12,9,x,x,x,taxes,1,0\n',
                           [("11", "gun control", "neutral")]),
    "semeval2016_test": ("SemEval2016-Task6-subtaskA-testdata-gold.txt",
                         'ID\tTarget\tTweet\tStance\r\n10001\tAtheism\t"God" is #SemST\tAGAINST\r\n'
                         '10002\tFeminist Movement\tequal pay\tNONE\r\n',
                         [("10001", "Atheism", "against"), ("10002", "Feminist Movement", "neutral")]),
    "semeval2016_test_trump": ("SemEval2016-Task6-subtaskB-testdata-gold.txt",
                               'ID\tTarget\tTweet\tStance\r\n20001\tDonald Trump\ttweet\tFAVOR\r\n',
                               [("20001", "Donald Trump", "favor")]),
    "pstance_test_biden": ("raw_test_biden.csv", 'Tweet,Target,Stance\n"a, tweet",Joe Biden,AGAINST\n',
                           [("0", "Joe Biden", "against")]),
    "ibm_claim_stance_test": ("claim_stance_dataset_v1.csv",
                              CLAIMS + '"1","train","T","t","1","7","PRO","c7","x","1"\n'
                                       '"1","test","This house bans X","t","1","8","CON","c8","x","-1"\n',
                              [("8", "This house bans X", "against")]),
    "ibm_claim_polarity_test": ("claim_stance_dataset_v1.csv",
                                CLAIMS + '"1","test","T","t","1","8","CON","c8","smoking","-1"\n'
                                         '"1","train","T","t","1","10","PRO","c10","x","1"\n'
                                         '"1","test","T","t","1","9","PRO","c9","vaping",""\n',
                                [("8", "smoking", "negative"), ("9", "vaping", "neutral")]),  # the paper's 3 classes
    "sst2_test": ("stsa.binary.test", "1 a gorgeous film .\n0 dull .\n", [("0", None, "positive"), ("1", None, "negative")]),
    "rumoureval2019_test": ("rumoureval2019_test.jsonl", json.dumps({"id": "5", "label": "unverified", **THREAD}) + "\n",
                            [("5", None, "unverified")]),
    "twitter_covid19": ("twitter_covid19.jsonl", json.dumps({"id": "6", "label": 1, **THREAD}) + "\n",
                        [("6", None, "fake")]),
    "weibo_covid19": ("weibo_covid19.jsonl", json.dumps({"id": "7", "label": 0, **THREAD}) + "\n",
                      [("7", None, "real")]),
}
BENCHMARK = {"vast_test": "vast", "vast_test_zeroshot": "vast", "semeval2016_test": "semeval2016",
             "semeval2016_test_trump": "semeval2016", "pstance_test_biden": "pstance",
             "ibm_claim_stance_test": "ibm_claim_stance", "ibm_claim_polarity_test": "ibm_claim_polarity",
             "sst2_test": "sst2", "rumoureval2019_test": "rumoureval2019"}


def copied(tmp_path: Path, name: str) -> Path:
    (tmp_path / "datasets").mkdir(exist_ok=True)
    return Path(shutil.copy(ROOT / "datasets" / f"{name}.yaml", tmp_path / "datasets"))


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_a_test_split_reads_its_release_with_its_labels(tmp_path: Path, name: str) -> None:
    file, text, expected = RELEASES[name]
    spec_path = copied(tmp_path, name)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / file).write_text(text, encoding="latin-1" if "SemEval" in file else "utf-8", newline="")
    spec = load_dataset_spec(spec_path, ("target", "comments"))
    assert [(i.id, i.target, i.label) for i in iter_items(spec)] == expected
    assert (spec.benchmark or name) == BENCHMARK.get(name, name)


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_without_its_data_a_test_split_names_the_file_and_where_it_is_published(tmp_path: Path, name: str) -> None:
    spec_path = copied(tmp_path, name)
    with pytest.raises(DatasetError) as missing:
        load_dataset_spec(spec_path, ("target", "comments"))
    expected = (tmp_path / "data" / RELEASES[name][0]).resolve()
    message = str(missing.value)
    assert "\n" not in message and message.startswith(f"{spec_path}: path: file not found: {expected} (published at ")
    assert not (tmp_path / "data").exists()


# The shape of SemEval-2016 Task 6's own files as the shared training sample has it (checked by hand
# against ../shared/datasets/semeval2016_train_sample.txt: 80 rows, five targets, labels mapped, bare
# quotes kept): tab-separated latin-1 with CRLF ends and two more columns than the test split's.
SEMEVAL_RELEASE = ("ID\tTarget\tTweet\tStance\tOpinion towards\tSentiment\r\n"
                   '101\tAtheism\tGod is "great" caf\xe9 #SemST\tAGAINST\t1.  The tweet explicitly expresses opinion '
                   "about the target, a part of the target, or an aspect of the target.\tPOSITIVE\r\n"
                   "102\tClimate Change is a Real Concern\twe need action #SemST\tFAVOR\t1.  The tweet\tNEGATIVE\r\n")


@pytest.mark.parametrize("name", ["semeval2016", "semeval2016_test"])
def test_the_semeval_files_read_the_release_layout_with_its_extra_columns(tmp_path: Path, name: str) -> None:
    spec_path = copied(tmp_path, name)
    data = tmp_path / "release.txt"
    data.write_bytes(SEMEVAL_RELEASE.encode("latin-1"))
    text = spec_path.read_text(encoding="utf-8")
    spec_path.write_text("\n".join(f"path: {data}" if line.startswith("path:") else line
                                   for line in text.splitlines()) + "\n", encoding="utf-8")
    items = list(iter_items(load_dataset_spec(spec_path, ("target",))))
    assert [(i.id, i.target, i.label) for i in items] == [("101", "Atheism", "against"),
                                                          ("102", "Climate Change is a Real Concern", "favor")]
    assert items[0].value("text") == 'God is "great" café #SemST'  # bare quotes and latin-1 kept, no CR
