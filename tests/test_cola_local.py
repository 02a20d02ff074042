"""One real COLA item with the embedded model (Gemma 3 270M via llama.cpp)."""

from __future__ import annotations

import pytest

from moot.cli import main
from moot.protocols.record import Call, ItemFinished, load_item


@pytest.mark.slow
def test_cola_one_item_with_the_embedded_model(tmp_path, capsys):
    scenario = tmp_path / "cola.yaml"
    scenario.write_text("protocol: cola\nmodels: {default: local}\n"
                        "generation: {temperature: 0.0, max_tokens: 48, seed: 0}\n", encoding="utf-8")
    transcript = tmp_path / "one.jsonl"
    argv = [str(scenario), "--input", "text=Teaching online is a drag. Bring back teachers.",
            "--input", "target=online classes", "--out", str(transcript), "--cache", str(tmp_path / "c.sqlite")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "== judger (conclusion)" in out and "stance: " in out
    events = load_item(transcript)
    calls = [e for e in events if isinstance(e, Call)]
    assert len(calls) == 7 and all(c.model == "local" and c.reply for c in calls)
    assert events[-1].prediction in ("favor", "against", "neutral", "unparsed")
    assert isinstance(events[-1], ItemFinished)
    assert main(argv) == 0  # repeated: every call from the cache
    assert "backend_calls=0 cache_hits=7" in capsys.readouterr().out
