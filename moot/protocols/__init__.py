"""The protocol registry: every protocol moot runs, one line each (see moot.protocol).

Adding a protocol: its module here (scenario schema + `run`), its role code or prompt templates
in agents/, its speaker-selection policy in speaker_selection/, its example in scenarios/, and one
line below. The JSON Schema, docs/scenarios.md and `moot new` are derived from this registry.
"""

from moot.protocol import Registry
from moot.protocols import cola, conference, debate, judge_eval, negotiation, s2mad

REGISTRY = Registry([
    conference.PROTOCOL,
    cola.PROTOCOL,
    s2mad.PROTOCOL,
    negotiation.PROTOCOL,
    debate.PROTOCOL,
    judge_eval.PROTOCOL,
])
