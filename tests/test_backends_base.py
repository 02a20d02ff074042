"""Base models behind a server (`backends.<server>.kind: base`), at the HTTP level: every role
continues its document through the completions endpoint (OpenAI-compatible `/v1/completions`;
Ollama's generate endpoint in raw mode) with the document form's stops, and closed answers are
read from the returned log-probabilities (never structured output), as on the embedded model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Union

import pytest
from backend_support import RecordingServer, loopback_only  # noqa: F401

from moot.cli import main
from moot.log.transcript import load

OPTIONS = (" positive", " negative", " neutral")


def top_logprobs(prompt: str) -> dict[str, float]:
    """The stand-in model's first-token log-probabilities: it likes ' positive' after a post."""
    if prompt.endswith("feels"):
        return {" positive": -0.4, " negative": -1.6, " neutral": -2.2, " very": -3.0}
    return {" The": -0.5, " It": -1.0}


def openai_like(path: str, body: dict) -> tuple[int, Union[dict, list[dict]]]:
    if path != "/v1/completions":
        return 404, {"error": f"a base model has no chat: {path}"}
    if body.get("logprobs"):
        tops = top_logprobs(body["prompt"])
        first = max(tops, key=tops.get)
        choice = {"text": first, "finish_reason": None, "logprobs": {"tokens": [first], "top_logprobs": [tops]}}
        if body.get("stream"):  # as llama_cpp.server streams it: the token's chunk, then the finish
            return 200, [{"choices": [choice]}, {"choices": [{"text": "", "finish_reason": "length", "logprobs": None}]}]
        choice["finish_reason"] = "length"
    else:
        choice = {"text": " argues that the post is clear. It says so twice.\n\nJudge: no", "finish_reason": "stop"}
    return 200, {"choices": [choice], "usage": {"prompt_tokens": 30, "completion_tokens": 12}}


def scenario(tmp_path, server: str) -> str:
    path = tmp_path / "cola.yaml"
    path.write_text(f"protocol: cola\nbackends: {{{server}: {{kind: base}}}}\n", encoding="utf-8")
    return str(path)


def item(out) -> object:
    (path,) = [p for p in out.glob("item-*.jsonl")]
    return load(path)


def stance_through(handler, tmp_path) -> tuple[RecordingServer, Path]:
    """One COLA item on a base model `kind: base` behind an OpenAI-compatible server answering as
    `handler` does: (the server, with the requests it saw; the run folder)."""
    out = tmp_path / "run"
    with RecordingServer(handler) as server:
        assert main(["run", scenario(tmp_path, "openai"), "--model", "openai:base", "--base-url", f"{server.url}/v1",
                     "--input", "text=School uniforms are great.", "--input", "target=school uniforms",
                     "--out", str(out), "--quiet"]) == 0
    return server, out


def test_a_base_model_behind_an_openai_compatible_server(tmp_path):
    server, out = stance_through(openai_like, tmp_path)
    paths = {path for path, _ in server.requests}
    assert paths == {"/v1/completions"}  # never the chat endpoint
    turns = [b for _, b in server.requests if not b.get("logprobs")]
    assert len(turns) == 6 and all("messages" not in b for b in turns)
    # the three analysts ask at once: their requests arrive in any order
    linguist = next(b for b in turns if b["prompt"].endswith("\n\nLinguist: The post"))
    assert linguist["prompt"].startswith("Stance analysis of a social media post about school uniforms.\n\n"
                                         'Post: "School uniforms are great."')
    assert linguist["prompt"].endswith("\n\nLinguist: The post") and "\n\n" in linguist["stop"]
    assert "Judge:" in linguist["stop"] and linguist["max_tokens"] == 48  # the scenario's turn_tokens
    asked = [b for _, b in server.requests if b.get("logprobs")]
    assert asked and all(b["max_tokens"] == 1 and b["prompt"].endswith("feels") for b in asked)
    assert all(b["stream"] is True for b in asked)  # llama_cpp.server scores an unstreamed one's whole context
    assert all(b["logprobs"] == 1000 for b in asked)  # a document's options looked for beyond the top 20
    t = item(out)
    said = {m.role: m.content for m in t.messages}
    assert said["linguist"] == "The post argues that the post is clear. It says so twice."  # stopped at the blank line
    (judger,) = [c for c in t.calls if c.role == "judger" and c.stage == "conclusion"]
    assert judger.kind == "choice" and judger.detail.method == "top_logprobs" and not judger.output
    assert t.outcome.prediction == "favor" and t.outcome.decided_by == "judger (top_logprobs)"


def at_most_20(path: str, body: dict) -> tuple[int, Union[dict, list[dict]]]:
    """A server that lists no more than the top 20 log-probabilities (vLLM's default, OpenAI's)."""
    if (body.get("logprobs") or 0) > 20:
        return 400, {"error": {"message": "Requested logprobs of 1000, which is greater than max allowed: 20"}}
    return openai_like(path, body)


def test_a_server_that_lists_no_more_than_20_is_asked_for_20_from_then_on(tmp_path):
    server, out = stance_through(at_most_20, tmp_path)
    widths = [b["logprobs"] for _, b in server.requests if b.get("logprobs")]
    assert widths[0] == 1000 and widths[1:] and set(widths[1:]) == {20}  # refused once, never asked again
    t = item(out)
    assert t.outcome.prediction == "favor" and t.outcome.decided_by == "judger (top_logprobs)"


def ollama_like(path: str, body: dict) -> tuple[int, dict]:
    if path != "/api/generate":
        return 404, {"error": f"a base model has no chat: {path}"}
    answer = {"model": body["model"], "created_at": "2025-01-01T00:00:00Z", "done": True,
              "prompt_eval_count": 30, "eval_count": 12}
    if body.get("logprobs"):
        tops = top_logprobs(body["prompt"])
        first = max(tops, key=tops.get)
        return 200, {**answer, "response": first, "done_reason": "length",
                     "logprobs": [{"token": first, "logprob": tops[first],
                                   "top_logprobs": [{"token": t, "logprob": lp} for t, lp in tops.items()]}]}
    return 200, {**answer, "response": " argues that the post is clear. It says so twice.", "done_reason": "stop"}


def test_a_base_model_behind_ollama_uses_generate_in_raw_mode(tmp_path):
    out = tmp_path / "run"
    with RecordingServer(ollama_like) as server:
        assert main(["run", scenario(tmp_path, "ollama"), "--model", "ollama:gemma3-base", "--ollama-host", server.url,
                     "--input", "text=School uniforms are great.", "--input", "target=school uniforms",
                     "--out", str(out), "--quiet"]) == 0
    assert {path for path, _ in server.requests} == {"/api/generate"}
    bodies = [b for _, b in server.requests]
    assert all(b["raw"] is True and b["stream"] is False and b["model"] == "gemma3-base" for b in bodies)
    turns = [b for b in bodies if not b.get("logprobs")]
    assert turns[0]["prompt"].endswith("\n\nLinguist: The post") and "\n\n" in turns[0]["options"]["stop"]
    assert turns[0]["options"]["num_predict"] == 48
    asked = [b for b in bodies if b.get("logprobs")]
    assert asked and all(b["top_logprobs"] == 20 and b["options"]["num_predict"] == 1 for b in asked)
    t = item(out)
    assert t.outcome.prediction == "favor" and t.outcome.decided_by == "judger (top_logprobs)"
    assert next(c for c in t.calls if c.role == "linguist").detail.note == \
        "logits processors are not applied by a server"


@pytest.mark.parametrize("server", ["openai", "ollama"])
def test_the_kind_is_checked(tmp_path, capsys, server):
    path = tmp_path / "s.yaml"
    path.write_text(f"protocol: cola\nbackends: {{{server}: {{kind: chat}}}}\n", encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    assert f"backends.{server}.kind: Input should be 'auto', 'base' or 'instruct'" in capsys.readouterr().out


def test_a_chat_model_on_ollama_is_asked_for_structured_output_instead(tmp_path):
    """An Ollama chat model cannot read given options: a likelihood choice falls back to JSON."""
    def chat(path: str, body: dict) -> tuple[int, dict]:
        content = json.dumps({"answer": "B"}) if body.get("format") else "An analysis."
        return 200, {"model": body["model"], "created_at": "2025-01-01T00:00:00Z", "done": True,
                     "done_reason": "stop", "message": {"role": "assistant", "content": content}}

    path = tmp_path / "s.yaml"
    path.write_text("protocol: cola\nchoice: likelihood\n", encoding="utf-8")
    out = tmp_path / "run"
    with RecordingServer(chat) as server:
        assert main(["run", str(path), "--model", "ollama:chatty", "--ollama-host", server.url,
                     "--input", "text=Uniforms.", "--input", "target=uniforms", "--out", str(out), "--quiet"]) == 0
    (judger,) = [c for c in item(out).calls if c.role == "judger"]
    assert judger.kind == "choice" and judger.detail.method == "structured"
    assert "declare a base model" in judger.detail.note and item(out).outcome.prediction == "favor"


def test_a_score_read_from_ollama_s_twenty_log_probabilities_bounds_what_they_do_not_list():
    """Ollama lists at most 20 log-probabilities a position: a 1-10 score on a Gemma-like tokenizer
    reads " ", then the digit, then "0" after a "1"; digits absent from every list read get the
    smallest log-probability listed (an upper bound) and are named in `bounded`; the usage is the
    sum of the positions read."""
    import asyncio
    import math

    from autogen_core.models import UserMessage

    from moot.models.factory import build_client
    from moot.models.backends.ollama.provider import OllamaBackend
    from moot.models.provider import BackendOptions
    from moot.models.requests import REQUEST_ARG, Score

    junk = [f"w{n}" for n in range(20)]
    lists = {"": {" ": 0.6, **{t: 0.02 for t in junk[:19]}},
             " ": {"1": 0.3, "7": 0.2, "8": 0.1, **{t: 0.02 for t in junk[:17]}},
             " 1": {"0": 0.3, **{t: 0.03 for t in junk[:19]}}}

    def ollama20(path: str, body: dict) -> tuple[int, dict]:
        tops = lists[body["prompt"].rpartition("Score (1-10):")[2]]
        assert len(tops) <= body["top_logprobs"] == 20
        first = max(tops, key=tops.get)
        return 200, {"model": body["model"], "created_at": "2025-01-01T00:00:00Z", "done": True,
                     "prompt_eval_count": 40, "eval_count": 1, "response": first, "done_reason": "length",
                     "logprobs": [{"token": first, "logprob": math.log(tops[first]),
                                   "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in tops.items()]}]}

    with RecordingServer(ollama20) as server:
        client = build_client("ollama:gemma3-base", {"max_tokens": 8},
                              BackendOptions({"ollama": OllamaBackend(host=server.url, kind="base")}))
        result = asyncio.run(client.create([UserMessage(content="A debate.", source="document")],
                                           extra_create_args={REQUEST_ARG: Score(prefix="Score (1-10):").as_dict()}))
    assert set(result.detail["bounded"]) == {"2", "3", "4", "5", "6", "9"}
    floor = math.log(0.02)  # the smallest listed anywhere: no absent digit is read above it
    assert all(result.detail["logprobs"][d] == pytest.approx(floor, abs=1e-4) for d in result.detail["bounded"])
    assert result.detail["logprobs"]["7"] == pytest.approx(math.log(0.6 * 0.2), abs=1e-4)
    assert result.usage.prompt_tokens == 120 and result.usage.completion_tokens == 3  # three positions read
