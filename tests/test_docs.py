"""The documentation says only what is true of the tree it ships with.

README.md and docs/*.md cite files, modules, commands and options; the code cites
sections of docs/. These tests read both, without running anything heavy: every path and
module the docs name exists, every ``cep`` command line they show uses a command and
options the command line has, every ``docs/….md#anchor`` the code cites is a heading,
the layers drawn in docs/architecture.md are the imports of ``cep/``, the README stays a
landing page, and docs/performance.md is what bench/performance_page.py writes from
bench/results/.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import re
import shlex
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 220
# Pages another branch writes: a link to one is checked once the page exists.
PENDING: set[str] = set()
# cep's code: the ``cep`` package and the three beside it that the project card names
CODE = ("cep", "grammar", "splitter", "migration")
REPO_PATH = re.compile(r"(?<![\w./~$-])((?:cep|grammar|splitter|migration|tests|bench|rules|docs"
                       r"|\.ci)/[\w./*\-]*[\w*/])")
MODULE = re.compile(r"(?<![\w./-])(?:cep|grammar|splitter|migration)(?:\.(?!py\b)\w+)+")
UNIT = re.compile(r"(?<![\w./-])((?:cep|grammar|splitter|migration)/[\w/.]*)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def prose(text: str) -> str:
    """The text outside fenced code blocks."""
    return FENCE.sub("", text)


@cache
def anchors(doc: Path) -> frozenset[str]:
    """GitHub's anchors of a Markdown file's headings."""
    out = set()
    for line in prose(doc.read_text(encoding="utf-8")).splitlines():
        if match := re.match(r"#{1,6}\s+(.*)", line):
            title = match.group(1).strip().lower().replace("`", "")
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return frozenset(out)


def test_readme_is_a_landing_page() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines"


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_links_resolve(doc: Path) -> None:
    broken = []
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            if file.is_relative_to(ROOT) and rel(file) in PENDING:
                continue
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    assert not broken, f"{rel(doc)} links to what is not there: {broken}"


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_paths_exist(doc: Path) -> None:
    missing = []
    for path in REPO_PATH.findall(doc.read_text(encoding="utf-8")):
        path = path.rstrip("/") if not path.endswith("*/") else path
        if path in PENDING or re.search(r"/[A-Z]+\.\w+$", path):
            continue  # a page still to come, or a placeholder (bench/results/NAME.json)
        found = ([p for p in ROOT.glob(path)] if "*" in path else
                 [ROOT / path] if (ROOT / path).exists() else [])
        if not found:
            missing.append(path)
    assert not missing, f"{rel(doc)} names paths that do not exist: {missing}"


def _module_file(parts: list[str]) -> Path | None:
    """The source file of module ``<package>.<parts>`` of ``CODE`` (``cep.rules`` is the
    rules/ folder)."""
    base = ROOT / "rules" if parts[:2] == ["cep", "rules"] else ROOT / parts[0]
    rest = parts[2:] if parts[:2] == ["cep", "rules"] else parts[1:]
    path = base.joinpath(*rest)
    for candidate in (path.with_suffix(".py") if rest else None, path / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _resolves(dotted: str) -> bool:
    """A module of cep, or a name defined or imported in the longest module prefix."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        source = _module_file(parts[:n])
        if source is None:
            continue
        rest = parts[n:]
        return not rest or re.search(rf"\b{re.escape(rest[0])}\b",
                                     source.read_text(encoding="utf-8")) is not None
    return False


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_modules_exist(doc: Path) -> None:
    unknown = [m for m in set(MODULE.findall(doc.read_text(encoding="utf-8")))
               if not _resolves(m.rstrip("."))]
    assert not unknown, f"{rel(doc)} names modules or names that do not exist: {unknown}"


# ------------------------------------------------------------------ command lines


@cache
def command_options() -> dict[str, set[str]]:
    """Each command's option strings, read from the source of its module and of the
    command-line modules it imports (not by importing them: that loads Spark)."""
    from cep.cli.dispatch import COMMANDS

    cli = ROOT / "cep" / "cli"

    def options_of(module: str, seen: set[str]) -> set[str]:
        if module in seen:
            return set()
        seen.add(module)
        tree = ast.parse((cli / f"{module.rsplit('.', 1)[1]}.py").read_text(encoding="utf-8"))
        found = {"-h", "--help"}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "add_argument"):
                found |= {a.value for a in node.args
                          if isinstance(a, ast.Constant) and str(a.value).startswith("-")}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cep.cli."):
                found |= options_of(node.module, seen)
        return found

    return {c.name: options_of(c.module, set()) for c in COMMANDS}


def command_lines(text: str) -> list[str]:
    """``cep …`` lines of shell code blocks (continuations joined, comments cut) and
    inline code spans that start with ``cep ``."""
    lines = []
    for lang, body in FENCE.findall(text):
        if lang not in ("", "bash", "sh", "console", "shell"):
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line.startswith("cep "):
                lines.append(line)
    lines += [" ".join(s.split()) for s in SPAN.findall(prose(text))
              if s.split()[:1] == ["cep"]]
    return lines


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_command_lines_use_real_options(doc: Path) -> None:
    options = command_options()
    wrong = []
    for line in command_lines(doc.read_text(encoding="utf-8")):
        words = shlex.split(line.replace("…", " "), posix=True)
        if len(words) < 2 or not re.fullmatch(r"[a-z]+", words[1]):
            continue  # `cep` alone, or a placeholder such as COMMAND
        if words[1] not in options:
            wrong.append(f"{line!r}: no command {words[1]!r}")
            continue
        for word in words[2:]:
            flag = word.split("=", 1)[0]
            if flag.startswith("-") and flag != "-" and flag not in options[words[1]]:
                wrong.append(f"{line!r}: cep {words[1]} has no {flag}")
    assert not wrong, "\n".join(wrong)


# ------------------------------------------------------------------ citations in code


def our_code() -> list[Path]:
    """The Python files of cep's code, tests/ and bench/, without hidden folders: a
    virtualenv such as bench/.flink-venv (``bash bench/flink_env.sh``) is someone else's."""
    return [path for folder in (*CODE, "tests", "bench") for path in (ROOT / folder).rglob("*.py")
            if not any(part.startswith(".") for part in path.relative_to(ROOT).parts)]


def test_code_cites_headings_that_exist() -> None:
    cited = re.compile(r"docs/([\w-]+\.md)#([\w-]+)")
    wrong = []
    for path in our_code():
        for page, anchor in cited.findall(path.read_text(encoding="utf-8")):
            doc = ROOT / "docs" / page
            if not doc.exists() or anchor not in anchors(doc):
                wrong.append(f"{rel(path)}: docs/{page}#{anchor}")
    assert not wrong, f"citations of sections that do not exist: {wrong}"


def test_code_cites_docs_not_documents_outside_the_tree() -> None:
    """Sections of the README moved to docs/, and the design document is
    docs/architecture.md: the code cites those (the README's commands it may name)."""
    stale = re.compile(r"DESIGN §|README_DRAFT|README[ ,]+[(\"]?[A-Z]|the README\b(?!'s)"
                       r"|see README")
    found = [rel(p) for p in our_code()
             if p != Path(__file__) and stale.search(p.read_text(encoding="utf-8"))]
    assert not found, f"cite docs/ instead: {found}"


# ------------------------------------------------------------------ the layers


def _unit(name: str) -> str:
    """A part as the layer picture and table spell it (``splitter/policies/``), without the
    slash that marks a folder."""
    return name.rstrip("/")


def _units() -> list[str]:
    """The parts of cep's code that docs/architecture.md's layer table names."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    return [_unit(u) for u in re.findall(r"^\| `([\w/.]+)` \|", text, re.M)
            if UNIT.fullmatch(u)]


def _unit_of(path: str, units: list[str]) -> str | None:
    """The most specific part a module (``cep/spark/inputs/source.py``) belongs to."""
    best = [u for u in units if path == u or path.startswith(u.rstrip("/") + "/")]
    return max(best, key=len) if best else None


@cache
def imports_by_unit() -> dict[str, set[str]]:
    """Which parts each part imports, lazy imports inside functions included."""
    units = _units()
    out: dict[str, set[str]] = {u: set() for u in units}
    for file in (path for package in CODE for path in (ROOT / package).rglob("*.py")):
        source = rel(file)
        unit = _unit_of(source, units)
        assert unit is not None, f"{source} belongs to no part of docs/architecture.md#layers"
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = ([f"{node.module}.{a.name}" for a in node.names]
                         if node.module in CODE else [node.module])
            else:
                continue
            for name in names:
                if name == "cep" or name.split(".")[0] not in CODE:
                    continue
                target = name.replace(".", "/")
                target_unit = (_unit_of(target + ".py", units) or _unit_of(target, units)
                               or _unit_of(target + "/__init__.py", units))
                if target_unit and target_unit != unit:
                    out[unit].add(target_unit)
    return out


def test_layer_table_lists_what_each_part_imports() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    allowed = {_unit(m.group(1)): {_unit(u) for u in re.findall(r"`([\w/.]+)`", m.group(2))
                                   if UNIT.fullmatch(u)}
               for m in re.finditer(r"^\| `([\w/.]+)` \|[^|]*\|([^|]*)\|", text, re.M)
               if UNIT.fullmatch(m.group(1))}
    extra = {unit: sorted(got - allowed[unit])
             for unit, got in imports_by_unit().items() if got - allowed[unit]}
    assert not extra, f"imports the layer table of docs/architecture.md does not list: {extra}"


def test_layer_picture_points_down() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1]
    picture = FENCE.search(section)
    assert picture is not None
    rows = [[_unit(u) for u in UNIT.findall(line)] for line in picture.group(2).splitlines()]
    rows = [row for row in rows if row]
    level = {unit: i for i, row in enumerate(rows) for unit in row}
    assert set(level) == set(_units()), "the picture and the table name different parts"
    upward = [f"{unit} imports {target}" for unit, targets in imports_by_unit().items()
              for target in targets if level[target] <= level[unit]]
    assert not upward, f"imports that do not point down the picture: {upward}"


# ------------------------------------------------------------------ performance page


@cache
def performance_page():
    """bench/performance_page.py, loaded as a module (bench/ is no package)."""
    spec = importlib.util.spec_from_file_location(
        "performance_page", ROOT / "bench" / "performance_page.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = generator  # its dataclasses look their module up
    spec.loader.exec_module(generator)
    return generator


def test_performance_page_is_generated_from_the_results() -> None:
    generator = performance_page()
    written = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert written == generator.page(), (
        "docs/performance.md differs from bench/results/: run python bench/performance_page.py")


def test_performance_page_says_not_recorded_rather_than_guessing(tmp_path: Path) -> None:
    generator = performance_page()
    (tmp_path / "cli.json").write_text('{"cep --help": {"median_s": 0.5}}')
    (tmp_path / "new-bench.json").write_text(
        '{"meta": {"date": "2027-01-02T03:04:05+00:00", "machine": "m1"}, "rate": 12.5}')
    (tmp_path / "broken.json").write_text("{")
    text = generator.page(tmp_path)
    assert "From `bench/results/cli.json`. Measured: not recorded; machine: not recorded." in text
    assert "Measured: 2027-01-02 03:04:05; machine: m1." in text
    assert "| `rate` | 12.500 |" in text
    assert "`bench/results/broken.json` could not be read (JSONDecodeError)." in text
    assert fnmatch.fnmatch(text.splitlines()[0], "# Performance")
