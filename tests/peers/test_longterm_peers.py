"""Long-term peers (llama-index Memory, mem0, LangMem): real runs on a LoCoMo slice, their metrics, their rankings.

- each entry runs through `memlab.api.run` on the first three sessions of conv-26: every long-term metric is
  filled, and recall@K and nDCG@10 equal an independent computation over the probe records the run emitted
  and ranx's over the run's retrievals.trec and .qrels;
- mem0 (raw mode, no threshold) and LangMem store one memory per turn and rank by cosine similarity over
  memlab's embedder: both rankings equal a brute-force numpy ranking of the same turns (the differential test);
- llama-index's nodes cite exactly the turns `Memory` flushed, in order, and the FIFO keeps the rest.
"""

from __future__ import annotations

import gc
import json
import math
import multiprocessing
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import pytest
from ranx import Qrels, Run, evaluate
from requires import require

require("llama_index.core", "mem0", "langmem", "langgraph", "qdrant_client")

from memlab.api import compose, run  # noqa: E402  (after the skip)
from memlab.dialogues import Dialogue, load_locomo  # noqa: E402
from memlab.embed import HashingEmbedder  # noqa: E402
from memlab.longterm import RESULT_EVIDENCE  # noqa: E402
from memlab.memory import InMemoryChatMemory  # noqa: E402
from memlab.messages import Message  # noqa: E402
from memlab.peers import LangMemMemory, LlamaIndexMemory, Mem0Memory  # noqa: E402
from memlab.runtime import Runtime, SecurityContext  # noqa: E402
from memlab.sim import ProbeRecord, simulate, user_ends  # noqa: E402
from memlab.tokens import get_counter  # noqa: E402

SLICE = (
    "dataset=locomo",
    "context=none",
    "dataset.sample_ids=[conv-26]",
    "sim.max_sessions=3",
    "sim.workers=1",
    "seed=0",
    "report.plots=false",  # no test here reads the report's figures
)
PEERS = ("llamaindex_memory", "mem0", "langmem")
RANX_METRICS = ("recall@1", "recall@5", "recall@10", "recall@20", "ndcg@10")


def independent_recall(evidence: set[str], retrieved: list[list[str]], k: int) -> float:
    return len(evidence & {e for m in retrieved[:k] for e in m}) / len(evidence)


def independent_ndcg(evidence: set[str], retrieved: list[list[str]], k: int) -> float:
    seen: set[str] = set()
    gains = []
    for memory in retrieved:
        new = set(memory) & evidence - seen
        seen |= new
        gains.append(len(new))
    ideal = sorted(gains + [1] * len(evidence - seen), reverse=True)
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]))
    return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal[:k]))


@pytest.mark.parametrize("entry", PEERS)
def test_a_peer_fills_every_long_term_metric(entry: str, locomo_path, tmp_path) -> None:
    result = run(compose([f"longterm={entry}", f"dataset.path={locomo_path}", *SLICE]), tmp_path / entry)
    m = result.metrics
    assert m["longterm.memories"] > 0 and m["longterm.retrievals"] == 3  # one per session start
    assert m["longterm.injected_tokens.mean"] > 0 and m["longterm.injected_tokens.per_call"] > 0
    probes = [
        r
        for r in result.records
        if isinstance(r, ProbeRecord) and r.probe.evidence and r.probe.category != "adversarial"
    ]
    assert m["longterm.questions"] == len(probes) > 0
    for k in (1, 5, 10, 20):
        mine = [independent_recall(set(p.probe.evidence), p.results[RESULT_EVIDENCE], k) for p in probes]
        assert m[f"longterm.recall@{k}"] == pytest.approx(np.mean(mine), abs=1e-6)
    ndcg = [independent_ndcg(set(p.probe.evidence), p.results[RESULT_EVIDENCE], 10) for p in probes]
    assert m["longterm.ndcg@10"] == pytest.approx(np.mean(ndcg), abs=1e-6)
    assert 0 < m["longterm.recall@10"] <= m["longterm.recall@20"] <= 1
    manifest = (result.run_dir / "manifest.json").read_text()
    assert {"llamaindex_memory": "llama-index-core", "mem0": "mem0ai", "langmem": "langmem"}[entry] in manifest
    latency = (result.run_dir / "latency.json").read_text()
    assert '"latency.retrieval.p50_us": null' not in latency and '"latency.extract.p50_us": null' not in latency
    # retrievals.jsonl, .trec and .qrels as memlab's own component writes them: the jsonl's rankings give
    # metrics.json's recall, and ranx on the TREC files reproduces it where one docid per rank can carry the
    # credit (mem0's and LangMem's memories cite one turn each; a llama-index node cites 3-4, and when it is the
    # first to cite two evidence turns of a question ranx credits one: `credited_docids`, never more).
    lines = [json.loads(line) for line in (result.run_dir / "retrievals.jsonl").read_text().splitlines()]
    scored = [line for line in lines if line["scored"]]
    assert len(scored) == len(probes)
    assert all(mid.startswith(("node-", f"{entry}-")) for line in lines for mid, _, _ in line["ranked"])
    for k in (1, 10, 20):
        mine = [independent_recall(set(x["evidence"]), [t for *_, t in x["ranked"]], k) for x in scored]
        assert m[f"longterm.recall@{k}"] == pytest.approx(np.mean(mine), abs=1e-6)
    qrels = Qrels.from_file(str(result.run_dir / "retrievals.qrels"), kind="trec")
    trec = Run.from_file(str(result.run_dir / "retrievals.trec"), kind="trec")
    scores = evaluate(qrels, trec, list(RANX_METRICS), make_comparable=True)
    for name in RANX_METRICS:
        if entry == "llamaindex_memory":
            assert 0 < scores[name] <= m[f"longterm.{name}"] + 1e-6, name
        else:
            assert scores[name] == pytest.approx(m[f"longterm.{name}"], abs=1e-6), name


@pytest.fixture(scope="module")
def conversation(locomo_path):
    """conv-26's first two sessions and the questions about them."""
    d = load_locomo(locomo_path)[0]
    sessions = d.sessions[:2]
    ids = {m.id for s in sessions for m in s.messages}
    return replace(d, sessions=sessions, probes=tuple(p for p in d.probes if p.evidence and set(p.evidence) <= ids))


def _fill(peer, conversation) -> list:
    peer.on_dialogue_start(None, conversation)
    turns = [m for s in conversation.sessions for m in s.messages if m.text.strip()]
    for i in range(0, len(turns), 2):  # rounds of two turns, as LoCoMo's speakers alternate
        peer.add(turns[i : i + 2])
    return turns


def test_mem0_and_langmem_rank_as_brute_force_cosine(conversation) -> None:
    """Same semantics, same ranking: one memory per turn, cosine over memlab's embedder (mem0: threshold 0)."""
    embedder = HashingEmbedder()
    mem0, langmem = Mem0Memory(embedder, threshold=0.0), LangMemMemory(embedder)
    turns = _fill(mem0, conversation)
    _fill(langmem, conversation)
    vectors = embedder.embed([t.text for t in turns])
    assert conversation.probes
    for probe in conversation.probes[:10]:
        scores = vectors @ embedder.embed([probe.question])[0]
        order = np.argsort(-scores, kind="stable")[:10]
        expected = [(turns[i].id,) for i in order]
        for peer in (mem0, langmem):
            hits = peer.search(probe.question, 10)
            assert [round(h.score, 4) for h in hits] == pytest.approx([round(float(scores[i]), 4) for i in order])
            distinct = [
                i for i in range(10) if all(abs(scores[order[i]] - scores[j]) > 1e-6 for j in order if j != order[i])
            ]
            assert [hits[i].evidence for i in distinct] == [expected[i] for i in distinct]


def _peer(entry: str) -> LlamaIndexMemory | Mem0Memory | LangMemMemory:
    """A peer over the hashing embedder; llama-index's FIFO small enough to flush two sessions into nodes."""
    if entry == "llamaindex_memory":
        return LlamaIndexMemory(HashingEmbedder(), token_limit=300, token_flush_size=60)
    return Mem0Memory(HashingEmbedder(), threshold=0.0) if entry == "mem0" else LangMemMemory(HashingEmbedder())


def _start(peer, conversation, user: str, turns: tuple[Message, ...] = ()) -> None:
    """A dialogue of `user` starts (as the runtime calls it), then its turns are added in rounds of two."""
    peer.on_dialogue_start(None, replace(conversation, id=f"{user}-{len(turns)}", user_id=user))
    for i in range(0, len(turns), 2):
        peer.add(turns[i : i + 2])


def _found(peer, question: str) -> list[tuple[str, tuple[str, ...], str, float]]:
    """The peer's 10 best memories for `question`, scores to retrievals.jsonl's digits (Qdrant's float32 sums
    differ in the eighth digit between two searches of one collection)."""
    return [(h.content, h.evidence, h.id, round(h.score, 6)) for h in peer.search(question, 10)]


@pytest.mark.parametrize("entry", PEERS)
def test_a_peer_keeps_each_users_memory_and_only_theirs_across_dialogues(entry: str, conversation) -> None:
    """As memlab's memory: ann's later dialogue finds what her first stored, bob's the same texts under his ids.

    The peers started every dialogue empty (its id as the user), so on data that repeats users (tau-bench) they
    answered a user's later dialogue from nothing while memlab's memory answered from the earlier ones.
    """
    turns = tuple(m for s in conversation.sessions for m in s.messages if m.text.strip())
    bobs = tuple(replace(m, id=f"bob:{m.id}") for m in turns)  # the same texts: a leak between users would tie in
    question = conversation.probes[0].question
    peer = _peer(entry)
    try:
        _start(peer, conversation, "ann", turns)
        first = _found(peer, question)
        _start(peer, conversation, "bob", bobs)
        bob_first = _found(peer, question)
        _start(peer, conversation, "ann")  # her second dialogue: nothing added yet
        again = _found(peer, question)
        _start(peer, conversation, "bob")
        bob_again = _found(peer, question)
    finally:
        if isinstance(peer, LlamaIndexMemory):
            peer.close()
    assert first and again == first
    assert all(e in {m.id for m in turns} for _, evidence, _, _ in again for e in evidence)
    assert bob_again == bob_first and all(e.startswith("bob:") for _, evidence, _, _ in bob_again for e in evidence)


@pytest.mark.parametrize("entry", PEERS)
def test_a_peer_drops_a_users_memory_after_their_last_dialogue(entry: str, conversation) -> None:
    """A replay of ann, bob, ann: bob's library memory goes once his only dialogue is over, ann's after her second.

    The peers kept every user's memory until the replay's end (LongMemEval: 500 users, each in one dialogue).
    """
    first = conversation.head(1)  # a session each: enough to store and find
    dialogues = [replace(first, id=f"{user}-{i}", user_id=user) for i, user in enumerate(("ann", "bob", "ann"))]
    peer = _peer(entry)
    seen: list[tuple[str, object]] = []

    def start(runtime, dialogue, real=peer.on_dialogue_start) -> None:
        seen.append(("start", dialogue.user_id))
        real(runtime, dialogue)

    def release(state, real=peer.release) -> None:
        seen.append(("release, still kept", (peer.user, *peer._users)))  # the released user is out of the peer
        real(state)

    peer.on_dialogue_start, peer.release = start, release
    counter = get_counter("cl100k_base")
    try:
        with no_connection_left_to_the_collector():
            records = list(
                simulate(
                    dialogues,
                    lambda d: Runtime(InMemoryChatMemory(d.id), counter, SecurityContext(d.user_id, "chat"), [peer]),
                    ends=user_ends(dialogues),
                )
            )
            held = (peer.user, dict(peer._users))
    finally:
        if isinstance(peer, LlamaIndexMemory):
            peer.close()
    assert seen == [
        ("start", "ann"),
        ("start", "bob"),
        ("release, still kept", (None, "ann")),  # bob's, after his only dialogue; ann's set aside for her second
        ("start", "ann"),
        ("release, still kept", (None,)),
    ]
    assert held == (None, {})  # nothing left for `close` (llama-index: each chat store disposed at its user's end)
    probes = [r for r in records if isinstance(r, ProbeRecord)]
    assert probes and all(r.results[RESULT_EVIDENCE] for r in probes)  # each dialogue's questions found memories


def test_a_dropped_llamaindex_peer_closes_its_event_loop() -> None:
    """An unclosed loop's self-pipe sockets surfaced as ResourceWarnings in an unrelated later test (test_plots)."""
    peer = LlamaIndexMemory(HashingEmbedder())
    loop = peer._loop
    del peer
    gc.collect()
    assert loop.is_closed()


@contextmanager
def no_connection_left_to_the_collector() -> Iterator[None]:
    """Fails when the block left an aiosqlite connection to the garbage collector (collected at the block's end),
    which says so in a ResourceWarning."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        yield
        gc.collect()
    assert [str(w.message) for w in seen if "aiosqlite" in str(w.message)] == []


def test_a_closed_llamaindex_peer_has_disposed_each_chat_store_it_opened() -> None:
    """Each Memory's SQLite chat store (one per user) holds an aiosqlite connection: disposed by `close`.

    Left to the garbage collector, they surfaced as ResourceWarnings in an unrelated later test (test_plots).
    """
    with no_connection_left_to_the_collector():
        peer = LlamaIndexMemory(HashingEmbedder())
        for user in ("ann", "bob"):
            peer.on_dialogue_start(None, Dialogue(id=f"{user}-1", sessions=(), user_id=user))
            peer.add([Message("user", "I moved to Denver last week.", id=f"{user}-1")])
        peer.close()
        peer.close()  # twice is harmless
        del peer


def _collect(peers: list[LlamaIndexMemory]) -> None:
    """In a forked child: drop the parent's peer and run the garbage collector (its finalizer), then exit."""
    peers.clear()
    gc.collect()


def test_a_llamaindex_peer_freed_in_a_forked_worker_does_not_wait_for_its_store() -> None:
    """A replay's worker, forked from a process that used the peer, may collect it: the finalizer must not wait there.

    The store's aiosqlite thread is not forked; a finalizer that disposed the store waited for it for ever, and a
    parallel replay (tests/context/test_budget.py's) hung in its pool. 60 s is a liveness bound, not a timing.
    """
    peers = [LlamaIndexMemory(HashingEmbedder())]
    peers[0].on_dialogue_start(None, Dialogue(id="ann-1", sessions=(), user_id="ann"))
    peers[0].add([Message("user", "I moved to Denver last week.", id="ann-1")])
    child = multiprocessing.get_context("fork").Process(target=_collect, args=(peers,))
    child.start()
    child.join(60)
    if child.exitcode is None:
        child.kill()
        child.join()
    assert child.exitcode == 0
    # The child left the loop alone: closing it there unregistered this process's wake-up socket from the epoll
    # instance both share, and the parent's own disposal then waited for ever.
    closing = threading.Thread(target=peers[0].close, daemon=True)
    closing.start()
    closing.join(60)
    assert not closing.is_alive()


def test_a_lab_run_closes_its_llamaindex_peer(locomo_path, tmp_path) -> None:
    """The replay closes the components it built, so no store is left to the collector (and its ResourceWarning)."""
    cfg = compose(["longterm=llamaindex_memory", f"dataset.path={locomo_path}", *SLICE, "sim.max_sessions=1"])
    with no_connection_left_to_the_collector():
        run(cfg, tmp_path / "run")


def test_llamaindex_nodes_cite_what_memory_flushed(conversation) -> None:
    peer = LlamaIndexMemory(HashingEmbedder(), token_limit=300, token_flush_size=60)
    turns = _fill(peer, conversation)
    hits = peer.search("anything", 10_000)
    cited = sorted((t for h in hits for t in h.evidence), key=[t.id for t in turns].index)
    from llama_index.core.storage.chat_store.sql import MessageStatus

    active = peer.memory.get_all(status=MessageStatus.ACTIVE)
    peer.close()
    assert cited == [t.id for t in turns[: len(cited)]]  # the oldest turns, each in one node
    assert len(cited) + len(active) == len(turns) and len(cited) > len(turns) // 2
    assert all(h.content.count("<message role=") == len(h.evidence) for h in hits)


def test_mem0_over_its_in_process_qdrant_does_not_warn_of_payload_indexes(conversation) -> None:
    """qdrant-client warns that payload indexes do nothing in its local mode each time mem0 asks for them: a
    warning about memlab's own choice of store, which the peer keeps from the user's terminal."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        peer = Mem0Memory(HashingEmbedder(), threshold=0.0)
        turns = _fill(peer, conversation)
        hits = peer.search(turns[0].text, 3)  # the store was built, filled and searched
        peer.close()
    assert hits
    assert not [w for w in caught if "Payload indexes" in str(w.message)]


@pytest.mark.parametrize("entry", PEERS)
def test_a_peer_run_is_byte_identical_when_repeated(entry: str, locomo_path, tmp_path) -> None:
    """Libraries' own ids (uuid4) and clocks never reach metrics.json or retrievals.jsonl: same config, same bytes."""
    cfg = compose([f"longterm={entry}", f"dataset.path={locomo_path}", *SLICE, "sim.max_sessions=2"])
    first, second = (run(cfg, tmp_path / str(i)).run_dir for i in range(2))
    for name in ("metrics.json", "retrievals.jsonl", "retrievals.trec"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_a_peers_run_publishes_the_same_bytes_in_two_workers_when_users_repeat(tau_bench_path, tmp_path) -> None:
    """tau-bench's trajectories 5 and 6 are one user's: the second reads what the first stored, so a peer's run
    groups them into one worker as memlab's memory's does, and two workers publish one process's bytes."""
    base = ["dataset=tau_bench", f"dataset.path={tau_bench_path}", "dataset.max_dialogues=6", "longterm=mem0"]
    published = {}
    for workers in (1, 2):
        cfg = compose([*base, f"sim.workers={workers}", "sim.progress=false", "report.plots=false"])
        out = run(cfg, tmp_path / f"w{workers}").run_dir
        published[workers] = {name: (out / name).read_bytes() for name in ("metrics.json", "calls.csv")}
    assert json.loads(published[1]["metrics.json"])["longterm.injected_tokens.per_call"] > 0
    assert published[2] == published[1]
    # mem0 logs that fastembed is missing (it is not installed here) when it builds a store, once a user: once a run
    assert (tmp_path / "w1" / "run.log").read_text().count("fastembed not installed") <= 1
