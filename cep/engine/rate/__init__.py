"""Output rate limiting: ``OUTPUT [ALL|FIRST|LAST|SNAPSHOT] EVERY n EVENTS | t``.

* ``limit``: the operator wrapper every rate-limited rule runs through (``RateLimited``);
* ``state``: the rows each key holds until its interval ends;
* ``intervals``: when each key's intervals end and which rows they release.

May import the engine's core and ``grammar``; never another operator family.
"""
