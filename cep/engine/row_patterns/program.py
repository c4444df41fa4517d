"""A MATCH_RECOGNIZE row pattern as a program of instructions (Trino's matcher program).

Instructions: ``("var", V, excluded)`` consumes one row that satisfies V's DEFINE
(``excluded``: inside ``{- -}``, left out of ALL ROWS PER MATCH's output);
``("split", a, b)`` continues at a first and at b second (the preferred branch is
first: a greedy quantifier's loop body, a reluctant one's exit, an alternation's left
branch); ``("jmp", a)``; ``("start",)`` (``^``) and ``("end",)`` (``$``) hold only at
the partition's first row and at its end; ``("match",)`` ends a match. SQL:2016's
preferment between two matches from one start is the order of their paths through the
splits, so a matcher that keeps its threads in that order and takes the first thread
to reach ``match`` finds the preferred match (``cep.engine.row_patterns.interpreter``).

Besides the instructions, the program knows for every instruction what of a thread's
labels a later DEFINE can still read (:attr:`Program.reads`): two threads of one start
at one instruction are interchangeable (the less preferred can be dropped) only when
they agree on it (Trino's thread equivalence).
"""

from __future__ import annotations

from dataclasses import dataclass

from grammar import ir

Instruction = tuple
#: what tells threads apart: variables whose last row a DEFINE reads, variables all of
#: whose rows it may read, and whether it reads the labels themselves (CLASSIFIER)
Reads = tuple[tuple[str, ...], tuple[str, ...], bool]


@dataclass(frozen=True)
class Program:
    """The instructions of one row pattern and what the matcher derives from them."""

    ops: tuple[Instruction, ...]
    #: per instruction, the ``var``/``match`` instructions reachable without a row, in
    #: preference order (each once; no path through an empty optional iteration)
    closures: tuple[tuple[int, ...], ...]
    #: per instruction, what the DEFINEs reachable from it read of a thread's labels:
    #: what tells two threads at that instruction apart
    reads: tuple[Reads, ...]
    #: per instruction, the variable of a ``var`` ("" elsewhere: at an ``end`` a thread
    #: waits, and no row passes it)
    vars: tuple[str, ...] = ()
    #: whether the pattern has ``^`` or ``$`` (their closures depend on the row)
    anchored: bool = False

    def is_match(self, pc: int) -> bool:
        return self.ops[pc][0] == "match"

    def var(self, pc: int) -> str:
        return self.vars[pc]

    def excluded(self, pc: int) -> bool:
        return self.ops[pc][2]

    def stops(self, pc: int, at_start: bool, at_end: bool = False) -> list[int]:
        """The ``var``/``match``/``end`` instructions a thread at ``pc`` reaches without a
        row: the static closure, unless anchors make it depend on where the thread is."""
        if not self.anchored:
            return list(self.closures[pc])
        return closure(self.ops, pc, at_start, at_end)


def build_program(pattern: ir.RPattern, define_reads: dict[str, Reads]) -> Program:
    """The program of ``pattern``; ``define_reads`` says what each variable's DEFINE
    reads of a thread's labels."""
    ops = compile_program(pattern)
    closures = tuple(tuple(closure(ops, pc)) for pc in range(len(ops)))
    reads = []
    for pc in range(len(ops)):
        last: set[str] = set()
        every: set[str] = set()
        whole = False
        for var in reachable_vars(ops, pc):
            var_last, var_every, var_whole = define_reads.get(var, ((), (), False))
            last.update(var_last)
            every.update(var_every)
            whole = whole or var_whole
        reads.append((tuple(sorted(last - every)), tuple(sorted(every)), whole))
    return Program(tuple(ops), closures, tuple(reads),
                   tuple(op[1] if op[0] == "var" else "" for op in ops),
                   any(op[0] in ("start", "end") for op in ops))


def compile_program(pattern: ir.RPattern) -> list[Instruction]:
    """The instructions of a row pattern, ending with ``("match",)``."""
    prog: list[Instruction | None] = []

    def split(a: int, b: int, greedy: bool, ends: int) -> Instruction:
        """An optional iteration's split: its body from ``a``, its way round ``b``;
        ``ends`` is where the body ends (a path that reaches it from the split without
        a row matched an empty iteration, which :func:`closure` drops)."""
        return ("split", a, b, ends) if greedy else ("split", b, a, ends)

    def emit(node: ir.RPattern, excluded: bool = False) -> None:
        if node.kind == "var":
            prog.append(("var", node.name, excluded))
        elif node.kind in ("start", "end"):
            prog.append((node.kind,))
        elif node.kind == "exclude":
            emit(node.items[0], True)
        elif node.kind == "seq":
            for item in node.items:
                emit(item, excluded)
        elif node.kind == "alt":
            jumps = []
            for item in node.items[:-1]:
                at = len(prog)
                prog.append(None)
                emit(item, excluded)
                jumps.append(len(prog))
                prog.append(None)
                prog[at] = ("split", at + 1, len(prog))
            emit(node.items[-1], excluded)
            for at in jumps:
                prog[at] = ("jmp", len(prog))
        else:
            item = node.items[0]
            for _ in range(node.low):
                emit(item, excluded)
            if node.high is None:
                loop = len(prog)
                prog.append(None)
                emit(item, excluded)
                back = len(prog)
                prog.append(("jmp", loop))
                prog[loop] = split(loop + 1, len(prog), node.greedy, back)
            else:
                holes = []
                for _ in range(node.high - node.low):
                    holes.append(len(prog))
                    prog.append(None)
                    emit(item, excluded)
                for i, at in enumerate(holes):
                    ends = holes[i + 1] if i + 1 < len(holes) else len(prog)
                    prog[at] = split(at + 1, len(prog), node.greedy, ends)

    emit(pattern)
    prog.append(("match",))
    return prog  # type: ignore[return-value]


def closure(prog: list[Instruction] | tuple[Instruction, ...], pc: int,
            at_start: bool | None = None, at_end: bool = False) -> list[int]:
    """The ``var``/``match`` instructions reachable from ``pc`` without a row, in
    preference order (depth first, the first branch of a split before the second), each
    once.

    An iteration beyond a quantifier's minimum may not match an empty sequence of rows
    (as in Trino, and the brute-force reading in the tests): a path that enters such an
    iteration's body here (no row consumed since) and reaches its end is dropped, so
    ``((A)*?)?`` prefers its one non-empty iteration, ``A``, to the empty match.

    Anchors: with ``at_start`` None (the static closure) ``start`` is a stop of its
    own, else it passes where ``at_start`` (a thread at the partition's first row) and
    ends the path elsewhere; ``end`` is a stop (a thread waits there for the input's
    end) unless ``at_end``, where it passes."""
    out: list[int] = []
    found: set[int] = set()
    seen: set[tuple[int, frozenset[int]]] = set()
    stack: list[tuple[int, frozenset[int]]] = [(pc, frozenset())]
    while stack:
        at, entered = stack.pop()  # entered: the ends of the bodies this path is in
        if at in entered:
            continue  # an empty iteration
        if (at, entered) in seen:
            continue
        seen.add((at, entered))
        ins = prog[at]
        if ins[0] == "jmp":
            stack.append((ins[1], entered))
        elif ins[0] == "split":
            if len(ins) > 3:  # an optional iteration: its body is the branch at + 1
                body = entered | {ins[3]}
                first, second = ((ins[1], body if ins[1] == at + 1 else entered),
                                 (ins[2], body if ins[2] == at + 1 else entered))
            else:
                first, second = (ins[1], entered), (ins[2], entered)
            stack.extend((second, first))  # the first branch is popped first
        elif ins[0] == "start" and at_start is not None:
            if at_start:
                stack.append((at + 1, entered))
        elif ins[0] == "end" and at_end:
            stack.append((at + 1, entered))
        elif at not in found:
            found.add(at)
            out.append(at)
    return out


def reachable_vars(prog: list[Instruction], pc: int) -> set[str]:
    """The variables some path from ``pc`` to the end can still match."""
    found: set[str] = set()
    seen: set[int] = set()
    stack = [pc]
    while stack:
        at = stack.pop()
        if at in seen:
            continue
        seen.add(at)
        ins = prog[at]
        if ins[0] == "var":
            found.add(ins[1])
            stack.append(at + 1)
        elif ins[0] == "jmp":
            stack.append(ins[1])
        elif ins[0] == "split":
            stack.extend((ins[1], ins[2]))
        elif ins[0] in ("start", "end"):
            stack.append(at + 1)
    return found
