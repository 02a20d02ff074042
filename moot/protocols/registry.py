"""The protocol registry: every protocol moot runs, one line each (see moot.contract.protocol).

Adding a protocol: its module (or sub-package) here (scenario schema + `run`), its role code or
prompt templates in agents/, its speaker-selection policy in speaker_selection/, its example in
scenarios/, and one line below. The JSON Schema, docs/scenarios.md and `moot new` are derived
from this registry. A process that reads a transcript without having imported it finds it
through moot.plugins.
"""

from moot.contract.registry import PROTOCOLS
from moot.protocols import chateval, debate, judge_eval
from moot.protocols.cola import protocol as cola
from moot.protocols.conference import protocol as conference
from moot.protocols.negotiation import protocol as negotiation
from moot.protocols.s2mad import protocol as s2mad

REGISTRY = PROTOCOLS
for protocol in (conference.PROTOCOL, cola.PROTOCOL, s2mad.PROTOCOL, negotiation.PROTOCOL, debate.PROTOCOL,
                 judge_eval.PROTOCOL, chateval.PROTOCOL):
    REGISTRY.register(protocol)
