"""The exports say as much as the viewer: the task, the personas, the names the turns use, a
labelled run's metrics, scores as a chart on a labelled 1-10 axis (the reply as written folded),
the setup folded after the title; and Markdown that is inert yet readable as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from moot.contract.registry import view_of
from moot.cli import main
from moot.log.transcript import load
from moot.views.html import render_html
from moot.views.markdown import inline, quote, render_markdown

ROOT = Path(__file__).resolve().parents[1]


def conference(tmp_path: Path, make_scenario) -> Path:
    path = make_scenario(topics=1)
    path.write_text(path.read_text().replace("  - name: Alice\n", "  - name: Alice\n    label: Dr. Alice\n", 1))
    out = tmp_path / "conf"
    assert main([str(path), "--model", "scripted", "--out", str(out), "--quiet"]) == 0
    return out / "conference.jsonl"


def test_a_conference_export_shows_task_personas_names_and_a_labelled_chart(make_scenario, tmp_path):
    t = load(conference(tmp_path, make_scenario))
    page = render_html([t], [view_of(t.started)])
    assert '<div class="meta">Task</div><blockquote class="quote" dir="auto">Decide the test questions.</blockquote>' in page
    agents = page[page.index('<table class="agents">'):]
    agents = agents[:agents.index("</table>")]
    assert "<th scope=\"col\">Shown as</th>" in agents and "<th scope=\"col\">Persona</th>" in agents
    assert ">Dr. Alice</td>" in agents and ">Alice the tester.</td>" in agents
    # setup folded, before the conversation
    assert page.index('<details class="fold"><summary>Setup: conference') < page.index('<article class="entry"')
    # the evaluator's scores: a chart on a 0-10 axis with its title; the JSON reply folded, its rationale shown
    chart = page[page.index('<figure class="scores">'):page.index("</figure>")]
    assert chart.count('<text class="tick"') == 12 and "score (1–10)" in chart and 'aria-label="scores, scale 1 to 10"' in chart
    evaluator = re.search(r'<article class="entry" id="turn-\d+" data-speaker="Evaluator".*?</article>', page, re.S)
    assert evaluator is not None
    content = re.search(r'<div class="content" dir="auto">(.*?)</div>', evaluator.group()).group(1)
    assert not content.lstrip().startswith("{") and "(scripted) rationale" in content
    assert '<details class="raw"><summary>reply as written</summary><pre dir="auto">{&quot;clarity&quot;' in evaluator.group()
    markdown = render_markdown([t], [view_of(t.started)])
    assert "| Criterion | Score (1–10) |" in markdown and "Decide the test questions." in markdown
    assert "| Alice | Dr. Alice | participant | scripted | Alice the tester. |" in markdown


def test_a_labelled_run_exports_its_metrics(tmp_path):
    out = tmp_path / "cola"
    assert main(["run", "cola", "--dataset", str(ROOT / "datasets" / "demo-stance.yaml"), "--limit", "6",
                 "--model", "scripted", "--out", str(out), "--quiet"]) == 0
    assert main(["export", str(out), "--out", str(tmp_path / "cola.md")]) == 0
    text = (tmp_path / "cola.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    golds = [load(p).outcome.gold for p in sorted(out.glob("stance-*.jsonl"))]
    predictions = [load(p).outcome.prediction for p in sorted(out.glob("stance-*.jsonl"))]
    right = sum(g == p for g, p in zip(golds, predictions))
    assert "## Metrics" in text and "| scored units | 6 |" in rows
    assert f"| accuracy | {right / 6:.3f} |" in rows
    assert any(r.startswith("| F1 of favor |") for r in rows) and "| gold \\\\ prediction | favor | against | neutral | unparsed |" in rows
    assert sum(int(c) for r in rows if r.split("|")[1].strip() in ("favor", "against", "neutral")
               and len(r.split("|")) == 7 for c in r.split("|")[2:6]) == 6


PAYLOAD = ("[click](https://evil.example/) [js](javascript:alert(1)) ![img](https://evil.example/i.png) "
           "<script>alert(1)</script> <https://evil.example/auto> www.evil.example http://evil.example/x "
           "**bold** `code` <b>b</b> [ref]: https://evil.example/\n# heading\n- list\n1. one\n2) two\n+ plus\n===\n"
           "mail bob@evil.example or @octocat, //evil.example/p, ftp://x.y, mailto:a@b.co, evil.example/path, "
           "~~strike~~ $x^2$ _em_ __strong__ [^1]\n<!-- c -->\n| a | b |")
READABLE = "snake_case p(agree)=0.70 >= 0.60 scripted:MORE_DEBATE 12.5% (1-10) First->second #tag -0.5 done."


def rendered(markdown: str) -> tuple[str, set[str]]:
    import markdown_it  # the test extra

    renderer = markdown_it.MarkdownIt("gfm-like", {"html": True, "linkify": True})
    tokens = [t for block in renderer.parse(markdown) for t in [block, *(block.children or [])]]
    return renderer.render(markdown), {t.type for t in tokens}


def test_markdown_is_inert_and_reads_as_written():
    html, kinds = rendered("\n".join(quote(PAYLOAD)))
    assert not kinds & {"link_open", "image", "html_inline", "html_block", "code_inline", "s_open", "em_open",
                        "strong_open", "heading_open", "bullet_list_open", "ordered_list_open", "table_open",
                        "hr", "math_inline"}, kinds
    text = re.sub(r"<[^>]+>", "", html).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert [line.strip() for line in text.strip().splitlines()] == [" ".join(line.split()) for line in PAYLOAD.splitlines()]
    assert inline(READABLE) == READABLE.replace(">", "&gt;")  # nothing in it would render otherwise


@pytest.mark.parametrize("line", ["# h", "- x", "+ y", "1. a", "12) b", "==="])
def test_a_line_start_that_would_make_markup_is_escaped(line):
    html, kinds = rendered(inline(line))
    assert kinds <= {"paragraph_open", "paragraph_close", "inline", "text"}, kinds
