"""The English the synthetic generator writes: planted-fact slots, their updates, and distractor chatter.

Each `Slot` is one thing a user can tell an assistant about themselves, of one of the four
long-term memory types of the first design document (FACT, PREFERENCE, PROCEDURE, EPISODE).
Statements and questions are worded differently on purpose (``I work as a ...`` / ``What do I
do for a living?``), and the chatter mentions the same vocabulary about other people, so that
finding the evidence takes more than matching words.
"""

from __future__ import annotations

from dataclasses import dataclass

FACT = "FACT"
PREFERENCE = "PREFERENCE"
PROCEDURE = "PROCEDURE"
EPISODE = "EPISODE"
MEMORY_TYPES = (FACT, PREFERENCE, PROCEDURE, EPISODE)


@dataclass(frozen=True)
class Slot:
    """One plantable fact: its question, the values it can take, and how a user states or updates it.

    Templates take ``{v}`` (the value); EPISODE templates take ``{when}`` instead and the value is
    the event itself. `updates` is empty where the fact does not change (a dog's name, an event).
    """

    type: str
    key: str
    question: str
    values: tuple[str, ...]
    statements: tuple[str, ...]
    updates: tuple[str, ...] = ()


SLOTS: tuple[Slot, ...] = (
    # FACT: stable facts about the user (design document: "长期稳定，权重高").
    Slot(
        FACT,
        "job",
        "What do I do for a living?",
        (
            "Java backend developer",
            "data engineer",
            "site reliability engineer",
            "frontend developer",
            "machine learning engineer",
            "database administrator",
            "mobile app developer",
            "security analyst",
            "QA automation engineer",
        ),
        ("I work as a {v}.", "By day I'm a {v}, so this comes up a lot.", "As a {v}, I deal with this every week."),
        ("Quick update: I changed jobs and I'm now a {v}.", "I switched roles last month, so now I work as a {v}."),
    ),
    Slot(
        FACT,
        "city",
        "Which city am I based in?",
        ("Lisbon", "Toronto", "Melbourne", "Osaka", "Denver", "Krakow", "Nairobi", "Valencia", "Edinburgh"),
        ("I live in {v}.", "Here in {v} it's already evening, by the way.", "I'm based in {v}, for context."),
        ("We just moved, so I live in {v} now.", "Small news: I relocated and I'm based in {v} these days."),
    ),
    Slot(
        FACT,
        "dog",
        "What is my dog's name?",
        ("Biscuit", "Pepper", "Juno", "Maple", "Rocket", "Tofu", "Hazel", "Ziggy"),
        ("My dog is called {v}.", "I have to walk {v}, my dog, in a bit.", "{v}, my dog, keeps stealing my socks."),
    ),
    Slot(
        FACT,
        "language",
        "Which language am I learning?",
        ("Portuguese", "Japanese", "Korean", "German", "Italian", "Mandarin", "Dutch", "Swedish"),
        ("I'm learning {v} in the evenings.", "I've been taking {v} lessons twice a week."),
        ("I gave up on my old course and started learning {v} instead.",),
    ),
    Slot(
        FACT,
        "database",
        "Which database does my team mainly use?",
        ("PostgreSQL", "MySQL", "MongoDB", "Cassandra", "DynamoDB", "CockroachDB", "MariaDB"),
        ("Our main database is {v}.", "Everything we run sits on {v}."),
        ("We finished the migration, so our main database is {v} now.",),
    ),
    Slot(
        FACT,
        "team_size",
        "How many engineers are on my team?",
        ("three", "four", "five", "six", "seven", "nine", "twelve"),
        ("There are {v} engineers on my team.", "My team is {v} engineers, all remote."),
        ("After the reorg there are {v} engineers on my team.",),
    ),
    # PREFERENCE: how the user likes things (design document: "可随时间变化").
    Slot(
        PREFERENCE,
        "answer_style",
        "How do I like answers to be written?",
        (
            "code examples over prose",
            "short bullet lists over long paragraphs",
            "step-by-step explanations",
            "answers that link to the official docs",
            "terse answers without small talk",
            "a summary first and details after",
        ),
        ("I prefer {v}.", "For what it's worth, I prefer {v}.", "Going forward, I prefer {v}."),
        ("Actually, I've changed my mind: I prefer {v} now.", "Scratch what I said before, these days I prefer {v}."),
    ),
    Slot(
        PREFERENCE,
        "editor",
        "Which editor do I prefer?",
        ("VS Code", "Vim", "Emacs", "IntelliJ IDEA", "Sublime Text", "Neovim", "Helix"),
        ("For editing I prefer {v}.", "I do all my editing in {v}, I like it best."),
        ("I switched editors; these days I prefer {v}.",),
    ),
    Slot(
        PREFERENCE,
        "meetings",
        "When do I like to schedule meetings?",
        ("early morning", "late morning", "early afternoon", "late afternoon"),
        ("I like to schedule meetings in the {v}.", "If we need a call, I'd rather have it in the {v}."),
        ("My schedule changed, so I now prefer meetings in the {v}.",),
    ),
    Slot(
        PREFERENCE,
        "example_language",
        "Which programming language should examples be in?",
        ("Python", "Go", "Rust", "TypeScript", "Kotlin", "Java", "C#"),
        ("Please show examples in {v}.", "When you write snippets, I'd like them in {v}."),
        ("From now on, please write examples in {v} instead.",),
    ),
    Slot(
        PREFERENCE,
        "coffee",
        "What is my usual coffee order?",
        ("flat white", "oat latte", "double espresso", "cold brew", "matcha latte", "cortado"),
        ("My usual order is a {v}.", "I always get a {v} before standup."),
        ("I've switched my usual order to a {v}.",),
    ),
    # PROCEDURE: how the user solved something (design document: "有时效性，可能过期").
    Slot(
        PROCEDURE,
        "docker",
        "How did I fix the Docker deployment?",
        (
            "changing the port to 8081",
            "changing the port to 9090",
            "pinning the base image to 3.19",
            "mounting the config volume read-only",
            "raising the container memory limit to 2 GB",
        ),
        ("I fixed the Docker deployment by {v}.", "The Docker deployment works again: I ended up {v}."),
        ("The old Docker fix stopped working; this time I fixed it by {v}.",),
    ),
    Slot(
        PROCEDURE,
        "ci",
        "How did I fix the CI pipeline?",
        (
            "clearing the dependency cache",
            "raising the job timeout to 40 minutes",
            "pinning the runner image",
            "splitting the test stage into four shards",
            "upgrading the checkout action",
        ),
        ("I fixed the CI pipeline by {v}.", "The CI pipeline is green again after {v}."),
        ("CI broke again, and this time I fixed it by {v}.",),
    ),
    Slot(
        PROCEDURE,
        "backup",
        "How did I fix the nightly backup job?",
        (
            "moving it to 3 am",
            "rotating the expired storage key",
            "compressing the dumps before upload",
            "adding a retry with five attempts",
        ),
        ("I fixed the nightly backup job by {v}.", "The nightly backup job runs fine since I tried {v}."),
        ("The backup job failed again, so I fixed it by {v}.",),
    ),
    Slot(
        PROCEDURE,
        "login",
        "How did I fix the login service?",
        (
            "renewing the TLS certificate",
            "raising the session pool to 64",
            "syncing the server clocks",
            "clearing the stale token cache",
        ),
        ("I fixed the login service by {v}.", "Login works again, the trick was {v}."),
        ("Login broke once more; I fixed it by {v} this time.",),
    ),
    Slot(
        PROCEDURE,
        "leak",
        "How did I fix the memory leak in the worker?",
        (
            "closing the HTTP clients after each batch",
            "capping the in-process cache at 10000 entries",
            "upgrading the JSON library",
            "restarting the workers every 500 jobs",
        ),
        ("I fixed the memory leak in the worker by {v}.", "The worker no longer leaks memory since {v}."),
    ),
    # EPISODE: something that happened at a time (design document: "时间绑定，衰减较快").
    Slot(
        EPISODE,
        "kubernetes",
        "When did I finish migrating our system to Kubernetes?",
        ("finished migrating our system to Kubernetes",),
        ("{when} I finished migrating our system to Kubernetes.",),
    ),
    Slot(
        EPISODE,
        "meetup_talk",
        "When did I give a talk at the meetup?",
        ("gave a talk at a local meetup",),
        ("{when} I gave a talk at a local meetup.",),
    ),
    Slot(
        EPISODE,
        "certification",
        "When did I pass the cloud certification exam?",
        ("passed the cloud certification exam",),
        ("{when} I passed the cloud certification exam.",),
    ),
    Slot(
        EPISODE,
        "billing",
        "When did we ship the new billing feature?",
        ("shipped the new billing feature",),
        ("{when} we shipped the new billing feature.",),
    ),
    Slot(
        EPISODE,
        "half_marathon",
        "When did I run my first half marathon?",
        ("ran my first half marathon",),
        ("{when} I ran my first half marathon.",),
    ),
    Slot(
        EPISODE,
        "office_move",
        "When did the team move to the new office?",
        ("moved into the new office",),
        ("{when} the team moved into the new office.",),
    ),
    Slot(
        EPISODE,
        "roadmap",
        "When did I present the quarterly roadmap?",
        ("presented the quarterly roadmap",),
        ("{when} I presented the quarterly roadmap to leadership.",),
    ),
    Slot(
        EPISODE,
        "rescue_cat",
        "When did I adopt the rescue cat?",
        ("adopted a rescue cat",),
        ("{when} I adopted a rescue cat.",),
    ),
)

# EPISODE time phrases and how many days before the message each one means.
WHEN_DAYS: tuple[tuple[str, int], ...] = (
    ("Yesterday", 1),
    ("Two days ago", 2),
    ("Three days ago", 3),
    ("Last week", 7),
    ("Two weeks ago", 14),
)

# --- distractor chatter -------------------------------------------------------------------

PEOPLE = ("my sister", "my brother", "a colleague", "my manager", "a friend of mine", "my neighbour", "my cousin")
NAMES = ("Priya", "Tomasz", "Aisha", "Mateo", "Hannah", "Kenji", "Olu", "Sofia", "Lars", "Mei")
ADJECTIVES = ("rainy", "sunny", "windy", "grey", "humid", "freezing", "mild", "gorgeous")
FOODS = ("ramen", "a lentil curry", "sourdough", "tacos", "a mushroom risotto", "dumplings", "shakshuka", "paella")
HOBBIES = ("bouldering", "birdwatching", "baking bread", "playing chess", "cycling", "gardening", "board games")
SHOWS = ("a heist series", "a nature documentary", "an old sci-fi film", "a cooking show", "a courtroom drama")
TASKS = (
    "a regex that matches ISO dates",
    "a SQL query for monthly active users",
    "a bash loop that renames files",
    "unit tests for a date parser",
    "a retry decorator",
    "a README section about installation",
    "a commit message for a refactor",
    "a cron expression for every weekday at 7",
    "a short status update for my team",
    "a YAML config for a linter",
)
TOPICS = (
    "connection pooling",
    "rate limiting",
    "feature flags",
    "blue-green deployments",
    "event sourcing",
    "code review etiquette",
    "index design",
    "observability dashboards",
    "API versioning",
    "dependency pinning",
)

# Mention the slots' vocabulary about someone else, so word overlap alone misleads.
NEAR_MISSES: tuple[str, ...] = (
    "{person} works as a {job}, and loves it.",
    "{Name} from the other team lives in {city} now.",
    "{person} swears by {editor}, I've never been convinced.",
    "{Name} keeps telling me everyone should prefer {answer_style}.",
    "{person} has a dog called {dog}, it's hilarious.",
    "{Name} is learning {language} too, apparently.",
    "{person} said their team moved everything to {database}.",
    "{Name} fixed something similar by {docker}.",
    "{person} always orders a {coffee}.",
)

CHATTER: tuple[str, ...] = (
    "It has been {adjective} here all week.",
    "I made {food} last night and it turned out better than expected.",
    "This weekend I'm planning to do some {hobby}.",
    "We watched {show} yesterday, it was fine.",
    "Can you help me write {task}?",
    "I was reading about {topic} on the train.",
    "What's a sensible default for {topic}?",
    "Could you explain {topic} in simple terms?",
    "I need {task} before lunch.",
    "Not urgent, but I'm curious about {topic}.",
    "{Name} asked me about {topic} today and I blanked.",
    "Sorry for the delay, meetings all morning.",
    "Let's pick this up again tomorrow.",
    "That worked, thanks!",
    "Hmm, I'm not sure that's right.",
    "One more thing about {topic}.",
    "Also, {person} wants {task}.",
    "I'm taking a short break to get some {food}.",
)

REPLIES: tuple[str, ...] = (
    "Sure, here is one way to approach it.",
    "Good question.",
    "That makes sense.",
    "Thanks for the context.",
    "Happy to help with that.",
    "Here is a short answer, and more detail below.",
    "A common default for {topic} is to start small and measure.",
    "For {topic}, the main trade-off is simplicity against flexibility.",
    "I would write {task} in a few lines and test the edge cases.",
    "Let me know if you want me to go deeper on {topic}.",
    "You could also check how {topic} fits into your deployment.",
    "That sounds like a nice plan.",
    "Enjoy the {food}!",
    "No problem, we can continue whenever you like.",
    "If it helps, I can draft {task} for you next.",
)

TOOLS = ("search_docs", "read_logs", "run_sql", "fetch_page")
SERVICES = ("api-gateway", "billing", "auth", "worker", "scheduler", "search", "notifier")
LOG_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")
LOG_EVENTS = (
    "processed batch {n} in {ms}ms",
    "cache miss for key user:{n}",
    "retrying request {n} after timeout",
    "connection {n} returned to pool",
    "slow query took {ms}ms",
    "health check ok",
    "job {n} finished with status 0",
)
TOOL_SUMMARIES: tuple[str, ...] = (
    "I looked through the results; nothing alarming, but a few entries mention {topic}.",
    "The output is long, the relevant part is near the end.",
    "Here is what the tool returned, summarized: mostly routine entries.",
    "I checked, and the results point to {topic} as the likely cause.",
)
