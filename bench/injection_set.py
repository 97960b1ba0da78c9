"""Short coding-session prompts for bench/injection.py, written for it (not from any data set).

FACTS are what a user said in earlier sessions (a preference, a command, a path, a decision), each
recorded with the assistant's short acknowledgement. FOLLOW_UPS ask, in a later session, for
something one fact answers, mostly in other words (fact index, prompt). UNRELATED are prompts of
the same kind of work that no fact answers: anything injected for them is noise. The first half of
each list tunes, the second half reports.
"""

from __future__ import annotations

FACTS = [
    "I prefer pnpm over npm for this repo",
    "Please always run ruff before committing",
    "The staging server is staging.example.internal on port 8443",
    "We decided to keep the API versioned under /v2 and never break /v1",
    "Use tabs, not spaces, in the Makefile",
    "The integration tests need the DOCKER_HOST variable set to the remote builder",
    "Our release branch is called release/next and main is always deployable",
    "Database migrations live in db/migrations and are applied with alembic upgrade head",
    "I like commit messages in the imperative mood, under 72 characters",
    "The frontend talks to the backend through the GraphQL gateway, not REST",
    "Logs of the worker go to /var/log/acme/worker.log on the VM",
    "We pinned Python to 3.11 because the ML wheels are not built for 3.12 yet",
    "Secrets are stored in Vault under secret/acme/prod, never in .env files",
    "The nightly job runs at 02:00 UTC and rebuilds the search index",
    "Prefer dataclasses over pydantic models inside the core package",
    "The design system colours are in src/theme/tokens.ts",
    "Use pytest -n 4 locally, the suite is too slow otherwise",
    "Our on-call rotation is in PagerDuty under the team name Platform",
    "We chose PostgreSQL 16 with the pgvector extension for embeddings",
    "The mobile app reads feature flags from LaunchDarkly",
    "Code review needs two approvals for anything under payments/",
    "Benchmarks should run on the c5.xlarge runner to be comparable",
    "The CSV exports must use semicolons because the finance team opens them in Excel",
    "Never force-push to shared branches; rebase only your own",
]
ACKNOWLEDGEMENTS = [
    "Noted, I will use that from now on.",
    "Understood.",
    "Got it, thanks for telling me.",
]
FOLLOW_UPS = [
    (0, "which package manager should I use to add lodash?"),
    (1, "what should I do before I commit this change?"),
    (2, "where do I point the client to test against staging?"),
    (3, "can I change the response shape of the old endpoints?"),
    (4, "how should the Makefile be indented?"),
    (5, "the integration tests cannot reach docker, what environment do they need?"),
    (6, "which branch do I cut the release from?"),
    (7, "how do I apply the database schema changes?"),
    (8, "how should I phrase the commit message?"),
    (9, "how does the web client fetch data from the server?"),
    (10, "where can I read the background worker's logs?"),
    (11, "can we upgrade the interpreter to 3.12?"),
    (12, "where do I put the production API key?"),
    (13, "when does the scheduled reindexing happen?"),
    (14, "should this new core model be a pydantic class?"),
    (15, "where are the brand colours defined?"),
    (16, "the tests take forever locally, how do I speed them up?"),
    (17, "who gets paged when production is down?"),
    (18, "which database and vector store do we use for embeddings?"),
    (19, "how does the iOS app decide which features are on?"),
    (20, "how many reviewers does a change to the payments code need?"),
    (21, "which machine should I run the performance comparison on?"),
    (22, "what separator should the spreadsheet export use?"),
    (23, "can I force push to the shared feature branch?"),
]
UNRELATED = [
    "rename the variable idx to index in utils.py",
    "write a regular expression that matches ISO dates",
    "explain what this recursion does",
    "add type hints to the parse function",
    "what's the weather like in Paris tomorrow?",
    "fix the off-by-one error in the pagination loop",
    "translate this error message into German",
    "summarise the README in three sentences",
    "why does this list comprehension return None?",
    "draft an email to the team about the offsite",
    "convert this callback code to async/await",
    "what is the time complexity of this sort?",
    "add a docstring to the Cache class",
    "sort these imports alphabetically",
    "make the button bigger on small screens",
    "write a unit test for the slugify helper",
    "how do I reverse a linked list?",
    "what does HTTP status 418 mean?",
    "generate a random UUID in JavaScript",
    "tell me a joke about compilers",
    "split this function into two smaller ones",
    "what is the difference between a tuple and a list?",
    "format this JSON nicely",
    "remove the unused variable in main.go",
]

# The multi-session workload (bench/injection_sessions.py): what the assistant answered each time the
# follow-up was asked (it states the fact), and the facts the user changed later (fact index, the change).
ANSWERS = [
    "Use pnpm: this repo uses pnpm, not npm, so `pnpm add lodash`.",
    "Run ruff first: you asked for ruff before every commit.",
    "Point it at staging.example.internal, port 8443.",
    "No: the API stays versioned under /v2 and /v1 must not break.",
    "With tabs, not spaces: the Makefile needs tabs.",
    "Set DOCKER_HOST to the remote builder before the integration tests.",
    "Cut it from release/next; main stays deployable.",
    "Put them in db/migrations and run alembic upgrade head.",
    "In the imperative mood, under 72 characters.",
    "Through the GraphQL gateway, not REST.",
    "In /var/log/acme/worker.log on the VM.",
    "Not yet: Python stays pinned to 3.11 until the ML wheels support 3.12.",
    "In Vault under secret/acme/prod, never in a .env file.",
    "At 02:00 UTC every night, when the nightly job rebuilds the search index.",
    "Prefer a dataclass inside the core package.",
    "In src/theme/tokens.ts.",
    "Run pytest -n 4 locally.",
    "The Platform team's PagerDuty rotation.",
    "PostgreSQL 16 with pgvector.",
    "It reads them from LaunchDarkly.",
    "Two approvals under payments/.",
    "On the c5.xlarge runner.",
    "Semicolons: finance opens the CSV in Excel.",
    "No: rebase only your own branches, never force-push shared ones.",
]
CHANGES = {
    3: "Change of plan: we now keep the API versioned under /v3, and /v1 may be retired",
    7: "We moved the database migrations to migrations/sql and apply them with dbmate up",
    11: "We upgraded the ML wheels, so Python is now pinned to 3.12",
    15: "The design system colours moved to packages/ui/tokens.css",
    19: "The mobile app now reads feature flags from Unleash instead of LaunchDarkly",
    23: "Force-pushing to shared branches is now allowed with --force-with-lease",
}
