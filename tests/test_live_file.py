"""The run's live side file (moot.engine.live): while a conference turn is generated another process
can read who speaks and the text so far; the file goes when the turn is recorded and when the run
ends; the transcript stays append-only; only in-process models stream for it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from run_support import run_scenario

from moot.engine.folder import live_file
from moot.engine.live import Listeners, LiveTurn
from moot.kit._context import Speaking
from moot.log.events import Message
from moot.log.transcript import load
from moot.models.engine import streamed
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.models.streaming import Watcher


class Watched(ScriptedChatCompletionClient):
    """Pauses in the middle of every streamed reply and notes what the live file and the
    transcript then hold."""

    def __init__(self, folder: Path):
        super().__init__(record=False)
        self.folder, self.seen = folder, []

    async def create_stream(self, messages, **kwargs):
        words = 0
        async for item in super().create_stream(messages, **kwargs):
            yield item
            words += isinstance(item, str)
            if words == 3:
                await asyncio.sleep(0.25)
                yield " "  # the file is written with the next text after EVERY_S
                live = live_file(self.folder / "conference.jsonl")
                lines = (self.folder / "conference.jsonl").read_text(encoding="utf-8").splitlines()
                self.seen.append((json.loads(live.read_text(encoding="utf-8")), lines))


def test_a_turn_in_progress_is_in_the_live_file_and_gone_once_recorded(make_scenario, tmp_path):
    out = tmp_path / "run"
    client = Watched(out)
    assert run_scenario(make_scenario(topics=1), out, clients={"scripted": client}) == 0
    assert client.seen, "no reply streamed for the live file"
    transcript = load(out / "conference.jsonl")
    messages = {m.turn: m for m in transcript.messages}
    for shown, lines in client.seen:
        assert shown["version"] == 1 and shown["unit"] == "conference"
        recorded = [json.loads(line) for line in lines]
        assert recorded[-1]["seq"] == shown["after_seq"]  # nothing of this turn is recorded yet
        turn = sum(1 for e in recorded if e["type"] == "message") + 1
        assert messages[turn].speaker == shown["speaker"] and messages[turn].action == shown["action"]
        assert len(shown["text"].split()) == 3 and messages[turn].content.startswith(shown["text"].strip())
    assert not live_file(out / "conference.jsonl").exists()
    assert not [p for p in out.iterdir() if "live" in p.name]


def test_only_in_process_models_stream_for_a_watcher():
    class Wire:
        streams = True

    class InProcess(Wire):
        in_process = True

    def show(text: str) -> None:
        pass

    watcher = Watcher(show)
    assert streamed(InProcess(), watcher) and not streamed(Wire(), watcher)  # type: ignore[arg-type]
    assert streamed(Wire(), show) and not streamed(Wire(), None)  # type: ignore[arg-type]


def test_listeners_pass_text_to_everyone_and_stay_a_watcher_when_all_watch(tmp_path):
    got: list[str] = []

    class Screen:
        def __call__(self, events):
            got.append(f"events {len(events)}")

        def speaking(self, turn):
            return got.append

    turn = Speaking("u", "Ann", "Ann", "speak", "T1 R1", 0, 1)
    live = LiveTurn(tmp_path / "u.jsonl", clock=lambda: 100.0)
    both = Listeners(Screen(), live).speaking(turn)
    assert both is not None and not isinstance(both, Watcher)
    both("hello")
    assert got == ["hello"]
    alone = Listeners(None, live).speaking(turn)
    assert isinstance(alone, Watcher)
    # known before any turn starts (a base model's document turn makes its text sink first)
    assert Listeners(None, live).watch_only and not Listeners(Screen(), live).watch_only
    Listeners(Screen(), live)([Message(turn=1, speaker="Ann", role="p", action="speak", content="hi", seq=4)])
    assert got[-1] == "events 1" and not live_file(tmp_path / "u.jsonl").exists() and live.last_seq == 4
