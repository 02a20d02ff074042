"""Torture: the bundle is a complete, safe copy (issue 32, class 3). Every local link of a written
bundle leads to a file it holds (a bundle of every protocol, and one of damaged runs); a damaged
unit or run is a page saying so and one line, the rest bundled; a folder holding the user's own
files is never written into."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from torture_support import assert_clean, case, files_of, moot, scripted_batches
from viewer_support import make_runs


def dead_links(bundle: Path) -> dict[str, str]:
    """Each local href or src of the bundle's pages whose file it does not hold (-> the page)."""
    dead = {}
    for page in bundle.rglob("*.html"):
        for href in re.findall(r'(?:href|src)="([^"]*)"', page.read_text(encoding="utf-8")):
            href = href.replace("&amp;", "&")
            if not href or href.startswith(("#", "data:", "http:", "https:", "mailto:")):
                continue
            assert not urlsplit(href).query, (page, href)  # a bundle has no server to read a query
            if not (page.parent / unquote(urlsplit(href).path)).resolve().is_file():
                dead[href] = str(page.relative_to(bundle))
    return dead


@pytest.fixture(scope="module")
def every_protocol(tmp_path_factory) -> Path:
    return make_runs(tmp_path_factory.mktemp("every"))["conference"].parent


def test_every_link_of_a_bundle_of_every_protocol_leads_to_a_page_it_holds(every_protocol, tmp_path):
    with case("hostile", "bundle"):
        ran = moot("view", every_protocol, "--bundle", tmp_path / "bundle")
        assert ran.code == 0, ran.err
        assert len(list((tmp_path / "bundle").rglob("*.html"))) > 50
        assert dead_links(tmp_path / "bundle") == {}


@pytest.fixture
def damaged(tmp_path) -> Path:
    runs = scripted_batches(tmp_path / "runs", ("a",), ("b",), ("c",))
    meta = json.loads((runs / "b" / "run.json").read_text(encoding="utf-8"))
    (runs / "b" / "run.json").write_text(json.dumps({**meta, "models": 5}), encoding="utf-8")
    unit = runs / "c" / "3.jsonl"
    lines = unit.read_text(encoding="utf-8").splitlines()
    unit.write_text("\n".join(lines[:2] + ["{garbled"] + lines[3:]) + "\n", encoding="utf-8")
    return runs


def test_a_damaged_unit_or_run_is_one_line_and_a_page_and_the_rest_is_bundled(damaged, tmp_path):
    with case("damaged files", "bundle"):
        bundle = tmp_path / "bundle"
        ran = moot("view", damaged, "--bundle", bundle)
        assert_clean(ran, 2)
        assert ran.code == 2 and "c/3.jsonl:3: garbled event" in ran.err and "b/run.json: key 'models'" in ran.err
        assert dead_links(bundle) == {}
        assert "garbled event" in (bundle / "r" / "c" / "u" / "3.calls.html").read_text(encoding="utf-8")
        assert "key &#39;models&#39;" in (bundle / "r" / "b" / "index.html").read_text(encoding="utf-8")
        for unit in ("0", "1", "2", "4", "5"):  # the other units of the damaged run, and every untouched run
            assert "class=\"problem\"" not in (bundle / "r" / "c" / "u" / f"{unit}.calls.html").read_text(encoding="utf-8")
        assert (bundle / "r" / "a" / "u" / "3.html").is_file()


@pytest.mark.parametrize("mine", ["notes.txt", "index.html", "r/paper.tex", "static/logo.svg"])
def test_a_folder_holding_the_users_own_files_is_never_written_into(damaged, tmp_path, mine):
    with case("bad inputs", "bundle"):
        out = tmp_path / "supplement"
        assert moot("view", damaged / "a", "--bundle", out).code == 0  # a bundle: replaced whole
        assert moot("view", damaged / "a", "--bundle", out).code == 0
        shutil.rmtree(out)
        (out / mine).parent.mkdir(parents=True)
        (out / mine).write_text("the user's own words", encoding="utf-8")
        ran = moot("view", damaged / "a", "--bundle", out)
        assert_clean(ran, 1)
        assert ran.code == 2 and "not a bundle's" in ran.err, ran.err
        assert files_of(out) == [out / mine] and (out / mine).read_text(encoding="utf-8") == "the user's own words"
