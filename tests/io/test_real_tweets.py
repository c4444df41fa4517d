"""rules/fsd.epl on tweets in the Twitter API layout (tests/data/real_tweets.jsonl, written
by tests/data/make_real_tweets.py): nothing is dead-lettered and the first stories are the
hand-checkable ones (each story's first tweet and the one-off tweets, never a paraphrase)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent.parent
TWEETS = ROOT / "tests" / "data" / "real_tweets.jsonl"


def test_fsd_finds_first_stories_in_twitter_api_json(tmp_path: Path) -> None:
    tweets = [json.loads(line) for line in TWEETS.read_text(encoding="utf-8").splitlines()]
    assert len(tweets) == 296
    assert all(isinstance(t["user"], dict) and "ts" not in t and "created_at" in t
               for t in tweets)  # the real layout, not the generator's
    expected = [t["id"] for t in tweets if t["expect_first"]]
    paraphrases = [t["id"] for t in tweets if not t["expect_first"]]
    assert len(paraphrases) == 166

    out, dead = tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "cep.cli", "run", str(ROOT / "rules" / "fsd.epl"),
         "--input", str(TWEETS), "--runner", "local", "--output", str(out),
         "--dead-letter", str(dead)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not dead.exists(), dead.read_text()
    assert f"cep: {len(tweets)} events" in proc.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == expected
    by_id = {t["id"]: t for t in tweets}
    assert all(r["text"] == by_id[r["id"]]["text"] for r in rows)
