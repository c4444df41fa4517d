"""User functions on Spark's Python workers: what travels with a run's tasks so that
every worker registers the functions its rules call before it evaluates a rule.

A function registered with ``cep.engine.functions.register_udf`` lives in the process
that registered it; a Spark worker is another process. The driver describes each
function the rules call by where it is defined (:class:`UdfSpec`: its module and
qualified name, its types), sends the modules' files the way PySpark ships code
(``SparkContext.addPyFile``: ``cep.spark.jvm.session.ship_udf_files``), and each task calls
:func:`install_udfs` first: it imports the modules (a module that registers its
functions at its top level, as a ``cep run --udf FILE.py`` file does, registers them
there) and registers each function again from its spec, for functions registered from
elsewhere. Nothing is unpickled: the worker imports code the user named.

This module imports only the standard library at its top, since the stateful
processor that carries a :class:`UdfShipment` must stay cheap to unpickle
(``cep/spark/engines/processor.py``).
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# cep's own packages reach executors in its code archive (``cep.spark.jvm.session``)
OWN_PACKAGES = ("cep", "grammar", "splitter", "migration")


class UdfShipError(Exception):
    """A function the rules call that Spark's workers could not get (one line)."""


@dataclass(frozen=True)
class UdfSpec:
    """A user function as a worker finds it again: by module and qualified name."""

    name: str
    module: str
    qualname: str
    arg_types: tuple[str, ...]
    result_type: str
    vectorized: bool


@dataclass(frozen=True)
class UdfShipment:
    """The user functions a run's rules call, and the files (a module's ``.py`` or a
    package's directory) their modules need shipped to the executors."""

    functions: tuple[UdfSpec, ...] = ()
    files: tuple[str, ...] = ()
    timeout: float | None = None  # a call's limit (None: the process's, udf_isolation)


def called_functions(tree: Any) -> set[str]:
    """The names of the functions the rules of ``tree`` (a compiled module) call."""
    from grammar import ir

    found: set[str] = set()
    stack = [tree]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ir.Func):
            found.add(node.name.lower())
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))
        elif isinstance(node, tuple | list | set | frozenset):
            stack.extend(node)
        elif isinstance(node, dict):
            stack.extend(node.values())
    return found


def shipment_for(tree: Any) -> UdfShipment:
    """What Spark's workers need of the user functions ``tree``'s rules call; refuses
    a function they cannot import (defined in ``__main__`` or in a notebook)."""
    from cep.engine.functions import FUNCTIONS, UserFunction

    specs, files = [], []
    for name in sorted(called_functions(tree)):
        fn = FUNCTIONS.get(name)
        if not isinstance(fn, UserFunction):
            continue
        module = getattr(fn.fn, "__module__", None)
        if module is None or module == "__main__" or module not in sys.modules:
            raise UdfShipError(
                f"function {name}() is defined in {module or 'no module'}, which Spark's "
                "workers cannot import: define it in a file and pass it with --udf FILE.py "
                "(compile_rules(..., udf=[FILE.py]) from Python)")
        specs.append(UdfSpec(name, module, getattr(fn.fn, "__qualname__", ""),
                             fn.arg_types, fn.returns, fn.vectorized))
        shipped = module_files(module)
        if shipped is not None and shipped not in files:
            files.append(shipped)
    return UdfShipment(tuple(specs), tuple(files))


def module_files(module: str) -> str | None:
    """What to ship for ``module``: its top-level module's file, or its top-level
    package's directory; None for cep's own code and what is installed (site-packages,
    the standard library), which workers import as the driver does."""
    top = module.split(".")[0]
    if top in OWN_PACKAGES:
        return None
    loaded = sys.modules.get(top)
    package = list(getattr(loaded, "__path__", []))  # a (namespace) package's directory
    origin = package[0] if package else getattr(loaded, "__file__", None)
    if origin is None:
        return None
    path = Path(origin).resolve()
    installed = {sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib")}
    if any(path.is_relative_to(Path(p).resolve()) for p in installed):
        return None
    return str(path)


_INSTALLED: set[UdfShipment] = set()  # what this worker process has registered


def install_udfs(shipment: UdfShipment | None) -> None:
    """Register the shipment's functions in this process (once per process): import
    each function's module, then register the function from its spec where its name
    resolves (a lambda registered at a module's top level is registered by the import),
    and set this process's limit per call (``cep.engine.udf_isolation``)."""
    if shipment is not None and shipment.timeout is not None:
        from cep.engine.udf_isolation import configure

        configure(shipment.timeout)  # functions a change deploys later get it too
    if not shipment or not shipment.functions or shipment in _INSTALLED:
        return
    from cep.engine.functions import FUNCTIONS, UserFunction, register_udf

    for spec in shipment.functions:
        try:
            module = importlib.import_module(spec.module)
        except Exception as err:
            raise UdfShipError(f"function {spec.name}(): its module {spec.module!r} cannot "
                               f"be imported on this worker: {type(err).__name__}: {err}"
                               ) from err
        fn = _resolve(module, spec.qualname)
        if fn is not None:
            register_udf(spec.name, fn, list(spec.arg_types), spec.result_type,
                         vectorized=spec.vectorized)
        elif not isinstance(FUNCTIONS.get(spec.name), UserFunction):
            raise UdfShipError(f"function {spec.name}(): importing {spec.module!r} did not "
                               f"register it, and {spec.qualname!r} is not a name there")
    _INSTALLED.add(shipment)


def _resolve(module: Any, qualname: str) -> Any:
    """``module``'s attribute at the dotted ``qualname`` (None for ``<lambda>``,
    ``<locals>`` or a name the module does not have)."""
    target = module
    for part in qualname.split("."):
        target = getattr(target, part, None)
        if target is None or part.startswith("<"):
            return None
    return target if callable(target) else None
