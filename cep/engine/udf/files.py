"""``--udf FILE.py``: a user's file of functions, imported so that its top level
registers them (``cep.engine.functions.register_udf``) before rules are compiled.

Imported on the driver, so the checker knows the functions' signatures; on Spark the
same files reach every Python worker (``cep.engine.udf.shipment``). The file is a
module named after its stem (``funcs.py`` is ``funcs``), which is how the workers
import it from what ``addPyFile`` shipped. Any failure is one line naming the file
(:class:`UdfFileError`): no such file, a name that is not a module name, a module of
that name imported from elsewhere, or the exception its import raised, with its line.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from cep.engine.functions import FUNCTIONS


class UdfFileError(Exception):
    """A ``--udf`` file that cannot be used (one line)."""


@dataclass(frozen=True)
class UdfFile:
    """A loaded file: its path, the module it became and the functions it registered."""

    path: Path
    module: str
    functions: tuple[str, ...]


def load_udf_files(paths: list[Path] | list[str]) -> list[UdfFile]:
    """Import each file as a module (in order); what each registered."""
    loaded, names = [], set()
    for raw in paths:
        path = Path(raw)
        name = path.stem
        if name in names:
            raise UdfFileError(f"{path}: another --udf file is also named {name}.py; "
                               "rename one (the workers import each as its own module)")
        names.add(name)
        loaded.append(load_udf_file(path))
    return loaded


def load_udf_file(path: Path, module_name: str | None = None) -> UdfFile:
    """Import one file as the module named after its stem (or ``module_name``)."""
    if not path.is_file():
        raise UdfFileError(f"{path}: no such file" if not path.exists()
                           else f"{path}: not a file")
    name = module_name or path.stem
    if path.suffix != ".py" or not name.isidentifier():
        raise UdfFileError(f"{path}: a --udf file is a Python module: NAME.py, NAME an "
                           "identifier")
    resolved = path.resolve()
    existing = sys.modules.get(name)
    where = getattr(existing, "__file__", None)
    if existing is not None and (where is None or Path(where).resolve() != resolved):
        raise UdfFileError(f"{path}: a module named {name!r} is already imported "
                           f"(from {where or 'built in'}); rename the file")
    spec = importlib.util.spec_from_file_location(name, resolved)
    assert spec is not None and spec.loader is not None  # a .py file always has one
    module = importlib.util.module_from_spec(spec)
    before = dict(FUNCTIONS)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # the user's code: said in one line
        if existing is None:
            del sys.modules[name]
        else:
            sys.modules[name] = existing
        raise UdfFileError(f"{path}:{_line(err, resolved)}: importing it raised "
                           f"{type(err).__name__}: {err}") from None
    registered = tuple(n for n, f in FUNCTIONS.items() if before.get(n) is not f)
    return UdfFile(path, name, registered)


def _line(err: Exception, path: Path) -> int:
    """The line of ``path`` where the import failed (the last frame in the file)."""
    if isinstance(err, SyntaxError) and err.lineno is not None:
        return err.lineno
    lines = [frame.lineno for frame in traceback.extract_tb(err.__traceback__)
             if Path(frame.filename).resolve() == path and frame.lineno is not None]
    return lines[-1] if lines else 1
