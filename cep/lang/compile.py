"""Rule file → checked IR in one call: read, parse, check."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cep.lang.check import compile_module
from cep.lang.errors import RuleError
from cep.lang.ir import CompiledModule
from cep.lang.parser import parse


def compile_text(text: str, source_name: str = "<rule>",
                 overrides: Mapping[str, str] | None = None) -> CompiledModule:
    """Parse and check rule text; every problem is a located :class:`RuleError`."""
    return compile_module(parse(text, source_name), overrides)


def compile_file(path: str | Path, overrides: Mapping[str, str] | None = None
                 ) -> CompiledModule:
    """Compile a ``.epl`` file (UTF-8)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise RuleError(f"no such rule file: {path}", source_name=str(path)) from None
    except UnicodeDecodeError as err:
        raise RuleError(f"the rule file is not UTF-8 text (byte {err.start})",
                        source_name=str(path)) from None
    except OSError as err:
        raise RuleError(f"cannot read the rule file: {err.strerror}",
                        source_name=str(path)) from None
    return compile_text(text, str(path), overrides)
