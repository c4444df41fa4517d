"""Writes ``real_tweets.jsonl``: tweets in the Twitter API v1.1 layout, for rules/fsd.epl.

Run ``python tests/data/make_real_tweets.py`` to rewrite the file (deterministic). Each
line is a tweet as the API returns it (``created_at`` like ``Wed Oct 10 20:19:24 +0000
2018``, ``user`` an object with ``screen_name``, ``entities``, ``retweet_count``, ...).

The stories are hand-checkable: every story (and every one-off tweet) has words of its own,
so a story's first tweet is a first story, and its later paraphrases (the same words in
another order, with other case, punctuation and emoji) have the same token
set, hence the same LSH bucket and similarity 1.0: never first stories. Each tweet's
``expect_first`` field records that expectation (the rule does not read it).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

OUT = Path(__file__).parent / "real_tweets.jsonl"
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "si", "de", "gu", "pa", "ze", "bo",
             "fi", "ha", "ju", "ko", "le", "mo", "ni"]
DECOR = ["!", "!!", "?!", " 😮", " 🔥", ".", "...", ""]  # marks and emoji: no new tokens


def words(rng: random.Random, used: set[str], n: int) -> list[str]:
    """``n`` new pseudo-words (two or three syllables), none used before."""
    out = []
    while len(out) < n:
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 3))))
        if w not in used:
            used.add(w)
            out.append(w)
    return out


def paraphrase(rng: random.Random, story: list[str]) -> str:
    """The story's words in another order, case and punctuation: the same token set."""
    ws = story[:]
    rng.shuffle(ws)
    ws = [w.upper() if rng.random() < 0.15 else w.capitalize() if rng.random() < 0.3 else w
          for w in ws]
    cut = rng.randrange(1, len(ws))
    return " ".join(ws[:cut]) + rng.choice([", ", ": ", " - "]) + " ".join(ws[cut:]) + \
        rng.choice(DECOR)


def tweet(i: int, when: datetime, user: int, text: str, first: bool) -> dict:
    name = f"user_{user:03d}"
    return {
        "created_at": when.strftime("%a %b %d %H:%M:%S +0000 %Y"),
        "id": 1050118621198921700 + i,
        "id_str": str(1050118621198921700 + i),
        "text": text,
        "source": '<a href="http://twitter.com/download/android">Twitter for Android</a>',
        "truncated": False,
        "in_reply_to_status_id": None,
        "user": {"id": 9000 + user, "id_str": str(9000 + user), "name": name.title(),
                 "screen_name": name, "location": None, "followers_count": user * 7,
                 "verified": False, "created_at": "Mon Jan 05 10:00:00 +0000 2015"},
        "geo": None,
        "coordinates": None,
        "place": None,
        "entities": {"hashtags": [], "urls": [], "user_mentions": [], "symbols": []},
        "retweet_count": user % 13,
        "favorite_count": user % 29,
        "lang": "en",
        "timestamp_ms": str(int(when.timestamp() * 1000)),
        "expect_first": first,
    }


def main() -> None:
    rng = random.Random(2018)
    used: set[str] = set()
    stories = [words(rng, used, rng.randint(6, 10)) for _ in range(40)]
    # a story's first tweet, 2-6 paraphrases of it later, and one-off tweets in between
    events: list[tuple[float, str, bool]] = []
    for k, story in enumerate(stories):
        start = k * 10 + rng.random()
        events.append((start, " ".join(story).capitalize(), True))
        for _ in range(rng.randint(2, 6)):
            events.append((start + 1 + rng.random() * 120, paraphrase(rng, story), False))
    for _ in range(90):
        events.append((rng.random() * 500, " ".join(words(rng, used, rng.randint(5, 12))), True))
    events.sort()
    t0 = datetime(2018, 10, 10, 20, 0, 0, tzinfo=UTC)
    with OUT.open("w", encoding="utf-8") as fh:
        for i, (minute, text, first) in enumerate(events):
            when = t0 + timedelta(seconds=int(minute * 60))
            user = rng.randrange(200)
            fh.write(json.dumps(tweet(i, when, user, text, first), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
