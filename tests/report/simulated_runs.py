"""Runs made by the real simulator over hand-made dialogues, with a small context component.

`KeepLast` is a genuine (if simple) context strategy: it sends the system prompt and the last
`keep` messages, optionally folding the dropped ones into a summary line, and reports what it
did with the same events the real strategies emit. Run directories are written with the
same code `memlab run` uses, so reports, comparisons and the gate read real files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memlab.dialogues.model import Dialogue, Probe, Session
from memlab.messages import Message
from memlab.report import RunData, run_files
from memlab.rundir import publish
from memlab.runtime import CallContext, Component, Runtime, SecurityContext
from memlab.sim import simulate
from memlab.tokens import get_counter
from memlab.trace import CONTEXT_APPLY, SummaryEvent, emit, timed

TOPICS = ["Lisbon", "Oslo", "guitar", "sourdough", "marathon", "Kyoto", "chess", "violin"]


def make_dialogues(n: int = 3, turns: int = 40) -> list[Dialogue]:
    """`n` dialogues of `turns` messages; probes ask about early, middle and late turns."""
    dialogues = []
    for d in range(n):
        msgs = []
        for t in range(turns):
            role = "user" if t % 2 == 0 else "assistant"
            topic = TOPICS[(d + t) % len(TOPICS)]
            text = f"Turn {t} of talk {d}: something about {topic} number {d * 100 + t}, with a few more words."
            msgs.append(Message(role=role, content=text, id=f"D{d}:{t}", speaker="Ann" if role == "user" else "Bot"))
        probes = tuple(
            Probe(
                f"d{d}-q{k}",
                f"What about {TOPICS[(d + t) % len(TOPICS)]}?",
                f"{TOPICS[(d + t) % len(TOPICS)]} {d * 100 + t}",
                (f"D{d}:{t}",),
                str(1 + k % 2),
            )
            for k, t in enumerate((2, turns // 2, turns - 2))
        )
        dialogues.append(Dialogue(f"talk-{d}", (Session("S1", tuple(msgs)),), probes, system_prompt="You help."))
    return dialogues


class KeepLast(Component):
    """Send the system prompt and the last `keep` messages (0: everything); optionally a summary line."""

    order = 30

    def __init__(self, keep: int = 0, summarize: bool = False) -> None:
        self.keep, self.summarize = keep, summarize

    def stages(self) -> Sequence[KeepLast]:
        return (self,)

    def process(self, messages: list[Message], ctx: CallContext) -> list[Message]:
        with timed() as t:
            head = [m for m in messages[:1] if m.role == "system"]
            body = messages[len(head) :]
            kept = body[-self.keep :] if self.keep and len(body) > self.keep else body
            dropped = body[: len(body) - len(kept)]
            out = head + kept
            if self.summarize and dropped:
                line = "Summary: " + " ".join(m.text.split(":")[0] for m in dropped[-4:])
                out = [*head, Message(role="system", content=line), *kept]
                counter = ctx.counter or get_counter("cl100k_base")
                SummaryEvent(
                    layer="context",
                    strategy="keep_last",
                    source_ids=tuple(m.id for m in dropped if m.id is not None),
                    source_messages=len(dropped),
                    source_tokens=counter.count_messages(dropped),
                    summary_tokens=counter.count(out[1]),
                    counter=counter.name,
                    accepted=True,
                    text=line,
                ).emit()
        emit(CONTEXT_APPLY, strategy="keep_last", messages_in=len(messages), messages_out=len(out), latency_us=t["us"])
        return out


class ListHistory:
    """The plainest `History`: a list."""

    def __init__(self) -> None:
        self._messages: list[Message] = []

    def append(self, message: Message) -> None:
        self._messages.append(message)

    def messages(self) -> list[Message]:
        return list(self._messages)

    def __len__(self) -> int:
        return len(self._messages)


def write_run(
    path: Path,
    *,
    keep: int = 0,
    summarize: bool = False,
    overrides: Sequence[str] = (),
    name: str = "t",
    dialogues: list[Dialogue] | None = None,
) -> Path:
    dialogues = dialogues or make_dialogues()
    component = KeepLast(keep, summarize)
    counter = get_counter("cl100k_base")

    def runtime(d: Dialogue) -> Runtime:
        return Runtime(ListHistory(), counter, SecurityContext("u"), [component], d.system_prompt)

    records = list(simulate(dialogues, runtime))
    config = {"name": name, "context": {"_target_": "tests.KeepLast", "keep": keep, "summarize": summarize}}
    run = RunData.from_records(
        path,
        records,
        manifest={"name": name, "overrides": list(overrides), "dialogues": len(dialogues), "seed": 0},
        config=config,
    )
    return publish(
        path,
        {
            **run_files(run),
            "config.yaml": f"name: {name}\ncontext:\n  keep: {keep}\n  summarize: {str(summarize).lower()}\n",
        },
    )


def job_dir(sweep: Path, n: int) -> Path:
    """Job `n`'s folder in a sweep (`n`, or `n_<overrides>` when named after them)."""
    (found,) = [p for p in sweep.iterdir() if p.is_dir() and (p.name == str(n) or p.name.startswith(f"{n}_"))]
    return found
