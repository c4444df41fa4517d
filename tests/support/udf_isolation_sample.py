"""User functions that misbehave on one record each, for the isolation tests
(``cep.engine.udf_isolation``): a scalar function and a vectorised one, one of which
sleeps for ever on one record while the other calls ``os._exit(1)`` on another. The
oracle is the same file with both misbehaviours replaced by a ``raise`` (a function
that fails the well-known way, run in the job's process with ``udf_timeout=0``): the
records it fails on are the same, so every event must be equal and the dead letters
the same records, with their own reasons."""

from __future__ import annotations

import itertools

TEMPLATE = '''
import os
import time

import numpy as np

from cep.engine.functions import register_udf


def tag(ident, text):
    if ident == {scalar_id}:
        {scalar_bad}
    return text.split()[0] + "-" + str(ident % 97)


def vtag(ident, retweets):
    if (ident == {vector_id}).any():
        {vector_bad}
    return retweets * 2 + ident % 7


register_udf("tag", tag, ["long", "string"], "string")
register_udf("vtag", vtag, ["long", "int"], "long", vectorized=True)
'''

HANG = "time.sleep(10**6)"
EXIT = "os._exit(1)"
RAISE = 'raise RuntimeError("bad record")'

RULES = """
CREATE SCHEMA Tweet (id long, ts timestamp, user string, lang string, text string,
                     retweets int, topic string) TIMESTAMP ts;

@Name('tagged')
SELECT id, tag(id, text) AS t, vtag(id, retweets) AS v FROM Tweet(lang = 'en');

@Name('per_topic')
SELECT topic, count(*) AS n, max(vtag(id, retweets)) AS best, count(tag(id, user)) AS named
FROM Tweet(lang = 'en')#groupwin(topic)#length(20)
GROUP BY topic HAVING count(*) >= 2;
"""

_COUNTER = itertools.count()


def udf_file(directory, scalar_id: int, scalar_bad: str, vector_id: int,
             vector_bad: str):
    """A file of ``tag`` and ``vtag`` under a module name no other file has."""
    path = directory / f"udfs_isolated_{next(_COUNTER)}_{abs(hash(str(directory)))}.py"
    path.write_text(TEMPLATE.format(scalar_id=scalar_id, scalar_bad=scalar_bad,
                                    vector_id=vector_id, vector_bad=vector_bad))
    return path


def reasons(misbehaviour: str, name: str, limit: float) -> str:
    """The reason of a dead letter for ``name`` misbehaving that way."""
    if misbehaviour == HANG:
        return f"{name}() timed out after {limit:g}s"
    if misbehaviour == EXIT:
        return f"{name}() ended its process (exit code 1)"
    return f"{name}() raised RuntimeError: bad record"
