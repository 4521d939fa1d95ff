"""memlab.vocabulary: each list does what its comment says, and no module outside it writes a word list."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from memlab import vocabulary as v

MEMLAB = Path(__file__).resolve().parents[1] / "memlab"

# Regexes and word collections outside memlab/vocabulary.py that are structure, not vocabulary: each
# (module, name) reads ids, prefixes, file keys or error messages, never English words a rule weighs.
ALLOWED = {
    ("naming.py", "UNSAFE"),
    ("longterm/injection.py", "_LINE"),
    ("longterm/revision.py", "_SPEAKER"),
    ("longterm/tools.py", "_FORGED"),  # field names a model might forge to escape its namespace
    ("metrics/registry.py", "_CATEGORY"),
    ("report/run_report.py", "_CATEGORY"),
    ("llm/extract_rules.py", "_NAME"),
    ("llm/extractive.py", "_QUESTION"),
    ("llm/extractive.py", "_JUDGE_FIELDS"),
    ("llm/prompts.py", "_LINE"),
    ("config_keys.py", "_MISSING_PLUGIN"),
    ("config_keys.py", "_NOT_IN_DEFAULTS"),
    ("memory/compressors.py", "COUNT_SUMMARY"),
    ("longterm/rerank/__init__.py", "DEFAULT_PIPELINE"),  # stage names
    # config choices and record field names: identifiers, not words a rule weighs
    ("experiment.py", "COMPONENT_GROUPS"),
    ("llm/faulty.py", "FAULT_MODES"),
    ("longterm/index.py", "INDEX_KINDS"),
    ("metrics/summaries.py", "LAYERS"),
    ("metrics/summaries.py", "COUNTS"),
    ("report/ablation.py", "columns"),  # table column names
    ("report/ablation.py", "header"),
    ("completion.py", "COMMAND_WORDS"),  # the CLI's command names (tests/test_completion.py: equal to cli.COMMANDS)
    ("completion.py", "HIDDEN_GROUPS"),
}
# The synthetic generator's own words (names, foods, hobbies) are the data's, which no rule may share.
ALLOWED_MODULES = {"dialogues/synthetic_text.py"}
# A regex alternation of two plain words ("now|again"), or a string of three or more space-separated words
# handed to word_set/frozenset/set/tuple: what a word list looks like.
_WORD_ALTERNATION = re.compile(r"(?<![\\\w])[a-z']{2,}\|[a-z']{2,}(?![\w])")
_WORDS = re.compile(r"^[a-z' ]+$")


def _literal(node: ast.expr) -> str | None:
    """The text of a string constant or an implicit concatenation of them (f-strings: their constant parts)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(p.value for p in node.values if isinstance(p, ast.Constant) and isinstance(p.value, str))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left), _literal(node.right)
        return None if left is None or right is None else left + right
    return None


def _word_lists(tree: ast.AST) -> list[tuple[str, int]]:
    """(assigned name, line) of each regex of words and each collection of plain words in a module."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or not isinstance(node.targets[0], ast.Name):
            continue
        name, value = node.targets[0].id, node.value
        strings: list[str] = []
        if isinstance(value, ast.Call) and value.args:
            text = _literal(value.args[0])
            func = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
            if text is not None and func == "compile" and _WORD_ALTERNATION.search(text):
                found.append((name, node.lineno))
                continue
            if text is not None and func in {"word_set", "frozenset", "set"} and len(text.split()) >= 3:
                strings = [text]
        if isinstance(value, ast.Tuple | ast.List | ast.Set):
            strings = [s for e in value.elts if (s := _literal(e)) is not None]
            if len(strings) < 3 or len(strings) < len(value.elts):
                strings = []
        if strings and all(_WORDS.match(s) for s in strings):
            found.append((name, node.lineno))
    return found


def test_no_word_list_outside_the_vocabulary_module() -> None:
    offenders = []
    for path in sorted(MEMLAB.rglob("*.py")):
        rel = path.relative_to(MEMLAB).as_posix()
        if rel == "vocabulary.py" or rel in ALLOWED_MODULES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, line in _word_lists(tree):
            if (rel, name) not in ALLOWED:
                offenders.append(f"memlab/{rel}:{line} {name}")
    assert not offenders, "word lists outside memlab/vocabulary.py: " + ", ".join(offenders)


def test_the_grep_finds_a_word_list() -> None:
    """The check above would see a cue regex or a tuple of words if one came back."""
    source = 'CUE = re.compile(r"\\b(now|again)\\b")\nWORDS = ("now", "again", "instead")\nOK = ("a.b", "c", "d")\n'
    assert [name for name, _ in _word_lists(ast.parse(source))] == ["CUE", "WORDS"]


def test_the_allow_list_names_only_what_exists() -> None:
    """An allowed entry that no longer exists is dropped from the list, which stays small and explicit."""
    for rel, name in ALLOWED:
        tree = ast.parse((MEMLAB / rel).read_text(encoding="utf-8"))
        assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)]
        names = {t.id for n in assigns for t in n.targets if isinstance(t, ast.Name)}
        assert name in names, f"{rel}: {name}"


def test_metrics_read_no_rule_vocabulary() -> None:
    """Metric code imports only the METRIC_ lists: it must not move when a rule's list is tuned."""
    rule_lists = {n for n in dir(v) if n.isupper() and not n.startswith("METRIC_")}
    for path in sorted((MEMLAB / "metrics").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in {"memlab.vocabulary", "memlab.text"}:
                shared = {a.name for a in node.names} & rule_lists
                assert not shared, f"{path.name} imports {shared}"


# --- each list ---------------------------------------------------------------------------------


def test_stop_words_are_scikit_learns() -> None:
    assert {"the", "move", "two", "first"} <= v.STOP_WORDS and len(v.STOP_WORDS) == 318


def test_date_words_hold_months_weekdays_and_relative_days() -> None:
    assert v.MONTHS | v.WEEKDAYS | v.RELATIVE_DAYS <= v.DATE_WORDS
    assert {"sept", "ago", "weekend"} <= v.DATE_WORDS and "moved" not in v.DATE_WORDS


@pytest.mark.parametrize(
    ("text", "dated"),
    [
        ("Yesterday I went hiking.", True),
        ("We met last Friday.", True),
        ("I started in March.", True),
        ("Back in 2019 I lived there.", True),
        ("I may go hiking.", False),  # "may" alone is a verb: the date list is read in dating phrases only
        ("I love hiking.", False),
    ],
)
def test_dated_reads_the_date_words_in_dating_phrases(text: str, dated: bool) -> None:
    assert bool(v.DATED.search(text)) is dated


def test_first_person_forms() -> None:
    assert "i'm" in v.FIRST_PERSON_SINGULAR and "we" not in v.FIRST_PERSON_SINGULAR
    assert v.FIRST_PERSON_SINGULAR < v.FIRST_PERSON_WORDS and "ourselves" in v.FIRST_PERSON_WORDS


def test_function_and_filler_words_are_grammar_and_chatter() -> None:
    assert {"the", "would", "whose"} <= v.FUNCTION_WORDS and "hiking" not in v.FUNCTION_WORDS
    assert {"thanks", "haha", "谢谢"} <= v.FILLER_WORDS and "paris" not in v.FILLER_WORDS


def test_the_two_small_talk_lists_agree_on_single_words() -> None:
    """SMALL_TALK strips phrases from a turn, FILLER_WORDS single words; a one-word greeting is in both."""
    for word in ("hi", "hey", "hello", "bye", "thanks", "cool", "great", "awesome", "wow", "lol", "okay", "sure"):
        assert word in v.FILLER_WORDS and v.SMALL_TALK.fullmatch(word), word
    assert v.SMALL_TALK.sub(" ", "Hi! Thanks so much, see you later!").strip(" !,") == ""


def test_number_words_are_values() -> None:
    assert {"seven", "dozen", "twenty"} <= v.NUMBER_WORDS and "one" not in v.NUMBER_WORDS


def test_no_update_cue_list_is_left() -> None:
    """Issue 24: the update rules decide from meaning; no list of update cue words remains."""
    assert not [n for n in dir(v) if "CUE" in n and n not in {"PERSONAL_CUES", "PROCEDURE_CUE", "PREFERENCE_CUE"}]


def test_personal_cues() -> None:
    assert {"love", "allergic", "married", "喜欢"} <= v.PERSONAL_CUES and "weather" not in v.PERSONAL_CUES


@pytest.mark.parametrize(
    ("rule", "text", "hit"),
    [
        (v.SECOND_PERSON, "From now on, please write examples in Go.", True),
        (v.SECOND_PERSON, "I write examples in Go.", False),
        (v.PROCEDURE_CUE, "I fixed it by restarting the router.", True),
        (v.PROCEDURE_CUE, "The router is old.", False),
        (v.PREFERENCE_CUE, "I really love jazz.", True),
        (v.PREFERENCE_CUE, "Jazz was on the radio.", False),
        (v.PAST_REFERENCE, "Do you remember what I said?", True),
        (v.PAST_REFERENCE, "What time is it?", False),
        (v.TEMPORAL_QUESTION, "When did Alex move?", True),
        (v.TEMPORAL_QUESTION, "Where did Alex move?", False),
    ],
)
def test_cue_regexes(rule: re.Pattern[str], text: str, hit: bool) -> None:
    assert bool(rule.search(text)) is hit


def test_question_start() -> None:
    assert v.QUESTION_START.match("did you go") and not v.QUESTION_START.match("I did go")


def test_metric_lists_are_apart_from_the_rule_lists() -> None:
    assert v.METRIC_FUNCTION_WORDS is not v.FUNCTION_WORDS and "the" in v.METRIC_FUNCTION_WORDS
    assert v.METRIC_LOCOMO_DROPPED_WORDS.sub("", "the cat and a dog").split() == ["cat", "dog"]
    assert "not mentioned" in v.METRIC_ABSTENTION_PHRASES
