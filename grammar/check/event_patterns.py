"""PATTERN rules: event patterns over tagged events (``every a=A -> b=B(b.x > a.x)``).

Tags name the events a pattern binds (``a=A``); a tag inside ``[n]`` is repeated and read
by index (``a[0].x``). A filter reads its own event and the tags bound before it. WITHIN
bounds the whole pattern in event time; ``timer:interval`` waits in event time too. An
``every`` whose operand can match more than once is refused (see
:func:`_refuse_growing_every`): its state would grow without bound.
"""

from __future__ import annotations

from grammar import ast, ir
from grammar.check.context import Context, refuse_clause, ttl_needs_time
from grammar.check.expressions import qualifiers_of
from grammar.check.scope import Scope
from grammar.check.select import columns
from grammar.errors import RuleError, did_you_mean


def pattern_rule(ctx: Context, stmt: ast.SelectStatement, name: str,
                 source: ast.PatternSource) -> ir.PatternRule:
    """The IR of a PATTERN rule, or a located RuleError."""
    root = source.pattern
    within_us: int | None = None
    if isinstance(root, ast.PatWithin):
        within_us = ctx.types.positive_duration_us(root.duration, "WITHIN")
        root = root.operand
    tags: dict[str, tuple[ir.StreamDef, bool]] = {}
    anonymous: dict[int, str] = {}
    _collect_tags(ctx, root, tags, anonymous, repeated=False)
    _refuse_growing_every(root)
    refuse_clause(stmt.group_by, "GROUP BY", "a pattern rule (use PARTITION BY)")
    if stmt.having is not None:
        raise RuleError("HAVING is not allowed in a pattern rule; use WHERE", stmt.having.pos)
    streams = tuple(dict.fromkeys(s.name for s, _ in tags.values()))
    key: str | None = None
    if stmt.partition_by:
        if len(stmt.partition_by) != 1:
            raise RuleError("PARTITION BY takes exactly one key field",
                            stmt.partition_by[1].pos)
        key_expr = stmt.partition_by[0]
        key = key_expr.name if isinstance(key_expr, ast.Name) else None
        if key is None:
            raise RuleError("PARTITION BY needs a field name", key_expr.pos)
        for s in streams:
            if ctx.streams[s].field_type(key) is None:
                raise RuleError(
                    f"stream '{s}' has no field '{key}' to partition by",
                    key_expr.pos,
                    hint=did_you_mean(key, dict(ctx.streams[s].fields)),
                )
    timer = _first_timer(root)
    for what, needed in (("WITHIN", within_us is not None),
                         ("timer:interval", timer is not None)):
        for s in streams if needed else ():
            if ctx.streams[s].timestamp is None:
                raise RuleError(
                    f"{what} needs event time, but stream '{s}' has no TIMESTAMP",
                    source.pos,
                )
    ttl_us = ctx.state_ttl_us if within_us is None else None
    if ttl_us is not None:
        ttl_needs_time([ctx.streams[s] for s in streams], source.pos, "a pattern without WITHIN")
    repeated = frozenset(t for t, (_, rep) in tags.items() if rep)
    quals = {t: (t, s) for t, (s, _) in tags.items()}
    scope = Scope(quals, tuple(quals), repeated=repeated)
    scope.aggregate_hint = "aggregate functions are not allowed in a pattern rule"
    node = _pattern_node(ctx, root, tags, anonymous, set(), repeated)
    where = ctx.types.optional_condition(stmt.where, scope, "WHERE")
    selected = columns(ctx, stmt.select, scope, star_qualifier=None, star_stream=None,
                       output=stmt.insert_into is None)
    return ir.PatternRule(
        name=name,
        pattern=node,
        within_us=within_us,
        streams=streams,
        tags=tuple(tags),
        repeated_tags=tuple(sorted(repeated)),
        where=where,
        columns=selected,
        key=key,
        ttl_us=ttl_us,
    )


def _collect_tags(
    ctx: Context, node: ast.Pattern, tags: dict[str, tuple[ir.StreamDef, bool]],
    anonymous: dict[int, str], repeated: bool,
) -> None:
    """Each tag's stream and whether it is repeated (inside ``[n]``), checked. An atom
    without a tag gets one of its own, ``_<n>``, kept in ``anonymous`` by the atom's id."""
    if isinstance(node, ast.PatAtom):
        stream = ctx.stream(node.stream, node.pos)
        tag = node.tag or anonymous.setdefault(id(node), f"_{len(tags)}")
        if tag in tags:
            raise RuleError(f"pattern tag '{tag}' is used twice", node.pos)
        if tag in ctx.streams:
            raise RuleError(f"pattern tag '{tag}' hides the stream of that name", node.pos)
        tags[tag] = (stream, repeated)
    elif isinstance(node, ast.PatRepeat):
        if node.high is None and node.until is None:
            raise RuleError(f"[{node.count}:] has no upper bound, so it needs 'until'",
                            node.pos, hint=f"e.g. [{node.count}:] b=B until c=C")
        if node.high is not None and node.high < max(node.count, 1):
            raise RuleError(f"a repetition range [{node.count}:{node.high}] is empty",
                            node.pos)
        _collect_tags(ctx, node.operand, tags, anonymous, repeated=True)
        if node.until is not None:
            _collect_tags(ctx, node.until, tags, anonymous, repeated)
    elif isinstance(node, ast.PatWithin):
        raise RuleError(
            "WITHIN applies to the whole pattern only",
            node.pos,
            hint="write PATTERN [ ... ] with WITHIN after the whole expression",
        )
    elif isinstance(node, ast.PatTimer):
        return
    elif isinstance(node, ast.PatNot | ast.PatEvery):
        _collect_tags(ctx, node.operand, tags, anonymous, repeated)
    else:
        _collect_tags(ctx, node.left, tags, anonymous, repeated)
        _collect_tags(ctx, node.right, tags, anonymous, repeated)


def _pattern_node(
    ctx: Context,
    node: ast.Pattern,
    tags: dict[str, tuple[ir.StreamDef, bool]],
    anonymous: dict[int, str],
    earlier: set[str],
    repeated: frozenset[str],
) -> ir.PNode:
    """Compile a pattern; ``earlier`` are tags bound before this node can match."""
    if isinstance(node, ast.PatAtom):
        tag = node.tag or anonymous[id(node)]
        stream = tags[tag][0]
        local = bound = None
        if node.filter is not None:
            quals = {stream.name: (tag, stream), tag: (tag, stream)}
            for t in earlier:
                quals[t] = (t, tags[t][0])
            scope = Scope(quals, (tag,), repeated=repeated & earlier)
            scope.aggregate_hint = "aggregate functions are not allowed in a pattern"
            cond = ctx.types.condition(node.filter, scope, "a pattern filter")
            if qualifiers_of(cond) <= {tag}:
                local = cond
            else:
                bound = cond
        return ir.PAtom(tag, stream.name, local, bound)
    if isinstance(node, ast.PatFollowedBy):
        left = _pattern_node(ctx, node.left, tags, anonymous, earlier, repeated)
        right_earlier = earlier | _tags_of(node.left)
        right = _pattern_node(ctx, node.right, tags, anonymous, right_earlier, repeated)
        return ir.PFollowedBy(left, right)
    if isinstance(node, ast.PatAnd | ast.PatOr):
        left = _pattern_node(ctx, node.left, tags, anonymous, earlier, repeated)
        right = _pattern_node(ctx, node.right, tags, anonymous, earlier, repeated)
        if isinstance(node, ast.PatOr):
            for side in (node.left, node.right):
                if isinstance(side, ast.PatNot):
                    raise RuleError("'not' is supported only as an operand of 'and'",
                                    side.pos)
            return ir.POr(left, right)
        if isinstance(node.left, ast.PatNot) and isinstance(node.right, ast.PatNot):
            raise RuleError("'and' needs at least one operand that is not 'not'", node.pos)
        return ir.PAnd(left, right)
    if isinstance(node, ast.PatTimer):
        return ir.PTimer(ctx.types.positive_duration_us(node.duration, "timer:interval"))
    if isinstance(node, ast.PatNot | ast.PatRepeat):
        timer = _first_timer(node)
        if timer is not None:
            raise RuleError("timer:interval is not supported inside 'not' or a repeat",
                            timer.pos,
                            hint="for a missed follow-up write a -> (timer:interval(T) "
                            "and not b)")
    if isinstance(node, ast.PatNot):
        return ir.PNot(_pattern_node(ctx, node.operand, tags, anonymous, earlier, repeated))
    if isinstance(node, ast.PatEvery):
        if isinstance(node.operand, ast.PatNot):
            raise RuleError("'every not ...' never matches", node.pos)
        if _starts_with_timer(node.operand):
            raise RuleError(
                "'every' over a pattern that starts with timer:interval would fire "
                "without events (a periodic timer is not supported)", node.pos,
                hint="start the repeated part with an event: every (a=A -> "
                "timer:interval(10 sec))",
            )
        return ir.PEvery(_pattern_node(ctx, node.operand, tags, anonymous, earlier, repeated))
    if isinstance(node, ast.PatRepeat):
        until = (_pattern_node(ctx, node.until, tags, anonymous, earlier, repeated)
                 if node.until is not None else None)
        operand = _pattern_node(ctx, node.operand, tags, anonymous, earlier, repeated)
        return ir.PRepeat(node.count, operand, node.high, until)
    raise RuleError("unsupported pattern expression", node.pos)


def _tags_of(node: ast.Pattern) -> set[str]:
    if isinstance(node, ast.PatAtom):
        return {node.tag} if node.tag else set()
    if isinstance(node, ast.PatTimer):
        return set()
    if isinstance(node, ast.PatNot):
        return set()  # a 'not' binds nothing usable later
    if isinstance(node, ast.PatRepeat) and node.until is not None:
        return _tags_of(node.operand) | _tags_of(node.until)
    if isinstance(node, ast.PatEvery | ast.PatRepeat | ast.PatWithin):
        return _tags_of(node.operand)
    return _tags_of(node.left) | _tags_of(node.right)


def _first_timer(node: ast.Pattern) -> ast.PatTimer | None:
    """The first ``timer:interval`` inside a pattern, if any."""
    if isinstance(node, ast.PatTimer):
        return node
    return next((t for t in map(_first_timer, ast.pattern_operands(node)) if t is not None),
                None)


def _starts_with_timer(node: ast.Pattern) -> bool:
    """Whether a pattern can complete before any event: it starts with a timer."""
    if isinstance(node, ast.PatTimer):
        return True
    if isinstance(node, ast.PatFollowedBy):
        return _starts_with_timer(node.left)
    if isinstance(node, ast.PatAnd | ast.PatOr):
        return _starts_with_timer(node.left) or _starts_with_timer(node.right)
    return isinstance(node, ast.PatEvery | ast.PatRepeat) and _starts_with_timer(node.operand)


def _refuse_growing_every(root: ast.Pattern) -> None:
    """Refuse an ``every x`` whose x can match more than once: its state has no bound.

    Such an ``every`` keeps each instance of x that matched (it may match again) and
    starts a fresh one besides (Esper's rule, see ``cep.engine.patterns.interpreter``),
    so each match adds an instance and none ever leaves: one that runs out of WITHIN or
    the state time-to-live is restarted, not dropped, so neither bounds it (``every
    every a`` doubles at each a). The operands of ``[n]`` and ``not`` are not searched:
    ``[n]`` ends at its n-th match and ``not`` at its first, which bounds whatever grows
    inside them.
    """
    node = _growing_every(root)
    if node is not None:
        raise RuleError(
            "'every' over a pattern that can match more than once (it contains 'every') "
            "gains an instance at each match and never drops one, even with WITHIN: its "
            "state grows without bound",
            node.pos,
            hint="'every every a' is not 'every a' (it doubles at each a): write 'every a'; "
            "for 'every (a -> every b)' write 'every a -> every b'",
        )


def _growing_every(node: ast.Pattern) -> ast.PatEvery | None:
    """The outermost ``every`` over a pattern that matches repeatedly, outside ``[n]`` and
    ``not`` (see `_refuse_growing_every`)."""
    if isinstance(node, ast.PatAtom | ast.PatRepeat | ast.PatNot | ast.PatTimer):
        return None
    if isinstance(node, ast.PatEvery):
        return node if _matches_repeatedly(node.operand) else _growing_every(node.operand)
    return _growing_every(node.left) or _growing_every(node.right)


def _matches_repeatedly(node: ast.Pattern) -> bool:
    """Whether one instance of the pattern can match more than once: it contains an
    ``every`` outside ``[n]`` and ``not``, which complete at most once themselves."""
    if isinstance(node, ast.PatEvery):
        return True
    if isinstance(node, ast.PatAtom | ast.PatRepeat | ast.PatNot | ast.PatTimer):
        return False
    return _matches_repeatedly(node.left) or _matches_repeatedly(node.right)
