"""Tracing (moot.tracing, the `tracing` extra): a scripted run's spans, run -> unit -> model call,
with their attributes and parents, and nothing secret or said in them; off, no SDK imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from moot import tracing
from moot.cli import main
from moot.errors import EXIT_ENVIRONMENT

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-tracing-test-secret-0123456789"


@pytest.fixture
def spans():
    """moot's spans, kept in memory while the test runs."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.start(provider)
    try:
        yield exporter
    finally:
        tracing.stop()


def run_items(out: Path, *extra: str) -> int:
    return main(["run", "cola", "--dataset", "demo-stance", "--limit", "2", "--model", "scripted", "--out", str(out),
                 "--quiet", *extra])


def recorded_calls(out: Path) -> list[dict]:
    """The `call` events of the run's transcripts."""
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return [event for row in rows for line in (out / row["transcript"]).read_text(encoding="utf-8").splitlines()
            if (event := json.loads(line))["type"] == "call"]


def said(out: Path) -> set[str]:
    """Every prompt and reply the run's transcripts hold (but short words)."""
    texts = {t for call in recorded_calls(out) for t in [call["reply"], *(str(m["content"]) for m in call["messages"])]}
    return {t for t in texts if len(t) > 20}


def test_a_run_is_traced_as_run_unit_and_call_spans(tmp_path, spans, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "run"
    assert run_items(out, "--api-key", KEY) == 0
    found = spans.get_finished_spans()
    (run,) = [s for s in found if s.name == "moot.run"]
    units = [s for s in found if s.name == "moot.unit"]
    calls = [s for s in found if s.name.startswith("chat ")]
    assert len(found) == 1 + len(units) + len(calls)
    assert run.parent is None
    assert run.attributes["moot.protocol"] == "cola" and run.attributes["moot.run_folder"] == str(out)
    assert run.attributes["moot.scenario"].endswith("cola.yaml")
    assert all(spec.endswith("=scripted") for spec in run.attributes["moot.models"])
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(u.attributes["moot.unit.id"] for u in units) == sorted(r["id"] for r in rows)
    assert {u.attributes["moot.unit.status"] for u in units} == {"completed"}
    assert all(u.parent.span_id == run.context.span_id and u.context.trace_id == run.context.trace_id for u in units)
    assert len(calls) == len(recorded_calls(out)) > 0
    unit_ids = {u.context.span_id for u in units}
    for call in calls:
        assert call.parent.span_id in unit_ids and call.context.trace_id == run.context.trace_id
        a = call.attributes
        assert call.name == f"chat {a['gen_ai.request.model']}"
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "scripted"
        assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
        assert a["moot.cached"] is False and a["moot.attempts"] == 1 and a["moot.retries"] == 0
        assert a["moot.role"] and a["moot.latency_s"] >= 0
    texts = said(out)
    assert texts
    for s in found:
        for value in s.attributes.values():
            shown = json.dumps(value) if not isinstance(value, str) else value
            assert KEY not in shown and not any(t in shown for t in texts), (s.name, value)


def test_a_call_the_cache_answers_is_traced_as_cached(tmp_path, spans, capsys):
    out = tmp_path / "run"
    assert run_items(out) == 0
    for row in (out / "results.jsonl").read_text().splitlines():  # the units run again, answered by the reply cache
        (out / json.loads(row)["transcript"]).unlink()
    (out / "results.jsonl").unlink()
    spans.clear()
    assert run_items(out) == 0
    calls = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    assert calls and all(c.attributes["moot.cached"] is True and c.attributes["moot.attempts"] == 0 for c in calls)


def test_trace_without_the_extra_is_one_line(tmp_path, monkeypatch, capsys):
    for name in ("opentelemetry.sdk", "opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter"):
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed: importing it fails
    assert run_items(tmp_path / "run", "--trace") == EXIT_ENVIRONMENT
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'moot[tracing]'" in err
    assert tracing.TRACER is None and not (tmp_path / "run").exists()


def test_tracing_off_imports_no_sdk(tmp_path):
    """Off, a whole run in a fresh interpreter imports nothing of OpenTelemetry's SDK."""
    code = ("import sys; from moot.cli import main; "
            f"rc = main(['run', 'cola', '--dataset', 'demo-stance', '--limit', '1', '--model', 'scripted', "
            f"'--out', {str(tmp_path / 'run')!r}, '--quiet']); "
            "print(rc, sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'opentelemetry.exporter'))))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MOOT_TRACE", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stderr[-2000:]
