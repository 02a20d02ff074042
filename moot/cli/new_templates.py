"""The commented scenarios `new` writes, one per protocol (`str.format` fields: file, title).

Each is valid as written and runs with `--model scripted`; the per-item ones carry one item
under `input:` so they run without a dataset. Keys are described in docs/scenarios.md.
"""

CONFERENCE = """\
# A decision conference (Heller et al. 2025): a moderator opens each topic, the participants
# debate it in rounds, a judge decides after each round whether they agree, and an evaluator
# scores each finished topic. Every key is described in docs/scenarios.md.
#   check:  python run_conference.py validate {file}
#   try:    python run_conference.py {file} --model scripted
#   run:    python run_conference.py {file}            (the local model, see `models:`)
protocol: conference
title: {title}
task: >-
  Decide together on the questions below, one topic at a time, and agree on each before
  moving on.
topics:                      # discussed in this order; at least one
  - which options are on the table
  - which criteria matter most
moderator:
  name: Moderator            # a letter, then letters, digits or _ (AutoGen agent names)
  persona: A neutral facilitator who keeps the discussion on the current topic.
participants:                # at least two
  - name: Participant_1
    persona: Argues from cost and feasibility.
  - name: Participant_2
    persona: Argues from fairness and long-term effects.
    # model: ollama:llama3    # this agent only; beats `models:` below
    # generation: {{temperature: 0.9}}
judge:                       # decides AGREEMENT / MORE_DEBATE after each round
  name: Judge
evaluator:                   # scores each topic on ten criteria (optional: delete to skip)
  name: Evaluator
models:                      # default, then per role (moderator, participants, judge, evaluator) or agent name
  default: local             # local | local:PATH.gguf | openai:MODEL | ollama:MODEL | scripted
generation:
  temperature: 0.7
  max_tokens: 256
  seed: 0
limits:
  max_rounds_per_topic: 3    # a topic closes after this many rounds even without agreement
  max_messages: 200          # the run stops after this many messages
  context_messages: 12       # how many recent messages each agent sees
routing:
  agreement: judge           # judge, or moderator (the without-judge variant; delete `judge:`)
  on_more_debate: moderator  # moderator (Algorithm 1) or participants
# prompts:                   # override any template of agents/prompts/conference.yaml
#   participant_turn: It is your turn, $name. Give your view on "$topic" in two sentences.
"""


COLA = """\
# COLA (Lan et al.): three analysts read the text independently, one debater per stance argues
# from their analyses, and a judger picks the stance. Every key is described in docs/scenarios.md.
#   check:  python run_conference.py validate {file}
#   try:    python run_conference.py {file} --model scripted
#   run:    python run_conference.py {file} [--input text=... --input target=...]
#   batch:  python run_conference.py {file} --dataset DATA.yaml --limit 50
protocol: cola
title: {title}
input:                       # the item of a single run; --input KEY=VALUE overrides
  text: Online classes let me study at my own pace, and I would not go back.
  target: online classes
labels: [favor, against, neutral]     # the closed label set; one debater each, in this order
# aliases: {{pro: favor}}            # other answers that mean a label
experts: [linguist, domain, social]   # the analysis stage; [] = without it
debate: true                          # false = without the debating stage
domain_role:
  default: "domain specialist in the field of $target"
  targets: {{}}                         # per target, e.g. {{Hillary Clinton: political scientist}}
judger: {{output: json}}                # json = {{stance, explanation}}; option = A/B/C
models: {{default: local}}              # or per role: linguist, domain, social, debaters, debater_<label>, judger
generation: {{temperature: 0.0, max_tokens: 256, seed: 0}}
# prompts: {{}}                         # override any template of agents/prompts/cola.yaml
"""

S2MAD = """\
# S2MAD (Zhang et al.): comments are scored for and against the claim, the top-k of each side
# brief two debaters, who debate for `rounds` rounds; agreement or a judge gives the label.
# Every key is described in docs/scenarios.md.
#   check:  python run_conference.py validate {file}
#   try:    python run_conference.py {file} --model scripted
#   run:    python run_conference.py {file} [--input claim=... --input comment=... --input comment=...]
#   batch:  python run_conference.py {file} --dataset DATA.yaml --limit 50
protocol: s2mad
title: {title}
input:                       # the item of a single run; --input claim=/comment= overrides
  claim: "The city will close every public library next month."
  comments:
    - "The mayor's office denied this an hour ago."
    - "My library sent an email confirming it, so sad."
    - "Source? This sounds made up."
labels: [fake, real]
k: 5                         # top-k supporting and opposing comments
rounds: 2                    # debate rounds; 0 = without debate
stance_separation: true      # false = random halves (ablation)
subjectivity: auto           # auto | subjective | objective
early: {{}}                    # early detection, e.g. {{first_n: 10}} or {{before_s: 3600}}
models: {{default: local}}     # or per role: scorer, classifier, debater_p, debater_n, judge
generation: {{temperature: 0.2, max_tokens: 256, seed: 0}}
# prompts: {{}}                # override any template of agents/prompts/s2mad.yaml
"""

NEGOTIATION = """\
# LLM negotiation (Sun et al.): one LLM generates a sentiment decision with its reasoning, another
# discriminates, until they agree or max_turns; then they swap roles. Every key is described in
# docs/scenarios.md.
#   check:  python run_conference.py validate {file}
#   try:    python run_conference.py {file} --model scripted
#   run:    python run_conference.py {file} [--input text=...]
#   batch:  python run_conference.py {file} --dataset DATA.yaml --limit 50
protocol: negotiation
title: {title}
input:                       # the item of a single run; --input text=... overrides
  text: "a warm , funny and thoroughly charming film ."
labels: [positive, negative]
max_turns: 3                 # generator/discriminator exchanges per negotiation
demonstrations:
  train: null                # a DATA.yaml of a training split (relative to this file); null = zero-shot
  k: 4                       # nearest training items shown as demonstrations
# The paper's point is two different LLMs (first: openai:MODEL, second: ollama:MODEL; a third
# settles conflicts by vote). Offline, the embedded model plays both, hence allow_same_model.
models: {{first: local, second: local}}
allow_same_model: true
generation: {{temperature: 0.0, max_tokens: 256, seed: 0}}
# prompts: {{}}                # override any template of agents/prompts/negotiation.yaml
"""

TEMPLATES = {"conference": CONFERENCE, "cola": COLA, "s2mad": S2MAD, "negotiation": NEGOTIATION}
