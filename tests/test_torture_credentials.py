"""Torture: credentials in any URL — a scenario's `backends.*.base_url` or Ollama host, `--base-url`,
`--ollama-host`, $OPENAI_BASE_URL — with `user:password@` and a key in the query string.

The credentials are used as the server expects them (HTTP basic auth from the user info, the query
parameters with every request) so the run completes against a loopback server that checks them; and
no file the run writes (run.json, every transcript with its scenario copy and backends), nothing
replay, export or report show, and no error line holds the password, the query key, or the user.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from backend_support import RecordingServer, loopback_only  # noqa: F401
from fault_server import FaultServer
from test_backends_ollama import ollama_chat
from torture_support import (
    ROOT, assert_clean, case, dataset, files_of, moot, read_jsonl, unit_transcripts, write,
)

USER, PASSWORD, KEY = "alice", "hunter2", "qk-9d2c41f0a7"  # a short password: not registered, still masked
LEAKS = (PASSWORD, KEY, f"{USER}:", f"{USER}@")
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
ITEM = ["--input", "text=Cut taxes now!", "--input", "target=taxes"]


def items(tmp_path) -> list:
    """Two items of a labelled dataset (so a report can be made of the run)."""
    return ["--dataset", dataset(tmp_path), "--limit", "2"]


def with_credentials(url: str) -> str:
    return url.replace("http://", f"http://{USER}:{PASSWORD}@") + f"?api-key={KEY}&api-version=2024-06"


def assert_nothing_leaks(*texts: str, folder=None) -> None:
    for text in texts:
        assert not [leak for leak in LEAKS if leak in text], text[-2000:]
    for path in files_of(folder) if folder is not None else []:
        data = path.read_bytes()
        assert not [leak for leak in LEAKS if leak.encode() in data], path


def assert_shown_masked(folder) -> None:
    """run.json and each transcript's scenario copy and backends keep where the run went, masked."""
    meta = json.loads((folder / "run.json").read_text())
    started = [read_jsonl(p)[0] for p in unit_transcripts(folder)]
    recorded = json.dumps([meta["scenario"].get("backends"), *[s["scenario"].get("backends") for s in started],
                           *[s["settings"]["backends"] for s in started]])
    assert f"[redacted]@127.0.0.1" in recorded and "api-key=[redacted]" in recorded, recorded
    assert "api-version=2024-06" in recorded  # what is not a credential is kept


def shown_by_other_commands(folder, tmp_path, report: bool = True) -> str:
    """What replay, export and report show of a run (the report's files are checked too)."""
    said = ""
    for argv in (["replay", folder], ["export", folder, "--format", "md", "--out", "-"],
                 *([["report", folder, "--out", tmp_path / "report"]] if report else [])):
        ran = moot(*argv)
        assert ran.code == 0, ran.err
        said += ran.out + ran.err
    if report:
        assert_nothing_leaks(folder=tmp_path / "report")
    return said


def cola(tmp_path, backends: str = "") -> object:
    """A COLA scenario on the stand-in server, whose replies are no labels (`max_unparsed: 1`: this
    tests credentials, not answers)."""
    return write(tmp_path / "cola.yaml", "protocol: cola\nmodels: {default: 'openai:m'}\nmax_unparsed: 1\n"
                                         f"retry: {{attempts: 2, backoff_s: 0.05, timeout_s: 5}}\n{backends}")


@pytest.mark.parametrize("where", ["scenario", "--base-url", "OPENAI_BASE_URL"])
def test_an_openai_url_with_credentials_is_used_as_basic_auth_and_never_recorded(where, tmp_path):
    with FaultServer("ok") as server, case("fault modes", "credentials"):
        url = with_credentials(server.url)
        if where == "scenario":
            scenario, extra, env = cola(tmp_path, f"backends: {{openai: {{base_url: '{url}'}}}}\n"), [], {}
        elif where == "--base-url":
            scenario, extra, env = cola(tmp_path), ["--base-url", url], {}
        else:
            scenario, extra, env = cola(tmp_path), [], {"OPENAI_BASE_URL": url}
        proc = subprocess.run([sys.executable, "-m", "moot", scenario, *items(tmp_path), "--out", tmp_path / "run",
                               "--quiet", *extra], capture_output=True, text=True, cwd=ROOT, timeout=120,
                              env={**os.environ, **env})
        assert proc.returncode == 0, proc.stderr
        assert server.requests and all(r.authorization == BASIC for r in server.requests)
        assert all(f"api-key={KEY}" in urlsplit(r.path).query for r in server.requests)
        assert all(urlsplit(r.path).path == "/v1/chat/completions" for r in server.requests)
        assert_nothing_leaks(proc.stdout, proc.stderr, folder=tmp_path / "run")
        assert_shown_masked(tmp_path / "run")
        assert_nothing_leaks(shown_by_other_commands(tmp_path / "run", tmp_path))


@pytest.mark.parametrize("where", ["scenario", "--ollama-host"])
def test_an_ollama_host_with_credentials_is_used_as_basic_auth_and_never_recorded(where, tmp_path):
    def checked(path, body):
        return ollama_chat(urlsplit(path).path, body)

    with RecordingServer(checked) as server, case("fault modes", "credentials"):
        url = with_credentials(server.url)
        scenario = write(tmp_path / "cola.yaml", "protocol: cola\nmodels: {default: 'ollama:llama3'}\nmax_unparsed: 1\n" + (
            f"backends: {{ollama: {{host: '{url}'}}}}\n" if where == "scenario" else ""))
        extra = ["--ollama-host", url] if where == "--ollama-host" else []
        ran = moot(scenario, *ITEM, "--out", tmp_path / "run", "--quiet", *extra)
        assert ran.code == 0, ran.err
        assert server.headers and all(h.get("Authorization") == BASIC for h in server.headers)
        assert all(f"api-key={KEY}" in urlsplit(path).query for path, _ in server.requests)
        assert_nothing_leaks(ran.out, ran.err, folder=tmp_path / "run")
        assert_shown_masked(tmp_path / "run")


def test_an_unreachable_url_with_credentials_is_one_line_without_them(tmp_path):
    from backend_support import free_port

    url = with_credentials(f"http://127.0.0.1:{free_port()}/v1")
    with case("bad inputs", "credentials"):
        ran = moot(cola(tmp_path), *ITEM, "--base-url", url, "--out", tmp_path / "run")
        assert ran.code == 2, ran.err
        assert len(ran.err_lines) == 1 and "unreachable" in ran.err and "[redacted]@127.0.0.1" in ran.err, ran.err
        assert_nothing_leaks(ran.out, ran.err)
        assert_clean(ran)
        assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("mode", ["status-401", "status-500", "reset"])
def test_a_failing_server_behind_credentials_records_no_credential(mode, tmp_path):
    with FaultServer(mode) as server, case("fault modes", "credentials"):
        ran = moot(cola(tmp_path), *ITEM, "--base-url", with_credentials(server.url), "--out", tmp_path / "run")
        assert ran.code == 1, ran.err
        assert_clean(ran)
        assert_nothing_leaks(ran.out, ran.err, folder=tmp_path / "run")
        assert_nothing_leaks(shown_by_other_commands(tmp_path / "run", tmp_path, report=False))


def test_credentials_in_any_url_in_an_error_line_are_masked():
    from moot.safety.secrets import redact, redact_url

    with case("bad inputs", "credentials"):
        text = (f"Cannot connect to host http://{USER}:{PASSWORD}@example.org:8080/v1?api-key={KEY}&x=1 "
                f"and https://{KEY}@example.org/path?access_token={KEY}")
        shown = redact(text)
        assert_nothing_leaks(shown)
        assert "http://[redacted]@example.org:8080/v1?api-key=[redacted]&x=1" in shown
        assert redact_url(f"{USER}:{PASSWORD}@ollama.local:11434") == "[redacted]@ollama.local:11434"
        assert redact_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
