"""The one error of the live view the command line prints as a single line."""

from __future__ import annotations


class UiError(Exception):
    """The live view cannot start: a port in use, an address that is not one, no run at
    the path given. The message is one line that says what to do."""
