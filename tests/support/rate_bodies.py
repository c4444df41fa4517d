"""Rules whose output the rate limiting tests limit: a window rule, a join and a
pattern, each with ``{}`` where the OUTPUT clause goes (schema
``S (k long, ts timestamp, v double, kind int)``)."""

BODIES = (
    "SELECT v, count(*) AS n FROM S#groupwin(k)#length(3) WHERE kind > 0 {}",
    "SELECT LE.v AS v, count(*) AS n FROM S#lastevent AS LE, S#groupwin(k)#length(4) AS TW "
    "WHERE LE.k = TW.k {}",
    "SELECT a.v AS av, b.v AS bv FROM PATTERN [every a=S(kind = 1) -> b=S(kind = 2) "
    "WITHIN 6 sec] PARTITION BY k {}",
)
