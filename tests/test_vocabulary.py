"""memlab.vocabulary: each list does what its comment says, and no module outside it writes a word list."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from memlab import vocabulary as v

MEMLAB = Path(__file__).resolve().parents[1] / "memlab"

# Word collections and regexes outside memlab/vocabulary.py that are structure, not vocabulary: each
# (module, name) reads ids, roles, statuses, config choices or field names, never English words a rule weighs.
# The name is the one `_WordListFinder` reports: the assignment around the list, else its function.
ALLOWED = {
    ("longterm/tools.py", "_FORGED"),  # field names a model might forge to escape its namespace
    ("longterm/rerank/__init__.py", "DEFAULT_PIPELINE"),  # stage names
    # config choices and record field names: identifiers, not words a rule weighs
    ("__init__.py", "__all__"),  # the package's public names
    ("config.py", "SCHEMA_MODULES"),  # memlab's packages
    ("experiment.py", "COMPONENT_GROUPS"),
    ("experiment.py", "QUIET_LOGGERS"),  # logger names
    ("llm/faulty.py", "FAULT_MODES"),
    ("longterm/index.py", "INDEX_KINDS"),
    ("longterm/revision.py", "KINDS"),  # longterm.revision.kind's values
    ("longterm/llm_updates.py", "EVENTS"),  # mem0's update events
    ("metrics/summaries.py", "LAYERS"),
    ("metrics/summaries.py", "COUNTS"),
    ("report/health.py", "why"),  # summary.* metric names
    ("report/gate.py", "FAILING"),  # the gate's statuses
    ("report/gate.py", "counts"),
    ("report/gate.py", "load_rules"),  # a rule's `better`: higher, lower, none
    ("report/gate.py", "table"),  # table column names
    ("llm/base.py", "_SECRET_NAMES"),  # parts of environment variable names that hold secrets (masked in errors)
    ("llm/base.py", "complete"),  # a failed call's event fields
    ("report/ablation.py", "columns"),
    ("report/ablation.py", "header"),
    ("report/rundata.py", "_QUESTION_TEXT"),  # questions.csv's column names
    ("cli.py", "_compare"),  # `memlab compare --format` choices
    ("peers/llamaindex_memory.py", "user_state"),  # attribute names (LongTermPeer.user_state)
    ("completion.py", "COMMAND_WORDS"),  # the CLI's command names (tests/test_completion.py: equal to cli.COMMANDS)
    # the C locale's calendar names, as strptime and strftime read and write dates (the corpora's own format)
    ("dates.py", "MONTHS"),
    ("dates.py", "WEEKDAYS"),
    # chat roles and OpenAI's tool_choice values
    ("messages.py", "ROLES"),
    ("peers/llamaindex_memory.py", "_role"),
    ("peers/adapters.py", "openai_tool_choice"),
}
# The synthetic generator's own words (names, foods, hobbies) are the data's, which no rule may share.
ALLOWED_MODULES = {"dialogues/synthetic_text.py"}
# A regex alternation of two plain words ("now|again", any case), or three or more plain words written as a
# string handed to word_set/frozenset/set/tuple/list (or split), or as the elements of a tuple, list or set
# (bare or inside such a call): what a word list looks like, whether assigned to a name or used in place.
_WORD_ALTERNATION = re.compile(r"(?<![\\\w])[a-z']{2,}\|[a-z']{2,}(?![\w])", re.IGNORECASE)
_WORDS = re.compile(r"^[a-z' ]+$", re.IGNORECASE)
_REGEX_FUNCTIONS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
_COLLECTIONS = {"word_set", "frozenset", "set", "tuple", "list", "sorted"}


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


def _words(node: ast.expr) -> list[str]:
    """The plain words `node` writes as a collection of three or more, else []."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        strings = [s for e in node.elts if (s := _literal(e)) is not None]
        if len(strings) < len(node.elts):
            return []
    elif isinstance(node, ast.Call):
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if func == "split" and isinstance(node.func, ast.Attribute) and not node.args:
            text = _literal(node.func.value)
            strings = text.split() if text is not None else []
        elif func in _COLLECTIONS and node.args:
            text = _literal(node.args[0])
            strings = text.split() if text is not None else _words(node.args[0])
        else:
            return []
    else:
        return []
    return strings if len(strings) >= 3 and all(_WORDS.match(s) for s in strings) else []


def _word_regex(node: ast.expr) -> bool:
    """Whether `node` is a ``re`` call (compile, search, sub, ...) whose pattern alternates plain words."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    text = _literal(node.args[0])
    return func in _REGEX_FUNCTIONS and text is not None and bool(_WORD_ALTERNATION.search(text))


class _WordListFinder(ast.NodeVisitor):
    """(name, line) of each regex of words and each collection of plain words in a module.

    The name is the innermost one around the list: the name it is assigned to, a part of (plain or annotated
    assignment), else the function or class it is written in (``<module>`` at the top). ``Literal[...]``
    types are identifiers, not lists, and are skipped.
    """

    def __init__(self) -> None:
        self.found: list[tuple[str, int]] = []
        self._names = ["<module>"]

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.expr) and (_word_regex(node) or _words(node)):
            self.found.append((self._names[-1], node.lineno))
            return  # its parts (the tuple inside ``frozenset((...))``) are the same list
        super().visit(node)

    def _named(self, name: str | None, node: ast.AST) -> None:
        self._names.append(name or self._names[-1])
        self.generic_visit(node)
        self._names.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._named(node.name, node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._named(node.name, node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._named(node.name, node)

    def visit_Assign(self, node: ast.Assign) -> None:
        target = node.targets[0]
        self._named(target.id if isinstance(target, ast.Name) else None, node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._named(node.target.id if isinstance(node.target, ast.Name) else None, node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        literal = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
        if literal != "Literal":
            self.generic_visit(node)


def _word_lists(tree: ast.AST) -> list[tuple[str, int]]:
    """(name, line) of each regex of words and each collection of plain words in a module (`_WordListFinder`)."""
    finder = _WordListFinder()
    finder.visit(tree)
    return finder.found


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


_DISGUISES = {
    "CUE": 'CUE = re.compile(r"\\b(now|again)\\b")',
    "CUE_I": 'CUE_I = re.compile(r"\\b(?:Now|Again)\\b", re.IGNORECASE)',
    "WORDS": 'WORDS = ("now", "again", "instead")',
    "FROZEN": 'FROZEN = frozenset({"now", "again", "instead"})',
    "FROZEN_LIST": 'FROZEN_LIST = frozenset(["now", "again", "instead"])',
    "SET": 'SET = {"now", "again", "instead"}',
    "TYPED": 'TYPED: frozenset[str] = frozenset(("now", "again", "instead"))',
    "SPLIT": 'SPLIT = "now again instead".split()',
    "WORD_SET": 'WORD_SET = word_set("now again instead")',
    "is_update": 'def is_update(text):\n    return any(w in text for w in ("now", "again", "instead"))',
    "hit": 'class Rule:\n    def hit(self, text):\n        return re.search(r"\\b(now|again)\\b", text)',
}


@pytest.mark.parametrize("name", sorted(_DISGUISES))
def test_the_grep_finds_a_word_list(name: str) -> None:
    """The check above would see a cue regex or a collection of words in any of its usual forms."""
    assert [found for found, _ in _word_lists(ast.parse(_DISGUISES[name]))] == [name]


def test_the_grep_leaves_structure_alone() -> None:
    """Dotted names, single words and two-word pairs are not a word list."""
    source = 'OK = ("a.b", "c", "d")\nPAIR = ("user", "assistant")\nONE = re.compile(r"\\bnow\\b")\n'
    assert _word_lists(ast.parse(source)) == []


def test_the_allow_list_names_only_what_exists() -> None:
    """An allowed entry the check no longer finds is dropped from the list, which stays small and explicit."""
    for rel, name in ALLOWED:
        found = {found for found, _ in _word_lists(ast.parse((MEMLAB / rel).read_text(encoding="utf-8")))}
        assert name in found, f"{rel}: {name}"


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
