"""The syntax of timestamp formats a schema field may declare (``ts timestamp FORMAT '...'``).

``epoch_s`` / ``epoch_ms`` / ``epoch_us``: numbers (or numeric strings) counting seconds,
milliseconds or microseconds since the Unix epoch; ``iso``: ISO-8601 strings only; any
other text is a pattern. A pattern holding ``%`` is a C ``strptime`` pattern (directives
``%a %A %b %B %d %H %I %j %m %M %p %S %f %y %Y %z %%``); otherwise it is a Java
``DateTimeFormatter`` pattern as Esper and Flink users write them, translated here to
the strptime equivalent: ``'EEE MMM dd HH:mm:ss Z yyyy'`` (Twitter's ``created_at``,
``Wed Oct 10 20:19:24 +0000 2018``), ``'yyyy-MM-dd HH:mm:ss.SSS'``, ``"dd/MM/yyyy hh:mm
a"``... Letters with no strptime equivalent (time-zone names ``z``, week fields, eras)
are refused when the rule is checked, not when data is read (``cep.io.timeformat``
reads the values).
"""

from __future__ import annotations

import re

EPOCH_SCALE = {"epoch_s": 1_000_000, "epoch_ms": 1_000, "epoch_us": 1}  # µs per unit
KEYWORDS = (*EPOCH_SCALE, "iso")

_STRPTIME_DIRECTIVES = set("aAbBdHIjmMpSfyYz%")
# Java DateTimeFormatter letter runs → strptime (keyed by letter, then run length; 0 = any)
_JAVA = {
    "y": {2: "%y", 0: "%Y"},
    "u": {2: "%y", 0: "%Y"},
    "M": {1: "%m", 2: "%m", 3: "%b", 0: "%B"},
    "L": {1: "%m", 2: "%m", 3: "%b", 0: "%B"},
    "d": {1: "%d", 2: "%d"},
    "D": {1: "%j", 2: "%j", 3: "%j"},
    "H": {1: "%H", 2: "%H"},
    "h": {1: "%I", 2: "%I"},
    "m": {1: "%M", 2: "%M"},
    "s": {1: "%S", 2: "%S"},
    "S": {0: "%f"},
    "n": {0: "%f"},
    "a": {1: "%p"},
    "E": {1: "%a", 2: "%a", 3: "%a", 0: "%A"},
    "Z": {1: "%z", 2: "%z", 3: "%z"},
    "X": {1: "%z", 2: "%z", 3: "%z"},
    "x": {1: "%z", 2: "%z", 3: "%z"},
}


def to_strptime(text: str) -> str | None:
    """The strptime pattern of a FORMAT text (None for the keywords); ValueError with a
    sentence saying what is wrong, for the rule checker to show at the text."""
    if text in KEYWORDS:
        return None
    if not text.strip():
        raise ValueError("empty timestamp format")
    if "%" in text:
        _check_strptime(text)
        return text
    return _from_java(text)


def _check_strptime(text: str) -> None:
    i = 0
    while i < len(text):
        if text[i] == "%":
            directive = text[i + 1 : i + 2]
            if directive not in _STRPTIME_DIRECTIVES:
                raise ValueError(
                    f"unsupported strptime directive '%{directive}'; use "
                    + " ".join(f"%{d}" for d in sorted(_STRPTIME_DIRECTIVES))
                )
            i += 2
        else:
            i += 1


def _from_java(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "'":  # quoted literal text; '' is a quote
            close = text.find("'", i + 1)
            if close < 0:
                raise ValueError("unterminated quoted text in the timestamp pattern")
            out.append("'" if close == i + 1 else text[i + 1 : close].replace("%", "%%"))
            i = close + 1
            continue
        if not char.isalpha():
            out.append("%%" if char == "%" else char)
            i += 1
            continue
        run = len(re.match(f"{re.escape(char)}+", text[i:]).group())
        forms = _JAVA.get(char)
        form = forms.get(run, forms.get(0)) if forms else None
        if form is None:
            raise ValueError(
                f"pattern letter '{char * run}' is not supported in timestamp formats "
                "(use y M d H h m s S a E Z X, or a strptime pattern with %)"
            )
        out.append(form)
        i += run
    return "".join(out)
