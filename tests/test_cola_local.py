"""One real COLA item with the embedded model (Gemma 3 270M via llama.cpp)."""

from __future__ import annotations

import pytest

from moot.cli import main
from moot.log.events import Outcome
from moot.log.transcript import load


@pytest.mark.slow
def test_cola_one_item_with_the_embedded_model(tmp_path, capsys):
    scenario = tmp_path / "cola.yaml"
    scenario.write_text("protocol: cola\nmodels: {default: local}\n"
                        "generation: {temperature: 0.0, max_tokens: 48, seed: 0}\n", encoding="utf-8")
    out = tmp_path / "one"
    argv = [str(scenario), "--input", "text=Teaching online is a drag. Bring back teachers.",
            "--input", "target=online classes", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "] judger (" in printed and "stance: " in printed
    transcript = load(next(out.glob("item-*.jsonl")))
    # Six turns, the judger's answer and its three content-free twins (contextual calibration).
    assert len(transcript.calls) == 10 and all(c.model == "local" and c.reply and not c.cached for c in transcript.calls)
    assert [c.stage for c in transcript.calls].count("calibration") == 3
    outcome = transcript.events[-2]
    # The embedded default reads the judger's answer by likelihood: never unparsed.
    judger = transcript.calls[-1]
    assert judger.role == "judger" and judger.kind == "choice" and judger.detail.method == "likelihood"
    assert set(judger.detail.probabilities) == {"positive", "negative", "neutral"}
    assert judger.reply == max(judger.detail.probabilities, key=judger.detail.probabilities.get)
    assert isinstance(outcome, Outcome) and outcome.prediction in ("favor", "against", "neutral")
    assert outcome.decided_by == "judger (likelihood)"
    assert "by likelihood: positive " in outcome.explanation and "calibrated: " in outcome.explanation
    assert transcript.completed
    (out / "results.jsonl").unlink()  # the item again, from a fresh results file: every call from the cache
    transcript.path.unlink()
    assert main(argv) == 0
    assert "backend_calls=0 cache_hits=10" in capsys.readouterr().out
