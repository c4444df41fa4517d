"""Rule file → checked IR in one call: read, parse, check."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from grammar.check import compile_module
from grammar.errors import RuleError
from grammar.ir import CompiledModule
from grammar.parser import MAX_TEXT_CHARS, parse


def compile_text(text: str, source_name: str = "<rule>",
                 overrides: Mapping[str, str] | None = None,
                 state_ttl_us: int | None = None) -> CompiledModule:
    """Parse and check rule text; every problem is a located :class:`RuleError`.

    ``state_ttl_us``: the state time-to-live (see :func:`grammar.check.compile_module`).
    """
    return compile_module(parse(text, source_name), overrides, state_ttl_us)


def bundled_rule(path: Path) -> Path | None:
    """The rule file shipped with cep that ``rules/<name>.epl`` names, when no such file
    exists where the user runs: so ``cep run rules/fsd.epl --input tweets`` works from
    any directory, not only from a clone of the repository."""
    if path.parent != Path("rules"):
        return None
    candidate = Path(str(resources.files("cep.rules").joinpath(path.name)))
    return candidate if candidate.is_file() else None


def compile_file(path: str | Path, overrides: Mapping[str, str] | None = None,
                 state_ttl_us: int | None = None) -> CompiledModule:
    """Compile a ``.epl`` file (UTF-8). A file larger than the parser accepts is refused
    by its size, before it is read."""
    path = Path(path)
    if not path.exists():
        path = bundled_rule(path) or path
    try:
        size = path.stat().st_size
        if size > 4 * MAX_TEXT_CHARS:  # UTF-8 takes at most 4 bytes a character
            raise RuleError(f"the rule file is too large ({size} bytes; the limit is "
                            f"{MAX_TEXT_CHARS} characters)", source_name=str(path))
        text = path.read_bytes().decode("utf-8-sig")  # an editor's byte-order mark is no rule
    except FileNotFoundError:
        raise RuleError(f"no such rule file: {path}", source_name=str(path)) from None
    except UnicodeDecodeError as err:
        raise RuleError(f"the rule file is not UTF-8 text (byte {err.start})",
                        source_name=str(path)) from None
    except OSError as err:
        raise RuleError(f"cannot read the rule file: {err.strerror}",
                        source_name=str(path)) from None
    return compile_text(text, str(path), overrides, state_ttl_us)
