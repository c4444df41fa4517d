"""A user's file of functions, as ``cep run --udf`` takes it (tests copy this text into
files of their own names): a scalar function, a vectorised one, and one of each that
raises on some records."""

UDF_TEXT = '''
import numpy as np
from cep.engine.functions import register_udf


def shout(text):
    if "wow" in text:
        raise ValueError("no shouting at " + text.split()[0])
    return text.upper() + "!"


def score(retweets):
    if (retweets == 42).any():
        raise ZeroDivisionError("42 retweets")
    return np.log1p(retweets) * 10


register_udf("shout", shout, ["string"], "string")
register_udf("score", score, ["int"], "double", vectorized=True)
register_udf("initial", lambda s: s[:1], ["string"], "string")
register_udf("twice", lambda x: x * 2, ["int"], "long", vectorized=True)
'''

RULES = """
CREATE SCHEMA Tweet (id long, ts timestamp, user string, lang string, text string,
                     retweets int, topic string) TIMESTAMP ts;

@Name('loud')
SELECT id, shout(text) AS loud, score(retweets) AS score, initial(user) AS u,
       twice(retweets) AS rt2
FROM Tweet(lang = 'en');

@Name('hot_topic')
SELECT topic, count(*) AS n, max(score(retweets)) AS best, max(twice(retweets)) AS top
FROM Tweet#groupwin(topic)#time(10 min)
GROUP BY topic HAVING count(*) >= 3;
"""

# the records of tests/data/tweets_small.jsonl the functions raise on: byte offset ->
# the reasons of their dead letters
FAILING = {
    504: {"shout() raised ValueError: no shouting at storm"},
    667: {"score() raised ZeroDivisionError: 42 retweets"},
    3698: {"shout() raised ValueError: no shouting at city"},
    4173: {"shout() raised ValueError: no shouting at local"},
    6877: {"shout() raised ValueError: no shouting at storm"},
    8069: {"shout() raised ValueError: no shouting at earthquake"},
    10553: {"score() raised ZeroDivisionError: 42 retweets",
            "shout() raised ValueError: no shouting at rain"},
    11557: {"shout() raised ValueError: no shouting at scientists"},
    12738: {"shout() raised ValueError: no shouting at new"},
}


def module_name(stem: str) -> str:
    """A ``--udf`` file's module name no other test (nor a rerun of the same one in this
    process) imports: ``stem`` and a random suffix (a file of a name already imported
    from another path is refused, cep.engine.udf.files)."""
    import uuid

    return f"{stem}_{uuid.uuid4().hex[:12]}"


def letters(path) -> dict[int, set[str]]:
    """A dead-letter file's udf_error letters: offset -> reasons."""
    import json
    from pathlib import Path

    found: dict[int, set[str]] = {}
    for line in Path(path).read_text().splitlines():
        entry = json.loads(line)
        assert entry["kind"] == "udf_error", entry
        found.setdefault(entry["offset"], set()).add(entry["reason"])
    return found
