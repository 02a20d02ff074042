"""OpenTelemetry spans for runs, units and model calls, for those who trace (the `tracing` extra).

On (`--trace`, or MOOT_TRACE=1), each run folder's units are spans under a run span, and each
model call a span under its unit's, named and described by the GenAI semantic conventions; they
go to an OTLP/HTTP collector set by the standard OTEL_* variables (default localhost:4318), or to
the provider given to `start` (the Python API, tests). Spans carry names, counts and times, never a
prompt, a reply or a key: model text is untrusted and private.
Off (the default), OpenTelemetry's SDK is never imported and a model call pays one check of
TRACER. A unit's calls run in tasks AutoGen's runtime started (for another unit, maybe), so each
unit's context keeps its span (`current`) and its calls are parented under it explicitly (`under`).
AutoGen's own spans (per message, with the messages' text) come only with MOOT_AUTOGEN_TRACING=1
(moot.kit._telemetry).
"""

from __future__ import annotations

import contextlib
import functools
import os
from typing import (
    TYPE_CHECKING, Any, Callable, Concatenate, Coroutine, Iterator, Mapping, Optional, ParamSpec, Protocol,
    TypeVar,
)

from opentelemetry import context as otel_context
from opentelemetry import trace

from moot.errors import EXIT_ENVIRONMENT, MootError
from moot.version import __version__

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

TRACER: Optional["Tracer"] = None  # moot's tracer while tracing is on (`start`), else None
EXTRA = "pip install 'moot[tracing]'"
P = ParamSpec("P")
T = TypeVar("T")
Attributes = Mapping[str, Any]


class TracingUnavailable(MootError):
    """--trace without the `tracing` extra installed; one line."""

    exit_code = EXIT_ENVIRONMENT


def wanted(flag: bool) -> bool:
    """Whether tracing was asked for: `--trace`, or MOOT_TRACE=1."""
    return flag or os.environ.get("MOOT_TRACE") == "1"


def start(provider: Optional["TracerProvider"] = None) -> None:
    """Trace from now on, into `provider`, or (none given) into an OTLP/HTTP exporter configured by
    the OTEL_* variables, registered as the process's provider (AutoGen's spans go there too)."""
    global TRACER
    if provider is None:
        provider = _otlp_provider()
        trace.set_tracer_provider(provider)
    TRACER = provider.get_tracer("moot", __version__)


def stop() -> None:
    """Trace no more (the provider, with what it holds, stays its owner's)."""
    global TRACER
    TRACER = None


def _otlp_provider() -> "TracerProvider":
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise TracingUnavailable(f"--trace: tracing needs the tracing extra ({EXTRA}): {exc}") from None
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME", "moot")}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


@contextlib.contextmanager
def span(name: str, attributes: Callable[[], Attributes]) -> Iterator[Optional["Span"]]:
    """A span current within the block while tracing is on (its `attributes` computed only then),
    else None. An exception is noted by its kind only: its message may quote a server."""
    if TRACER is None:
        yield None
        return
    with TRACER.start_as_current_span(name, attributes=dict(attributes()), record_exception=False,
                                      set_status_on_exception=False) as opened:
        try:
            yield opened
        except BaseException as exc:
            failed(opened, exc)
            raise


def failed(opened: "Span", exc: BaseException) -> None:
    opened.set_attribute("error.type", type(exc).__name__)
    opened.set_status(trace.StatusCode.ERROR)


def current() -> Optional[otel_context.Context]:
    """The context a unit's calls are parented under: the current one while tracing is on."""
    return otel_context.get_current() if TRACER is not None else None


def under(parent: Optional[otel_context.Context],
          work: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
    """`work` run in `parent`'s context (as is when tracing is off)."""
    return work if parent is None else _within(parent, work)


async def _within(parent: otel_context.Context, work: Coroutine[Any, Any, T]) -> T:
    token = otel_context.attach(parent)
    try:
        return await work
    finally:
        otel_context.detach(token)


@contextlib.contextmanager
def detached() -> Iterator[None]:
    """No span current within the block while tracing is on: a runtime shared by units started
    here does not make every later unit's AutoGen spans children of the first's."""
    if TRACER is None:
        yield
        return
    token = otel_context.attach(otel_context.Context())
    try:
        yield
    finally:
        otel_context.detach(token)


class Spec(Protocol):
    """A model by its spec (moot.models.engine.RoleModel)."""

    @property
    def spec(self) -> str: ...


class Answered(Protocol):
    """What a call's span reports of its result (moot.models.engine.CallResult)."""

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def completion_tokens(self) -> int: ...

    @property
    def latency_s(self) -> float: ...

    @property
    def attempts(self) -> int: ...

    @property
    def cached(self) -> bool: ...


E = TypeVar("E")
M = TypeVar("M", bound=Spec)
R = TypeVar("R", bound=Answered)
Ask = Callable[Concatenate[E, M, P], Coroutine[Any, Any, R]]


def traced_call(ask: Ask[E, M, P, R]) -> Ask[E, M, P, R]:
    """`ask` (a model call) in a span of its own while tracing is on; off, one check of TRACER and
    `ask`'s own coroutine (no frame of the wrapper's is awaited)."""

    def ask_traced_when_on(engine: E, model: M, /, *args: P.args, **kwargs: P.kwargs) -> Coroutine[Any, Any, R]:
        if TRACER is None:
            return ask(engine, model, *args, **kwargs)
        return _traced(ask(engine, model, *args, **kwargs), model.spec, str(kwargs.get("role") or ""))

    functools.update_wrapper(ask_traced_when_on, ask)  # its name and docstring
    return ask_traced_when_on


async def _traced(asking: Coroutine[Any, Any, R], spec: str, role: str) -> R:
    with span(*call_span(spec, role)) as opened:
        result = await asking
        if opened is not None:
            opened.set_attributes(call_result(result))
        return result


def call_span(spec: str, role: str) -> tuple[str, Callable[[], Attributes]]:
    """A model call's span name and attributes (GenAI semantic conventions: `chat MODEL`)."""
    provider, _, model = spec.partition(":")
    model = model or provider

    def attributes() -> Attributes:
        return {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.system": provider,
                "gen_ai.request.model": model, "moot.model": spec, "moot.role": role}

    return f"chat {model}", attributes


def call_result(result: Answered) -> Attributes:
    """What a finished call's span adds: usage, whether the cache answered, retries, latency."""
    return {"gen_ai.usage.input_tokens": result.prompt_tokens, "gen_ai.usage.output_tokens": result.completion_tokens,
            "moot.cached": result.cached, "moot.attempts": result.attempts,
            "moot.retries": max(0, result.attempts - 1), "moot.latency_s": round(result.latency_s, 4)}
