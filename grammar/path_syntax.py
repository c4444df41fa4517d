"""The syntax of a schema field's ``FROM`` paths: ``'user.screen_name'`` names the key
``screen_name`` inside the object at key ``user`` of a record.

The checker validates each path with :func:`split_path`; reading the values a path names
is the input layer's job (``cep.io.fieldpaths``). Keys holding a dot cannot be named.
"""

from __future__ import annotations


def split_path(text: str) -> tuple[str, ...]:
    """``'user.screen_name'`` → ``("user", "screen_name")``; ValueError if a key is empty."""
    keys = tuple(text.split("."))
    if not all(keys):
        raise ValueError(f"bad field path '{text}': keys separated by single dots, "
                         "none empty (e.g. 'user.screen_name')")
    return keys
