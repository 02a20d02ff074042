"""The protocol kit: what a protocol's code (moot/protocols/, agents/, speaker_selection/) may use of moot.

A protocol imports this kit, the contract (moot.contract: what it declares and is handed) and its
own modules; nothing else of moot (tests/test_import_direction.py keeps it so, with the few
imports not moved yet listed). Every name below is public and kept stable for protocols; the
modules it comes from are moot's own business and may move. What a protocol is handed at run
time (the unit's context, seats, stage agents, turn order, telemetry, re-score helpers) stands
beside what it records (events, transcripts), asks (model requests and replies), measures,
declares in its scenario block and shows (views).
"""

from __future__ import annotations

# An error a protocol reports: one line (moot.errors)
from moot.errors import MootError, UsageError, nearest

# Running one unit: its context and models, stage agents, turn order, seats a person takes, re-scoring
from moot.kit._context import OnText, Reply, UnitContext
from moot.kit._stage import Respond, StageAgent, cancel_calls, spoken_of
from moot.kit._thread import ThreadAgent
from moot.kit._order import PolicyError, fixed_order
from moot.kit.seats import Answered, Asking, PersonTurn, Question, Seat, SeatProxy, free_text, shown_of
from moot.kit._telemetry import quiet_runtime_telemetry
from moot.kit._rescore import last_call, recorded_messages, resend

# What is recorded: events, event types, transcripts, a saved run's folder
from moot.saved.records import ResultRow, RunMeta
from moot.saved.run import RunResults, gold_and_predictions, models_text, run_dates
from moot.saved.source import RunSource
from moot.log.events import Call, EventBase, Human, Json, MEASURED, Measured, Message, Usage
from moot.log.registry import EventType
from moot.log.transcript import Transcript

# Asking a model: closed choices, scores, continuations, reading replies, calibration, streaming,
# what a scripted answer looks like
from moot.models.requests import Choose, Continue, Score, answer_model, rounded
from moot.models.replies import Closed, Parsed, json_object, loads, parse_reply
from moot.models.continuation import cut_to_sentence
from moot.models.calibration import CONTENT_FREE, CONTEXTUAL, best, calibrate, content_free_prior
from moot.models.streaming import Watcher
from moot.models.expect import ANY_STAGE, Expected, expected

# Measures
from moot.metrics.classification import RUMOR_CLASSES, UNPARSED, class_for
from moot.metrics.agreement import cohen_kappa
from moot.metrics.stats import t_interval

# A protocol's scenario block and its checks; reading scenarios and datasets
from moot.scenario.blocks import (
    Backends, CalibrationSetting, ChoiceSetting, Generation, Retry, ScenarioBase, Strict, check_models,
    check_prompts, check_spec, check_template, choice_method, fail, use_shipped_templates,
)
from moot.safety.yamlsource import format_key, read_yaml
from moot.scenario.load import load_scenario
from moot.scenario.bundled import find_scenario
from moot.data.load import Comment, iter_items, load_dataset_spec

# How a unit reads: its view and the blocks it shows, Markdown
from moot.views.unit import Place, TurnText, UnitView
from moot.views.blocks import Badge, Bar, Chart, Checklist, Companion, Figure, Grade, Remark, Unreadable
from moot.views.summary import measured_suffix, summary_lines
from moot.views.timeline import spread_text
from moot.views.markdown import cell, table

__all__ = [
    "MootError", "UsageError", "nearest", "OnText", "Reply", "UnitContext", "Respond", "StageAgent", "cancel_calls",
    "spoken_of", "ThreadAgent", "PolicyError", "fixed_order", "Answered", "Asking", "PersonTurn", "Question",
    "Seat", "SeatProxy", "free_text", "shown_of", "quiet_runtime_telemetry", "last_call", "recorded_messages",
    "resend", "ResultRow", "RunMeta", "RunResults", "gold_and_predictions", "models_text", "run_dates", "RunSource", "Call", "EventBase", "Human", "Json", "MEASURED", "Measured", "Message", "Usage",
    "EventType", "Transcript", "Choose", "Continue", "Score", "answer_model", "rounded", "Closed", "Parsed",
    "json_object", "loads", "parse_reply", "cut_to_sentence", "CONTENT_FREE", "CONTEXTUAL", "best", "calibrate",
    "content_free_prior", "Watcher", "ANY_STAGE", "Expected", "expected", "RUMOR_CLASSES", "UNPARSED", "class_for", "cohen_kappa", "t_interval",
    "Backends", "CalibrationSetting", "ChoiceSetting", "Generation", "Retry", "ScenarioBase", "Strict",
    "check_models", "check_prompts", "check_spec", "check_template", "choice_method", "fail", "use_shipped_templates", "format_key",
    "read_yaml", "load_scenario", "find_scenario", "Comment", "iter_items", "load_dataset_spec", "Place",
    "TurnText", "UnitView", "Badge", "Bar", "Chart", "Checklist", "Companion", "Figure", "Grade", "Remark",
    "Unreadable", "measured_suffix", "summary_lines", "spread_text", "cell", "table",
]
