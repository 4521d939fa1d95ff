"""A seeded synthetic dataset: multi-session chats with planted facts whose evidence ids are known.

Each dialogue is one user talking to an assistant over `sessions` sittings spread over weeks
(`session_gap_days` apart on average), so decay can be simulated. Into the chatter the generator
plants `facts` statements of the four long-term memory types (FACT, PREFERENCE, PROCEDURE,
EPISODE); with probability `update_rate` a changeable one is contradicted in a later session.
Every planted fact gets a `Probe`: its evidence is the id of the latest statement, its answer
the latest value (for an EPISODE, the date its "last week" denotes), its category the memory type,
or ``UPDATE`` when it was contradicted (the superseded ids and answer are in `Probe.metadata`).
Assistant turns sometimes call a tool whose output is large (`tool_output_chars`), properly paired.

Message sizes are lognormal with mean `message_chars_mean` and shape `message_chars_sigma`.
The same arguments give the same dialogues; dialogue k does not depend on how many are asked for.

>>> [d] = generate_synthetic(seed=1, dialogues=1, sessions=2, turns_per_session=4, facts=2)
>>> all(p.evidence[0] in d.message_ids() for p in d.probes)
True
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memlab import ranges
from memlab.dialogues import synthetic_text as text
from memlab.dialogues.model import SUPERSEDED_KEY, Dialogue, Probe, Session
from memlab.dialogues.schemas import SyntheticConfig
from memlab.errors import MemlabError
from memlab.messages import Message, ToolCall

SYSTEM_PROMPT = "You are a helpful assistant for a software engineer. Keep track of what the user tells you."
UPDATE = "UPDATE"
MIN_MESSAGE_CHARS = 12
# Share of chatter messages that mention a slot's vocabulary about someone else.
NEAR_MISS_RATE = 0.2
# Seconds between consecutive messages of a session, and before a tool's result.
TURN_SECONDS = (20, 150)
TOOL_SECONDS = (1, 6)
# Random placements tried before a too-dense configuration is reported.
PLACEMENT_ATTEMPTS = 20


@dataclass(frozen=True)
class PlantedFact:
    """A statement the generator planted: what it says, where, and the later message that contradicts it.

    Args:
        type: FACT, PREFERENCE, PROCEDURE or EPISODE.
        slot: What it is about (one slot of the generator's vocabulary).
        value: The value it states.
        statement: The sentence planted.
        message_id: The message that states it.
        superseded_by: The later message that contradicts it (None: none).
        date: EPISODE: the ISO date its time phrase denotes (None otherwise).
    """

    type: str
    slot: str
    value: str
    statement: str
    message_id: str
    superseded_by: str | None = None
    date: str | None = None  # EPISODE: the ISO date its time phrase denotes


@dataclass
class _Plan:
    """One planted slot: its value(s), the user turns that state them, the probe it becomes."""

    slot: text.Slot
    value: str
    turn: tuple[int, int] = (0, 0)
    update_value: str | None = None
    update_turn: tuple[int, int] | None = None
    when: tuple[str, int] | None = None
    planted: list[PlantedFact] = field(default_factory=list)


def generate_synthetic(config: SyntheticConfig | None = None, /, **settings: Any) -> list[Dialogue]:
    """`dialogues` synthetic dialogues of `sessions` x `turns_per_session` user turns, deterministic in `seed`.

    The settings are `SyntheticConfig`'s fields, declared there once with their defaults and ranges.

    Args:
        config: The generator's settings (None: the schema's defaults).
        **settings: Fields of `SyntheticConfig` that override `config`'s, e.g. ``seed=1, dialogues=2``
            (how Hydra calls it from ``dataset=synthetic``).

    Returns:
        The dialogues, each with the probes of the facts planted in it.
    """
    cfg = _settings(config, settings)
    if cfg.facts > len(text.SLOTS):
        raise MemlabError(
            f"synthetic: facts={cfg.facts} is more than the {len(text.SLOTS)} distinct facts it can plant"
        )
    try:
        first = datetime.fromisoformat(cfg.start)
    except ValueError:
        raise MemlabError(
            f"synthetic: start={cfg.start!r} is not an ISO 8601 time such as 2024-01-08T09:00:00"
        ) from None
    writer = _Writer(cfg.message_chars_mean, cfg.message_chars_sigma, cfg.tool_output_chars, cfg.tool_output_sigma)
    out = []
    for k in range(cfg.dialogues):
        rng = random.Random(f"memlab-synthetic:{cfg.seed}:{k}")
        plans = _plan(rng, cfg.facts, cfg.sessions, cfg.turns_per_session, cfg.update_rate)
        out.append(_dialogue(rng, writer, k, cfg, plans, first))
    return out


def _settings(config: SyntheticConfig | None, settings: dict[str, Any]) -> SyntheticConfig:
    """`config` (or the defaults) with `settings` on top, each key a schema field and each value in its range."""
    known = {f.name for f in dataclasses.fields(SyntheticConfig)} - {"_target_"}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise MemlabError(f"synthetic: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    cfg = dataclasses.replace(config or SyntheticConfig(), **settings)
    values = {name: getattr(cfg, name) for name in known - {"start"}}
    ranges.check_values(SyntheticConfig, "synthetic", **values)
    return cfg


def _plan(rng: random.Random, facts: int, sessions: int, turns: int, update_rate: float) -> list[_Plan]:
    """Which slots to plant, with which values, at which (session, turn) positions."""
    pools = {
        t: rng.sample([s for s in text.SLOTS if s.type == t], k=sum(s.type == t for s in text.SLOTS))
        for t in text.MEMORY_TYPES
    }
    order = list(text.MEMORY_TYPES)
    rng.shuffle(order)
    plans: list[_Plan] = []
    while len(plans) < facts:
        for t in order:
            if pools[t] and len(plans) < facts:
                slot = pools[t].pop()
                plans.append(_Plan(slot, rng.choice(slot.values)))
    for p in plans:
        if p.slot.type == text.EPISODE:
            p.when = rng.choice(text.WHEN_DAYS)
        elif p.slot.updates and sessions > 1 and rng.random() < update_rate:
            p.update_value = rng.choice([v for v in p.slot.values if v != p.value])
    for _ in range(PLACEMENT_ATTEMPTS):
        if _place(rng, plans, sessions, turns):
            return plans
    raise MemlabError(
        f"synthetic: facts={facts} with their updates need more user turns than "
        f"sessions={sessions} x turns_per_session={turns} give"
    )


def _place(rng: random.Random, plans: list[_Plan], sessions: int, turns: int) -> bool:
    """Put each plan on a free user turn (an update in a later session than its fact); False if stuck."""
    free = {(s, t) for s in range(sessions) for t in range(turns)}

    def take(lo_session: int, hi_session: int) -> tuple[int, int] | None:
        options = sorted(pos for pos in free if lo_session <= pos[0] <= hi_session)
        if not options:
            return None
        pos = rng.choice(options)
        free.discard(pos)
        return pos

    for p in sorted(plans, key=lambda p: p.update_value is None):  # constrained ones first
        turn = take(0, sessions - 2 if p.update_value is not None else sessions - 1)
        if turn is None:
            return False
        p.turn = turn
        if p.update_value is not None:
            p.update_turn = take(turn[0] + 1, sessions - 1)
            if p.update_turn is None:
                return False
    return True


class _Writer:
    """Sentences and sizes: chatter, planted statements, tool outputs, all drawn from one `rng`."""

    def __init__(self, chars_mean: float, chars_sigma: float, tool_mean: float, tool_sigma: float) -> None:
        self.chars = (math.log(max(chars_mean, 1.0)) - chars_sigma**2 / 2, chars_sigma)
        self.tool = (math.log(max(tool_mean, 1.0)) - tool_sigma**2 / 2, tool_sigma)

    @staticmethod
    def _size(rng: random.Random, mu_sigma: tuple[float, float]) -> int:
        mu, sigma = mu_sigma
        return max(MIN_MESSAGE_CHARS, round(rng.lognormvariate(mu, sigma)))

    @staticmethod
    def _fill(rng: random.Random, template: str) -> str:
        values: dict[str, str] = {
            "adjective": rng.choice(text.ADJECTIVES),
            "food": rng.choice(text.FOODS),
            "hobby": rng.choice(text.HOBBIES),
            "show": rng.choice(text.SHOWS),
            "task": rng.choice(text.TASKS),
            "topic": rng.choice(text.TOPICS),
            "person": rng.choice(text.PEOPLE),
            "Name": rng.choice(text.NAMES),
        }
        values.update({s.key: rng.choice(s.values) for s in text.SLOTS if f"{{{s.key}}}" in template})
        sentence = template.format(**values)
        return sentence[0].upper() + sentence[1:]

    def _sentences(self, rng: random.Random, pool: tuple[str, ...], budget: int) -> list[str]:
        out: list[str] = []
        unused: list[str] = []
        size = -1  # the length of the sentences joined by spaces
        while size < budget:
            unused = unused or list(pool)  # no template twice in a message until all were used
            out.append(self._fill(rng, unused.pop(rng.randrange(len(unused)))))
            size += len(out[-1]) + 1
        return out

    def chatter(self, rng: random.Random) -> str:
        sentences = self._sentences(rng, text.CHATTER, self._size(rng, self.chars))
        if rng.random() < NEAR_MISS_RATE:
            sentences.insert(rng.randrange(len(sentences) + 1), self._fill(rng, rng.choice(text.NEAR_MISSES)))
        return " ".join(sentences)

    def planted(self, rng: random.Random, statement: str) -> str:
        sentences = self._sentences(rng, text.CHATTER, self._size(rng, self.chars) - len(statement) - 1)
        sentences.insert(rng.randrange(len(sentences) + 1), statement)
        return " ".join(sentences)

    def reply(self, rng: random.Random, pool: tuple[str, ...] = text.REPLIES) -> str:
        return " ".join(self._sentences(rng, pool, self._size(rng, self.chars)))

    def tool_call(self, rng: random.Random, call_id: str, now: datetime) -> tuple[ToolCall, str]:
        name = rng.choice(text.TOOLS)
        budget = self._size(rng, self.tool)
        if name == "read_logs":
            service = rng.choice(text.SERVICES)
            args: dict[str, Any] = {"service": service, "lines": 200}
            lines: list[str] = []
            stamp, size = now - timedelta(hours=1), -1
            while size < budget:
                stamp += timedelta(seconds=rng.randint(1, 30))
                event = rng.choice(text.LOG_EVENTS).format(n=rng.randint(100, 99999), ms=rng.randint(3, 4000))
                lines.append(f"{stamp.isoformat()}Z {rng.choice(text.LOG_LEVELS)} {service} {event}")
                size += len(lines[-1]) + 1
            output = "\n".join(lines)
        else:
            topic = rng.choice(text.TOPICS)
            args = {"query": topic, "limit": 20}
            records: list[str] = []
            size = 0
            while size < budget:
                record = {
                    "id": rng.randint(1000, 999999),
                    "title": f"{rng.choice(text.TOPICS).capitalize()} notes",
                    "snippet": self._fill(rng, rng.choice(text.REPLIES + text.CHATTER)),
                    "score": round(rng.random(), 3),
                }
                records.append(json.dumps(record))
                size += len(records[-1]) + 2
            output = "[" + ", ".join(records) + "]"
        return ToolCall(id=call_id, name=name, arguments=json.dumps(args, sort_keys=True)), output


@dataclass
class _Sitting:
    """One session being written: its messages, numbered ``D<session>:<i>``, and its advancing clock."""

    number: int
    clock: datetime
    rng: random.Random
    messages: list[Message] = field(default_factory=list)

    def add(self, role: str, content: str | None, seconds: tuple[int, int] = TURN_SECONDS, **fields: Any) -> Message:
        self.clock += timedelta(seconds=self.rng.randint(*seconds))
        m = Message(role, content, id=f"D{self.number}:{len(self.messages) + 1}", timestamp=self.clock, **fields)
        self.messages.append(m)
        return m


def _dialogue(
    rng: random.Random,
    writer: _Writer,
    k: int,
    cfg: SyntheticConfig,
    plans: list[_Plan],
    first: datetime,
) -> Dialogue:
    at: dict[tuple[int, int], tuple[_Plan, bool]] = {p.turn: (p, False) for p in plans}
    at.update({p.update_turn: (p, True) for p in plans if p.update_turn is not None})
    sessions: list[Session] = []
    clock = first
    calls = 0
    for s in range(cfg.sessions):
        if s:
            clock += timedelta(seconds=round(cfg.session_gap_days * 86400 * rng.uniform(0.5, 1.5)))
        sitting = _Sitting(s + 1, clock, rng)
        for t in range(cfg.turns_per_session):
            if (s, t) in at:
                plan, is_update = at[(s, t)]
                statement = _statement(rng, plan, is_update)
                user = sitting.add("user", writer.planted(rng, statement), speaker="user")
                _record(plan, statement, user, is_update)
            else:
                sitting.add("user", writer.chatter(rng), speaker="user")
            if rng.random() < cfg.tool_call_rate:
                calls += 1
                call, output = writer.tool_call(rng, f"call_{k}_{calls}", sitting.clock)
                sitting.add("assistant", None, speaker="assistant", tool_calls=(call,))
                sitting.add("tool", output, TOOL_SECONDS, name=call.name, tool_call_id=call.id)
                sitting.add("assistant", writer.reply(rng, text.TOOL_SUMMARIES + text.REPLIES), speaker="assistant")
            else:
                sitting.add("assistant", writer.reply(rng), speaker="assistant")
        sessions.append(Session(id=f"session_{s + 1}", messages=tuple(sitting.messages), started_at=clock))
        clock = sitting.clock
    dialogue_id = f"synthetic-{k}"
    return Dialogue(
        id=dialogue_id,
        sessions=tuple(sessions),
        probes=tuple(_probe(f"{dialogue_id}:p{i}", p) for i, p in enumerate(plans)),
        system_prompt=SYSTEM_PROMPT,
        user_id=f"synthetic-user-{k}",
        metadata={"seed": cfg.seed, "facts": tuple(f for p in plans for f in p.planted), "tool_calls": calls},
    )


def _statement(rng: random.Random, plan: _Plan, is_update: bool) -> str:
    if plan.when is not None:
        return rng.choice(plan.slot.statements).format(when=plan.when[0])
    if is_update:
        assert plan.update_value is not None
        return rng.choice(plan.slot.updates).format(v=plan.update_value)
    return rng.choice(plan.slot.statements).format(v=plan.value)


def _record(plan: _Plan, statement: str, message: Message, is_update: bool) -> None:
    assert message.id is not None and message.timestamp is not None
    date = None
    if plan.when is not None:
        date = (message.timestamp - timedelta(days=plan.when[1])).date().isoformat()
    value = plan.update_value if is_update and plan.update_value is not None else plan.value
    fact = PlantedFact(plan.slot.type, plan.slot.key, value, statement, message.id, date=date)
    if is_update and plan.planted:
        old = plan.planted[-1]
        plan.planted[-1] = PlantedFact(
            old.type, old.slot, old.value, old.statement, old.message_id, message.id, old.date
        )
    plan.planted.append(fact)


def _probe(probe_id: str, plan: _Plan) -> Probe:
    latest, earlier = plan.planted[-1], plan.planted[:-1]
    return Probe(
        id=probe_id,
        question=plan.slot.question,
        answer=latest.date if latest.date is not None else latest.value,
        evidence=(latest.message_id,),
        category=UPDATE if earlier else plan.slot.type,
        metadata={
            "type": plan.slot.type,
            "slot": plan.slot.key,
            "statement": latest.statement,
            SUPERSEDED_KEY: tuple(f.message_id for f in earlier),
            "superseded_answer": earlier[-1].value if earlier else None,
        },
    )
