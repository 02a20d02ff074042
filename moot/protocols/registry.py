"""The protocol registry: every protocol moot runs, one line each (see moot.contract.protocol).

Adding a protocol: its sub-package here (scenario schema + `run`), its role code or
prompt templates in agents/, its speaker-selection policy in speaker_selection/, its example in
scenarios/, and one line below: its name and module, imported when a run, a transcript or a
listing first asks for it. The JSON Schema, docs/scenarios.md and `moot new` are derived from
this registry. A process that reads a transcript without having imported it finds it
through moot.plugins.
"""

from moot.agents.prompts import default_templates
from moot.contract.registry import PROTOCOLS
from moot.kit import use_shipped_templates

use_shipped_templates(default_templates)  # scenario files read agents/prompts through this hook

REGISTRY = PROTOCOLS
for name, module in (("conference", "moot.protocols.conference.protocol"), ("cola", "moot.protocols.cola.protocol"),
                     ("s2mad", "moot.protocols.s2mad.protocol"), ("negotiation", "moot.protocols.negotiation.protocol"),
                     ("debate", "moot.protocols.debate.protocol"), ("judge_eval", "moot.protocols.judge_eval.protocol"),
                     ("chateval", "moot.protocols.chateval.protocol")):
    REGISTRY.declare(name, module)  # imported when a run, a transcript or a listing first asks for it
