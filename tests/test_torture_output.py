"""Torture: every output neutralises what others wrote.

Hostile text (HTML, `javascript:` links, Markdown, formulas, escape sequences, bidirectional
overrides, CJK, emoji, lone surrogates) enters as a dataset's file name, text and targets, a
scenario's file name, a conference's title and topics, and as the fields of a run folder someone
else wrote (run.json's models, labels, paths, dates; results' labels). Each writer is checked in
what it wrote:

- Markdown (report.md, export): rendered by a CommonMark/GFM renderer with HTML and linkify on,
  it has exactly the structure of the same document made from plain words (no link, image, HTML,
  code, emphasis, heading, list or table cell the text made), and shows the text as it was;
- HTML (export): the same tags as from plain words, the text shown as it was;
- CSV: no cell a spreadsheet would run as a formula, as many cells as from plain words;
- plots: written without a word on stderr (no missing-glyph warning, no mathtext);
- terminal (run, replay, report, error lines, a wait line): no escape sequence, control or
  bidirectional-override character;
- LaTeX: every special character escaped, and the text recovered from it.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import warnings
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from moot.models.calls import show_wait, wait_line
from moot.kit import _fonts as fonts
from moot.safety.neutral import csv_safe, latex_safe, markdown_safe, plain
from torture_support import case, moot, moot_process, write

# one line each, no "/" (they name files too)
NAME = ("=PWN <img src=x onerror=alert(1)> [PWN](javascript:alert(3)) **PWN** _PWN_ `PWN` $PWN$ | PWN | "
        "www.evil.com \x1b[31mred\x1b[0m\x1b]0;PWN\x07\u202ePWN\u202c\u2066PWN\u2069 中文 😀")
LINE = ("-PWN <script>alert(2)</script> [PWN](javascript:alert(3)) ![PWN](http://evil.com/i.png) "
        "<http://evil.com/a> **PWN** _PWN_ `PWN` ~~PWN~~ $PWN$ $$PWN$$ | PWN | www.evil.com http://evil.com/x "
        "a@evil.com @PWN &copy; &#60; \\ \x1b[2J\x08\x7f\x9b\u202ePWN 中文 😀 e\u0301 \u200d")
TEXT = ("# PWN heading\n- PWN list\n1. PWN ordered\n> PWN quote\n---\nPWN\n===\n| PWN | t |\n|---|---|\n"
        "<div>PWN</div>\n    PWN indented\n```\nPWN fence\n" + LINE)
BENIGN = {"name": "plain name", "line": "plain words", "text": "\n".join(["plain words"] * TEXT.count("\n")
                                                                         + ["plain words"])}
HOSTILE = {"name": NAME, "line": LINE, "text": TEXT}
LABELS = {"favor": "@PWN <b>favor</b> 中文 \u202eX", "against": "=1+1 |against|", "neutral": "+neutral\x1b[31m"}
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """What a reader is shown of `text`: without controls and overrides, on one line."""
    return " ".join(plain(text).split())


def assert_terminal_clean(text: str) -> None:
    assert "\x1b" not in text and not BIDI.search(text), repr(text[:300])
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), repr(text[:300])


# --- the runs, made of hostile words or of plain ones --------------------------------------------
def dataset(directory: Path, words: dict) -> Path:
    rows = [("first " + words["text"], words["line"], "favor"), ("second", words["name"], "against"),
            ("third", words["line"], "neutral"), ("fourth", words["name"], "favor")]
    with open(directory / "data.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("text", "target", "label"), *rows])
    return write(directory / f"{words['name']} data.yaml",
                 "path: data.csv\nformat: csv\ncolumns: {text: text, target: target, label: label}\n")


def quoted(text: str) -> str:
    """`text` as a YAML scalar (escape sequences and all)."""
    return yaml.safe_dump(text, allow_unicode=True, default_style='"', width=10**6).removesuffix("\n")


def conference(directory: Path, words: dict) -> Path:
    title, topic = quoted(words["name"]), quoted(words["line"])
    return write(directory / "conference.yaml", f"title: {title}\ntask: Decide.\ntopics: [{topic}, second]\n"
                 "moderator: {name: Moderator}\nparticipants: [{name: Ann}, {name: Bob}]\njudge: {name: Judge}\n"
                 "evaluator: {name: Evaluator}\nlimits: {max_rounds_per_topic: 2}\n")


def tamper(folder: Path, words: dict, labels: dict) -> Path:
    """A copy of a finished COLA folder as someone else might have written it."""
    copy = folder.with_name(folder.name + "-tampered")
    shutil.copytree(folder, copy)
    meta = json.loads((copy / "run.json").read_text())
    meta.update(models={role: words["name"] + " \ud800" for role in meta["models"]},
                labels=[labels[k] for k in meta["labels"]], dataset_path=words["line"], data_file=words["name"],
                scenario_path=words["name"] + ".yaml", skipped_rows={words["line"]: 1}, created=words["name"],
                scenario_sha256=words["line"], moot_version=words["name"])
    (copy / "run.json").write_text(json.dumps(meta))
    rows = [json.loads(line) for line in (copy / "results.jsonl").read_text().splitlines()]
    for row in rows:
        row.update(gold=labels[row["gold"]], prediction=labels.get(row["prediction"], row["prediction"]),
                   explanation=words["text"])
    (copy / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return copy


def make(directory: Path, words: dict, labels: dict) -> dict:
    """Every writer's output over runs made of `words`: {what: (text, stdout+stderr of the command)}."""
    directory.mkdir()
    spec = dataset(directory, words)
    scenario = write(directory / f"{words['name']}.yaml", "protocol: cola\nmodels: {default: scripted}\n")
    outputs = {}
    ran = moot(scenario, "--dataset", spec, "--out", directory / "cola", "--quiet")
    assert ran.code == 0, ran.err
    outputs["run (batch)"] = ran
    ran = moot("run", conference(directory, words), "--model", "scripted", "--out", directory / "conf")
    assert ran.code == 0, ran.err
    outputs["run (conference)"] = ran
    tampered = tamper(directory / "cola", words, labels)
    ran = moot("report", directory / "cola", tampered, directory / "conf", "--out", directory / "report")
    assert ran.code == 0, ran.err
    outputs["report"] = ran
    for name, run in (("cola", tampered), ("conf", directory / "conf")):
        unit = ["--unit", "0"] if name == "cola" else []
        for fmt in ("md", "html"):
            ran = moot("export", run, *unit, "--out", directory / f"{name}.{fmt}")
            assert ran.code == 0, ran.err
            outputs[f"export {name} {fmt}"] = ran
        ran = moot("replay", run, *unit, "--no-delay")
        assert ran.code == 0, ran.err
        outputs[f"replay {name}"] = ran
    ran = moot("compare", tampered, tampered, "--out", directory / "compare")
    assert ran.code == 0, ran.err
    outputs["compare"] = ran
    outputs.update(experiment(directory, words, spec))
    return outputs


def experiment(directory: Path, words: dict, spec: Path) -> dict:
    """An experiment whose arms are called by `words`, on the dataset `spec`, run and reported."""
    arms = [{"name": "direct", "scenario": "cola_direct", "label": words["name"]},
            {"name": "plain", "scenario": "cola_direct", "label": words["line"]}]
    write(directory / "exp.yaml", yaml.safe_dump({"experiment": "grid", "title": words["line"], "arms": arms,
                                                   "datasets": [str(spec)], "models": ["scripted"], "repeats": 1,
                                                   "limit": 4, "compare": {"reference": "direct"}}))
    ran = moot("run", directory / "exp.yaml", "--out", directory / "exp", "--quiet")
    assert ran.code == 0, ran.err
    reported = moot("report", directory / "exp", "--out", directory / "exp-report")
    assert reported.code == 0, reported.err
    return {"experiment": ran, "experiment report": reported}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("neutral")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hostile = make(root / "hostile", HOSTILE, LABELS)
    benign = make(root / "benign", BENIGN, {k: k for k in LABELS})
    return root, hostile, benign, caught


# --- Markdown ---------------------------------------------------------------------------------
def markdown_shape(text: str) -> tuple[list[str], list[str]]:
    """The structure a renderer gives `text` (block and inline tokens, text aside), and its links."""
    import markdown_it  # the test extra

    tokens = markdown_it.MarkdownIt("gfm-like", {"html": True, "linkify": True}).parse(text)
    shape, links = [], []
    for token in tokens:
        shape.append(token.type)
        for child in token.children or []:
            if child.type not in ("text", "text_special", "softbreak"):
                shape.append(child.type + (f":{child.content}" if child.type == "code_inline" else ""))
            if child.type == "link_open":
                links.append(str(child.attrs.get("href")))
    return shape, links


def rendered_text(text: str) -> str:
    import markdown_it

    return TextOf.of(markdown_it.MarkdownIt("gfm-like", {"html": True, "linkify": True}).render(text))


class TextOf(HTMLParser):
    """An HTML page's text, each block's on its own line; and its tags with their attribute names."""

    BLOCKS = {"p", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "li", "blockquote", "div", "pre", "tr", "title"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag + "(" + ",".join(sorted(name for name, _ in attrs)) + ")")
        if tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        self.parts.append(data)

    @classmethod
    def of(cls, page: str) -> str:
        found = cls()
        found.feed(page)
        return "".join(found.parts)

    @classmethod
    def tags_of(cls, page: str) -> list[str]:
        found = cls()
        found.feed(page)
        return found.tags


MARKDOWN = {"report.md": "report/report.md", "export (item)": "cola.md", "export (conference)": "conf.md",
            "compare": "compare/compare.md", "experiment": "exp-report/experiment.md"}
# what each shows as it was, on one line of its own rendering
SHOWN = {"report.md": [NAME, *LABELS.values()], "export (item)": [LINE, NAME], "export (conference)": [NAME, LINE],
         "compare": [NAME], "experiment": [NAME, LINE]}


@pytest.mark.parametrize("what", MARKDOWN)
def test_markdown_has_the_structure_plain_words_give_and_shows_the_text(what, made):
    root, _, _, _ = made
    with case("hostile", "neutral"):
        hostile = (root / "hostile" / MARKDOWN[what]).read_text(encoding="utf-8")
        benign = (root / "benign" / MARKDOWN[what]).read_text(encoding="utf-8")
        assert_terminal_clean(hostile.replace("\n", " "))
        (shape, links), (benign_shape, benign_links) = markdown_shape(hostile), markdown_shape(benign)
        assert shape == benign_shape
        ours = [link for link in benign_links if not link.startswith("plots/")]  # moot's own sources
        assert [link for link in links if not link.startswith("plots/")] == ours, links
        lines = rendered_text(hostile).splitlines()
        for text in SHOWN[what]:
            assert any(visible(text) in line for line in lines), visible(text)


def test_markdown_escapes_only_what_would_change_the_rendering():
    """Readable as a file: names, numbers, paths and sentences stay as written."""
    with case("hostile", "neutral"):
        for kept in ("emotional_intelligence", "scripted:MORE_DEBATE", "0.500† (n=2)", "-0.25", "data/run.json",
                     "R1: a topic (3 of 4 items); e.g. 3.5", "mean ± sd", "semeval_2016 (F_avg)"):
            assert markdown_safe(kept) == kept
        assert markdown_safe("1. topic", cell=True) == "1. topic" and markdown_safe("1. topic") == "1\\. topic"


# --- HTML -------------------------------------------------------------------------------------
@pytest.mark.parametrize("what", ["cola.html", "conf.html"])
def test_html_has_the_tags_plain_words_give_and_shows_the_text(what, made):
    root, _, _, _ = made
    with case("hostile", "neutral"):
        hostile = (root / "hostile" / what).read_text(encoding="utf-8")
        benign = (root / "benign" / what).read_text(encoding="utf-8")
        assert_terminal_clean(hostile.replace("\n", " "))
        assert TextOf.tags_of(hostile) == TextOf.tags_of(benign)
        shown = TextOf.of(hostile)
        for text in (NAME, LINE):
            assert visible(text) in " ".join(shown.split())


# --- CSV --------------------------------------------------------------------------------------
CSV_FILES = ["report/table.csv", "report/per_class.csv", "report/confusion.csv", "report/conference.csv",
             "exp-report/arms-*.csv"]  # an experiment table (its file is named by the dataset)


def cells(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


@pytest.mark.parametrize("name", CSV_FILES)
def test_csv_cells_are_never_formulas(name, made):
    root, _, _, _ = made
    with case("hostile", "neutral"):
        hostile, benign = (cells(next((root / kind).glob(name))) for kind in ("hostile", "benign"))
        assert [len(row) for row in hostile] == [len(row) for row in benign]
        for row in hostile:
            for cell in row:
                assert_terminal_clean(cell.replace("\n", " "))
                assert not cell.lstrip(" \n").startswith(("=", "@", "\t", "\r")), cell
                assert not cell.startswith(("-", "+")) or re.fullmatch(r"[-+][\d.]+", cell), cell  # a number
        prefixed = [c for row in hostile for c in row if c.startswith("'")]
        assert prefixed, "a hostile cell starts like a formula in every file"


def test_csv_safe_follows_owasp():
    with case("hostile", "neutral"):
        for formula in ("=1+1", "+1+1", "-1+1", "@SUM(A1)", "\t=1", "\r=1", " =1", "＝1", "=HYPERLINK(\"x\")"):
            assert str(csv_safe(formula)).startswith("'"), formula
        for kept in (3, -1.5, None, "-0.25", "+1e5", "plain", "a=b", "0.5000"):
            assert csv_safe(kept) == kept


# --- plots ------------------------------------------------------------------------------------
def test_plots_with_hostile_labels_print_nothing(made):
    root, hostile, _, caught = made
    with case("hostile", "neutral"):
        plots = sorted((root / "hostile" / "report" / "plots").glob("*.png"))
        assert len(plots) >= 3 and all(p.stat().st_size > 1000 for p in plots)
        drawn = sorted((root / "hostile" / "exp-report" / "plots").glob("*.*"))  # the experiment's, PNG and SVG
        assert len(drawn) >= 2 and all(p.stat().st_size > 1000 for p in drawn)
        assert hostile["report"].err == hostile["experiment report"].err == "" and not [str(w.message) for w in caught]


def test_a_report_prints_nothing_on_stderr_when_matplotlib_cannot_keep_its_cache(made, tmp_path):
    """A fresh matplotlib with a configuration folder it cannot write (its font list built anew)."""
    root, _, _, _ = made
    with case("hostile", "neutral"):
        proc = moot_process("report", root / "hostile" / "cola", "--out", tmp_path / "report",
                            env_extra={"MPLCONFIGDIR": "/dev/null/mpl"})
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and err == "", err
        assert_terminal_clean(out)


def covered_by(path: str) -> frozenset[int]:
    return fonts.charmap(path)


def test_a_character_is_drawn_by_an_installed_font_that_has_it_else_replaced(monkeypatch, tmp_path):
    """Render if a font exists, else replace, quietly and the same way every time: a font other
    than the primary one is made the only installed font, and a character only it has is drawn."""
    from matplotlib import font_manager
    import matplotlib

    primary = font_manager.findfont(font_manager.FontProperties())
    other = str(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "STIXGeneral.ttf")
    only_other = sorted(covered_by(other) - covered_by(primary) - set(range(0xE000, 0xF900)))
    char = chr(only_other[0])
    monkeypatch.setattr(fonts, "installed", lambda: (("STIXGeneral", other),))
    fonts.family_for.cache_clear()
    with case("hostile", "neutral"):
        assert fonts.fit(f"a{char}中", primary) == (f"a{char}\ufffd", ["STIXGeneral"])
        assert fonts.fit(f"a{char}中", primary) == (f"a{char}\ufffd", ["STIXGeneral"])  # deterministic
        assert fonts.fit("e\u0301\u200d\u180ex\u0350", primary)[0] == "e\u0301\u200dx"  # invisible ones dropped
        from moot.kit import plots
        import matplotlib.pyplot as plt

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fig, ax = plt.subplots()
            plots.title(ax, f"{char} 中文 😀 $x$ \x07")
            ax.set_xticks([0, 1], [char, "中"])
            plots.save(fig, tmp_path / "p.png")
    fonts.family_for.cache_clear()


# --- terminal ---------------------------------------------------------------------------------
TERMINAL = ["run (batch)", "run (conference)", "report", "replay cola", "replay conf", "export cola md", "compare",
            "experiment report"]


@pytest.mark.parametrize("what", TERMINAL)
def test_terminal_output_has_no_escape_or_override(what, made):
    _, hostile, _, _ = made
    with case("hostile", "neutral"):
        ran = hostile[what]
        assert ran.out.strip()
        assert_terminal_clean(ran.out.replace("\n", " ").replace("\t", " ") + ran.err.replace("\n", " "))


BAD = {  # (file, content, checked by validate too); each error line quotes what the file holds
    "label": ("data.csv", "text,target,label\n\"a\",t,\x1b[31mfavour\u202eX\n", False),
    "column": ("data.csv", "text,target,\x1b]0;PWN\x07label\u202e\n\"a\",t,favor\n", False),
    "spec key": ("data.yaml", "path: data.csv\ncolumns: {text: text, \"\\e[31mlabel\\u202e\": label}\n", True),
    "scenario key": ("cola.yaml", "protocol: cola\nmodels: {default: scripted}\n\"\\e[2Jtitle\\u202e\": x\n", True),
}


@pytest.mark.parametrize("bad", BAD)
def test_an_error_line_quoting_hostile_text_is_clean(bad, tmp_path):
    write(tmp_path / "data.csv", "text,target,label\n\"a\",t,favor\n")
    write(tmp_path / "data.yaml", "path: data.csv\ncolumns: {text: text, target: target, label: label}\n")
    write(tmp_path / "cola.yaml", "protocol: cola\nmodels: {default: scripted}\n")
    name, content, validated = BAD[bad]
    write(tmp_path / name, content)
    commands = [["run", tmp_path / "cola.yaml", "--dataset", tmp_path / "data.yaml", "--out", tmp_path / "o"]]
    commands += [["validate", tmp_path / "cola.yaml", tmp_path / "data.yaml"]] if validated else []
    with case("hostile", "neutral"):
        for argv in commands:
            ran = moot(*argv)
            assert ran.code == 2, ran.out + ran.err
            assert_terminal_clean(ran.out.replace("\n", " ") + ran.err.replace("\n", " "))


def test_a_wait_line_naming_hostile_text_is_clean(capsys):
    with case("hostile", "neutral"):
        show_wait(wait_line(30, "Retry-After", "openai:\x1b[31mx\u202e (Ann\x1b]0;PWN\x07)", 1, 3, None))
        err = capsys.readouterr().err
        assert err.startswith("waiting 30s before retrying openai:x (Ann)")
        assert_terminal_clean(err.strip())


# --- LaTeX ------------------------------------------------------------------------------------
UNLATEX = {r"\textbackslash{}": "\\", r"\textasciitilde{}": "~", r"\textasciicircum{}": "^", r"\textless{}": "<",
           r"\textgreater{}": ">", r"\textbar{}": "|", "{[}": "[", "{]}": "]", **{f"\\{c}": c for c in "&%$#_{}"},
           r"$\Delta$": "Δ", r"$\pm$": "±", r"\dag{}": "†", r"$\alpha$": "α"}  # moot's own table symbols


def unlatex(text: str) -> str:
    """The text a LaTeX escape shows; fails on any command, group or special it did not make."""
    pattern = "|".join(re.escape(k) for k in sorted(UNLATEX, key=len, reverse=True))
    rest = re.sub(pattern, "", text)
    assert not re.search(r"[\\{}$&%#_^~<>|\[\]]", rest), rest
    return re.sub(pattern, lambda m: UNLATEX[m.group()], text)


@pytest.mark.parametrize("text", [NAME, LINE, TEXT, r"\input{/etc/passwd} \write18{rm -rf ~} ^^5c \\[1cm] 50% #1",
                                  "}{\\end{tabular}\\begin{verbatim}", "\\\\\\"])
def test_latex_escapes_every_special_character(text):
    with case("hostile", "neutral"):
        escaped = latex_safe(text)
        assert "\n" not in escaped and not BIDI.search(escaped) and "\x1b" not in escaped
        assert unlatex(escaped) == visible(text)


@pytest.mark.parametrize("what", ["compare/compare.tex", "exp-report/arms-*.tex"])
def test_a_latex_table_has_the_cells_plain_words_give_and_shows_the_text(what, made):
    root, _, _, _ = made
    with case("hostile", "neutral"):
        hostile, benign = (next((root / kind).glob(what)).read_text(encoding="utf-8") for kind in ("hostile", "benign"))
        assert_terminal_clean(hostile.replace("\n", " "))
        rows = [[line.removesuffix(r" \\").split(" & ") for line in tex.splitlines() if line.endswith(r" \\")]
                for tex in (hostile, benign)]
        assert [len(row) for row in rows[0]] == [len(row) for row in rows[1]]
        caption = re.search(r"\\caption\{(.*)\}$", hostile, re.M)
        assert caption
        shown = [unlatex(cell) for cell in [caption.group(1), *(cell for row in rows[0] for cell in row)]]
        expected = {"compare/compare.tex": [NAME], "exp-report/arms-*.tex": [NAME, LINE]}[what]  # model; arms
        for text in expected:
            assert any(visible(text) in cell for cell in shown), (visible(text), shown)


def test_a_run_folder_named_with_hostile_text_prints_clean_lines(tmp_path):
    """The folder's name (someone else's folder, or a name pasted from elsewhere) in every line that names it."""
    write(tmp_path / "cola.yaml", "protocol: cola\nmodels: {default: scripted}\n")
    spec = dataset(tmp_path, BENIGN)
    run = tmp_path / NAME
    commands = [(tmp_path / "cola.yaml", "--dataset", spec, "--out", run, "--limit", 2),
                ("report", run, "--out", tmp_path / "report"), ("score", run, "--role", "judger=scripted"),
                ("replay", run, "--unit", "0", "--no-delay"),
                ("export", run, "--unit", "0", "--out", tmp_path / "0.md"),
                ("validate", tmp_path / "cola.yaml", spec)]
    with case("hostile", "neutral"):
        for argv in commands:
            ran = moot(*argv)
            assert ran.code == 0, (argv, ran.err)
            assert_terminal_clean(ran.out.replace("\n", " ") + ran.err.replace("\n", " "))
        assert "PWN" in moot("report", run, "--out", tmp_path / "again").out  # the name is shown, cleaned


# --- the one step -----------------------------------------------------------------------------
def test_every_kind_drops_overrides_controls_and_lone_surrogates():
    from moot.safety import neutral

    hostile = "a\u202eb\u2066c\x1b[31md\x07e\ud800f\u2069"
    with case("hostile", "neutral"):
        for kind in ("terminal_safe", "markdown_safe", "html_safe", "csv_safe", "latex_safe", "plot_safe"):
            shown = str(getattr(neutral, kind)(hostile))
            assert shown == "abcde\ufffdf", (kind, shown)
            shown.encode("utf-8")
