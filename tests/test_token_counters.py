"""Token counters: exact tiktoken counts offline, the design document's estimate, one count per message."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from memlab.errors import MemlabError
from memlab.messages import Message, ToolCall
from memlab.tokens import (
    CHAT_TOKENS_PER_MESSAGE,
    EstimateCounter,
    TiktokenCounter,
    get_counter,
    load_encoding,
    tool_schema_tokens,
)


def test_estimate_is_chars_over_2_5_plus_4_per_message() -> None:
    counter = EstimateCounter()
    assert counter.count(Message(role="user", content="x" * 25)) == 10 + 4
    assert counter.count(Message(role="user", content="x" * 24)) == 9 + 4  # int(9.6)
    assert counter.count(Message(role="assistant", content=None)) == 4


def test_tool_call_arguments_count() -> None:
    counter = EstimateCounter()
    call = Message(role="assistant", tool_calls=(ToolCall("c1", "search", '{"q": "lisbon"}'),))
    assert counter.count(call) == int(len('search{"q": "lisbon"}') / 2.5) + 4


def test_tiktoken_counts_match_known_encodings() -> None:
    cl100k = TiktokenCounter("cl100k_base")
    assert cl100k.count_text("hello world") == 2
    assert cl100k.count_text("tiktoken is great!") == 6
    m = Message(role="user", content="hello world")
    assert cl100k.count(m) == CHAT_TOKENS_PER_MESSAGE + 1 + 2  # framing + "user" + text
    assert cl100k.count_request([m]) == cl100k.count(m) + 3  # reply priming


@pytest.mark.parametrize(
    ("spec", "name"), [("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base"), ("estimate", "estimate")]
)
def test_model_names_choose_the_encoding(spec: str, name: str) -> None:
    assert get_counter(spec).name == name


def test_other_providers_go_through_litellm() -> None:
    assert get_counter("claude-sonnet-4-5").name == "litellm/claude-sonnet-4-5"  # in litellm's bundled table
    assert get_counter("anthropic/claude-x").name == "litellm/anthropic/claude-x"  # a provider it routes to


def test_an_unknown_tokenizer_is_a_user_error_listing_the_known_ones() -> None:
    """The defect: `tokenizer=nonexistent` counted silently with litellm's fallback tokenizer."""
    with pytest.raises(MemlabError, match=r"tokenizer='nonexistent' is unknown; expected estimate, .*cl100k_base"):
        get_counter("nonexistent")


def _encoded(counter: TiktokenCounter) -> list[str]:
    """The texts `counter` hands its tokenizer from now on, in order."""
    texts: list[str] = []
    encode = counter._encode

    def counting(text: str) -> list[int]:
        texts.append(text)
        return encode(text)

    counter._encode = counting
    return texts


def test_each_distinct_message_is_tokenized_once() -> None:
    counter = TiktokenCounter("cl100k_base")
    encoded = _encoded(counter)
    history = [Message(role="user", content=f"message {i}", id=str(i)) for i in range(50)]
    for end in range(1, len(history) + 1):  # the simulator's pattern: a growing history
        counter.count_request(history[:end])
    assert len(encoded) == len(history) + 1  # the text of each message once, the role once (short texts memoized)


@pytest.mark.parametrize("make", [EstimateCounter, lambda: TiktokenCounter("o200k_base")], ids=["estimate", "o200k"])
def test_the_message_cache_holds_a_bounded_amount_of_text(make) -> None:  # type: ignore[no-untyped-def]
    """per_task's summary, a line longer on every call, is a new long message each time: the cache must not keep
    them all (713 MB of text at 4,000 messages), and what it forgets is counted again the same."""
    counter = make()
    counter.CACHE_CHARS = 20_000
    summary: list[str] = []
    counts = []
    for i in range(120):
        summary.append(f"[task {i}] The user asked about item {i} and the agent answered it.")
        counts.append(counter.count(Message(role="system", content="\n".join(summary))))
        held = sum(len(m.text) for m in counter._cache)
        assert held <= counter.CACHE_CHARS
    fresh = make()
    assert counts == [fresh.count(Message(role="system", content="\n".join(summary[: i + 1]))) for i in range(120)]


def test_a_short_text_is_tokenized_once_and_counted_as_tiktoken_counts_it() -> None:
    counter = TiktokenCounter("o200k_base")
    texts = ["user", "search_memory:Search long-term memory", "user", "a\nb", "x" * 600, "x" * 600]
    encoding = load_encoding("o200k_base")
    encoded = _encoded(counter)
    assert [counter.count_text(t) for t in texts] == [len(encoding.encode(t, disallowed_special=())) for t in texts]
    assert encoded == texts[:2] + texts[3:]  # the second "user" is remembered; a long text without a newline is not


def test_unknown_encoding_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown tiktoken encoding 'cl99k'"):
        TiktokenCounter("cl99k")


def test_tiktoken_loads_with_the_network_unreachable(tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = textwrap.dedent(
        """
        import socket
        def refuse(*args, **kwargs):
            raise OSError("network unreachable (test)")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from memlab.tokens import get_counter
        print(get_counter("cl100k_base").count_text("hello world"), get_counter("o200k_base").count_text("hello world"))
        """
    )
    env = {"PATH": "/usr/bin:/bin", "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty"), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "2"]


def test_null_and_none_content_on_tool_calls_loads() -> None:
    raw = {
        "role": "assistant",
        "content": "None",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }
    m = Message.from_openai(raw)
    assert m.content is None and m.tool_calls[0].name == "f"
    assert Message.from_openai({**raw, "content": None}).to_openai()["tool_calls"][0]["id"] == "c1"
    assert Message.from_openai({"role": "user", "content": "None"}).content == "None"  # only tool calls are special


# The OpenAI Cookbook's worked example for tool definitions ("How to count tokens with tiktoken", section 7):
# the API bills these 101 prompt tokens on gpt-4o and gpt-4o-mini, 105 on gpt-4 and gpt-3.5-turbo.
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "unit": {
                    "type": "string",
                    "description": "The unit of temperature to return",
                    "enum": ["celsius", "fahrenheit"],
                },
            },
            "required": ["location"],
        },
    },
}


@pytest.mark.parametrize(
    ("model", "billed"), [("gpt-4o", 101), ("gpt-4o-mini", 101), ("gpt-4", 105), ("gpt-3.5-turbo", 105)]
)
def test_tool_definitions_count_as_openai_bills_the_cookbooks_example(model: str, billed: int) -> None:
    messages = [
        Message(role="system", content="You are a helpful assistant that can answer to questions about the weather."),
        Message(role="user", content="What's the weather like in San Francisco?"),
    ]
    counter = get_counter(model)
    assert counter.count_request(messages) + tool_schema_tokens([WEATHER_TOOL], counter) == billed
    assert tool_schema_tokens([], counter) == 0
