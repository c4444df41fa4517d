"""A running job's change log in its run directory: the rules deployed and undeployed
while it runs, and the batch at which each change applied.

``DIR/rules/`` holds JSON files only, each written whole under a temporary name and then
linked or renamed into place, so a reader never sees half a file and a crash never
leaves one:

* ``start.json``: what the job's rules were compiled from (``ir.RuleSource``: file name,
  text, ``--set`` values, state time-to-live), written when the run directory is made;
* ``change-000001.json``, ``change-000002.json``, …: one per ``cep deploy`` (the file's
  name and text) or ``cep undeploy`` (the names); the number is the rule set version the
  change makes, claimed with a hard link that fails if the number is taken, so two
  commands at once never write the same one; a change file is never rewritten;
* ``udf/<digest>/<NAME>.py``: a copy of each ``--udf`` file a deploy brought (the
  change names it), so that every process that reads the change log, on any node, can
  import the functions before it compiles the rules that call them;
* ``applied.json``: written by the planner (``cep.spark.rule_versions``): for each version
  the batch that first ran it and the seq of that batch's first input event, and the
  changes it refused, with the reason.

The rule set of version n is the start file with changes 1..n applied, each refused
change skipped (``grammar.rule_set.versions``): the same in every process that reads the
same files, which is how the planner, the input tasks and the engines agree on the rules
of a batch without passing modules around.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cep.engine.udf.files import UdfFileError, load_udf_file
from grammar import ir
from grammar.errors import RuleError
from grammar.rule_set import (
    Change,
    ChangeRefused,
    Version,
    check_change,
    compose,
    rule_changes,
    rule_names,
    versions,
)

CHANGES_DIR = "rules"
_CHANGE = re.compile(r"^change-(\d{6})\.json$")


class ChangeLogError(Exception):
    """The run directory holds no change log cep can use; the message says why."""


@dataclass(frozen=True)
class Applied:
    """Version ``version`` ran from batch ``batch`` on, whose first input event is
    ``first_seq``."""

    version: int
    batch: int
    first_seq: int


def write_json(path: Path, value: object) -> None:
    """Write a JSON file whole (:func:`write_bytes`)."""
    write_bytes(path, (json.dumps(value, indent=1) + "\n").encode())


def write_bytes(path: Path, data: bytes) -> None:
    """Write a file whole: a temporary file in the same directory, fsynced, then renamed
    over ``path`` (a reader sees the old file or the new, never a part)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.fchmod(fd, 0o644)  # executors, maybe another user on a shared directory, read it
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class ChangeLog:
    """The change log of the run in ``workdir``."""

    def __init__(self, workdir: str | Path) -> None:
        self.workdir = Path(workdir)
        self.dir = self.workdir / CHANGES_DIR

    # ---- the start

    def begin(self, module: ir.CompiledModule) -> None:
        """Record what the job's rules were compiled from, when it starts. A restart
        after changes must start from the same rules: the versions are composed on
        them."""
        origin = module.origin
        if origin is None:  # built without text (a test's module): it takes no changes
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / "start.json"
        value = {"source_name": origin.source_name, "text": origin.text,
                 "set": dict(origin.overrides), "state_ttl_us": origin.state_ttl_us}
        if path.exists() and self.numbers():
            held = json.loads(path.read_text())
            if (held.get("text"), held.get("set")) != (value["text"], value["set"]):
                raise ChangeLogError(
                    f"the run in {self.workdir} started from other rules (or --set values) "
                    f"and has rule changes on them: resume it with the rules it started "
                    f"with ({held.get('source_name')}), or use a new checkpoint directory")
            return
        write_json(path, value)

    def origin(self) -> ir.RuleSource:
        """The rules the job started from."""
        path = self.dir / "start.json"
        try:
            held = json.loads(path.read_text())
            return ir.RuleSource(str(held["source_name"]), str(held["text"]),
                                 tuple(sorted((str(k), str(v))
                                              for k, v in held["set"].items())),
                                 held.get("state_ttl_us"))
        except FileNotFoundError:
            raise ChangeLogError(f"{self.workdir} is not the run directory of a cep job "
                                 "(no rules/start.json): give cep run's --checkpoint "
                                 "directory") from None
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise ChangeLogError(f"{path} is damaged ({err})") from None

    # ---- changes

    def numbers(self) -> list[int]:
        """The numbers of the changes written, in order."""
        if not self.dir.is_dir():
            return []
        return sorted(int(m.group(1)) for name in os.listdir(self.dir)
                      if (m := _CHANGE.match(name)))

    def changes(self, upto: int | None = None) -> list[Change]:
        """Changes 1..``upto`` (all by default), read back."""
        out = []
        for number in self.numbers():
            if upto is not None and number > upto:
                break
            path = self.dir / f"change-{number:06d}.json"
            try:
                raw = json.loads(path.read_text())
                out.append(Change(number, str(raw["kind"]), str(raw.get("source_name", "")),
                                  str(raw.get("text", "")),
                                  tuple(str(n) for n in raw.get("names", ()))))
            except (ValueError, KeyError, TypeError) as err:
                raise ChangeLogError(f"{path} is damaged ({err})") from None
        return out

    def append(self, change: dict) -> int:
        """Write a change (``kind`` and its fields) as the next number; the number."""
        return append_numbered(self.dir, "change", self.numbers,
                               json.dumps({**change, "written": time.time()}, indent=1))

    def udf_files(self, upto: int | None = None) -> list[Path]:
        """The copies of the ``--udf`` files changes 1..``upto`` brought, in order."""
        files = []
        for number in self.numbers():
            if upto is not None and number > upto:
                break
            path = self.dir / f"change-{number:06d}.json"
            try:
                names = json.loads(path.read_text()).get("udf", [])
            except ValueError as err:
                raise ChangeLogError(f"{path} is damaged ({err})") from None
            files.extend(self.dir / str(name) for name in names)
        return files

    def keep_udf_file(self, path: Path) -> str:
        """Copy a deploy's ``--udf`` file into the log (by its content's digest, once);
        its name relative to the log."""
        data = path.read_bytes()
        relative = f"udf/{hashlib.sha256(data).hexdigest()[:16]}/{path.name}"
        target = self.dir / relative
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(target, data)
        return relative

    # ---- what applied

    def applied(self) -> tuple[list[Applied], dict[int, str]]:
        """The versions applied (batch and first seq of each), and the refused changes
        with their reasons."""
        path = self.dir / "applied.json"
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError:
            return [], {}
        except ValueError as err:
            raise ChangeLogError(f"{path} is damaged ({err})") from None
        return ([Applied(int(a["version"]), int(a["batch"]), int(a["first_seq"]))
                 for a in raw.get("applied", [])],
                {int(k): str(v) for k, v in raw.get("refused", {}).items()})

    def write_applied(self, applied: list[Applied], refused: dict[int, str]) -> None:
        write_json(self.dir / "applied.json", {
            "applied": [{"version": a.version, "batch": a.batch, "first_seq": a.first_seq}
                        for a in applied],
            "refused": {str(k): v for k, v in sorted(refused.items())}})


def append_numbered(folder: Path, stem: str, numbers: Callable[[], list[int]],
                    text: str) -> int:
    """Write ``text`` as ``folder/<stem>-NNNNNN.json``, NNNNNN the number after the last
    of ``numbers()``, fsynced under a temporary name and claimed with a hard link that
    fails if the number is taken: two commands at once never write the same number,
    and a reader never sees half a file. Returns the number."""
    folder.mkdir(parents=True, exist_ok=True)
    while True:
        number = (numbers() or [0])[-1] + 1
        fd, tmp = tempfile.mkstemp(prefix=f".{stem}.", suffix=".tmp", dir=folder)
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w") as out:
            out.write(text + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, folder / f"{stem}-{number:06d}.json")  # fails if taken
            return number
        except FileExistsError:
            continue  # another command took it: the next one
        finally:
            os.unlink(tmp)


_LOADED_UDF: set[Path] = set()  # the change log's function files this process imported


def load_change_udfs(log: ChangeLog, upto: int | None = None) -> None:
    """Import the function files changes 1..``upto`` brought, in order and each once per
    process, so that their functions are registered before the rules that call them
    compile. Each copy is a module of its own (named by its digest), never in the way of
    a module of the file's name the process imported already (the run's ``--udf`` file
    of that name, an earlier version of it): a function a later change defines again
    replaces the earlier definition for every rule, in every process alike."""
    for path in log.udf_files(upto):
        resolved = path.resolve()
        if resolved in _LOADED_UDF:
            continue
        try:
            load_udf_file(resolved, f"cep_deployed_{resolved.parent.name}_{resolved.stem}")
        except UdfFileError as err:
            raise ChangeLogError(str(err)) from None
        _LOADED_UDF.add(resolved)


def version_at(applied: list[Applied], batch: int) -> int:
    """The rule set version batch ``batch`` ran (0 before any change applied)."""
    found = 0
    for entry in applied:
        if entry.batch <= batch:
            found = entry.version
    return found


# (run directory, version) -> the versions 0..version: composed once per process
_VERSIONS: dict[tuple[str, int], list[Version]] = {}


@dataclass(frozen=True)
class RuleBook:
    """The rule set versions of one job, as any of its processes reads them: version 0
    is the module the job started with; later versions are composed from the change log
    (and cached: a process compiles each version once). Light to pickle: the run
    directory and the start module."""

    workdir: str
    start: ir.CompiledModule

    def versions(self, upto: int | None = None) -> list[Version]:
        """Versions 0..``upto`` (every change written, by default)."""
        log = ChangeLog(self.workdir)
        last = upto if upto is not None else (log.numbers() or [0])[-1]
        if last == 0:
            return [Version(0, self.start)]
        cached = _VERSIONS.get((self.workdir, last))
        if cached is None:
            base = self.start
            if self.start.origin is None or self.start.origin.text != log.origin().text:
                raise ChangeLogError("the job's rules are not those its change log starts "
                                     "from")
            load_change_udfs(log, last)
            cached = versions(base, log.changes(last))
            if len(cached) != last + 1:
                raise ChangeLogError(f"the change log of {self.workdir} lacks changes "
                                     f"before {last}")
            _VERSIONS[(self.workdir, last)] = cached
        return cached

    def module(self, version: int) -> ir.CompiledModule:
        """The rules of ``version``."""
        return self.start if version == 0 else self.versions(version)[version].module

    def latest(self) -> int:
        """The number of the last change written (0: none)."""
        return (ChangeLog(self.workdir).numbers() or [0])[-1]

    @classmethod
    def of_run(cls, workdir: str | Path) -> RuleBook:
        """The rule book of a run directory, its start compiled from what it recorded
        (for commands that are not the job: ``cep deploy``, ``cep rules``)."""
        from grammar.compile import compile_text  # not in Spark's planning processes

        origin = ChangeLog(workdir).origin()
        start = compile_text(origin.text, origin.source_name, dict(origin.overrides),
                             origin.state_ttl_us)
        return cls(str(workdir), start)


def running_rules(book: RuleBook, applied: list[Applied]) -> list[dict]:
    """Every rule of the newest applied version: its name, the version its present
    definition came with, the batch and first seq it started at, and how it started
    (``start``, ``added``, ``replaced``, or ``compatible``: a new definition that kept
    the state)."""
    latest = applied[-1].version if applied else 0
    every = book.versions(latest)
    since = {name: {"version": 0, "batch": 0, "first_seq": 0, "started": "start"}
             for name in rule_names(book.start)}
    before = book.start
    for entry in applied:
        module = every[entry.version].module
        for name, kind in rule_changes(before, module).items():
            if kind == "removed":
                since.pop(name, None)
            elif kind != "kept":
                since[name] = {"version": entry.version, "batch": entry.batch,
                               "first_seq": entry.first_seq, "started": kind}
        before = module
    return [{"rule": name, **since[name]} for name in rule_names(before)]


def deploy(workdir: str | Path, source_name: str, text: str,
           udf: list[Path] | list[str] | tuple = ()) -> tuple[int, dict[str, str]]:
    """Write a deploy change of a rule file's text to a job's change log, once it checks
    against the job's newest rule set: its number and what it does to each rule. A rule
    error (with the file, line and column) or :class:`ChangeRefused` leaves the log as it
    was. ``udf``: function files the rules call (``cep deploy … --udf``), imported by
    the caller already; the log keeps a copy of each for the job's processes."""
    change = {"kind": "deploy", "source_name": source_name, "text": text}
    if udf:
        change["udf_files"] = [Path(p) for p in udf]
    return _write(workdir, change)


def undeploy(workdir: str | Path, names: list[str]) -> tuple[int, dict[str, str]]:
    """Write an undeploy change of rules by name, once it checks (as :func:`deploy`)."""
    return _write(workdir, {"kind": "undeploy", "names": list(names)})


def _write(workdir: str | Path, change: dict) -> tuple[int, dict[str, str]]:
    book = RuleBook.of_run(workdir)
    every = book.versions()
    applied = [c for v, c in zip(every[1:], ChangeLog(workdir).changes(), strict=True)
               if v.refused is None]
    trial = Change(len(every), change["kind"], change.get("source_name", ""),
                   change.get("text", ""), tuple(change.get("names", ())))
    assert book.start.origin is not None
    module = compose(book.start.origin, [*applied, trial])
    check_change(every[-1].module, module)
    kinds = {name: kind for name, kind in rule_changes(every[-1].module, module).items()
             if kind != "kept"}
    if not kinds:
        raise ChangeRefused("the change changes no rule")
    log = ChangeLog(workdir)
    files = change.pop("udf_files", [])
    if files:
        change["udf"] = [log.keep_udf_file(p) for p in files]
    return log.append(change), kinds


__all__ = ["Applied", "ChangeLog", "ChangeLogError", "ChangeRefused", "RuleBook",
           "RuleError", "deploy", "running_rules", "undeploy", "version_at", "write_json"]
