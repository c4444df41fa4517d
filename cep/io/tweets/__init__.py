"""The built-in ``tweets`` workload: a seeded synthetic tweet stream with first-story truth.

This package is the generator alone, apart from the readers and sinks of :mod:`cep.io`
that call it (``inputs.py``, ``inputlog.py``, ``kafka_produce.py``). Its modules, each
importing only those listed before it:

* ``world_cache.py``: a seed's world kept in the user's cache, so new processes load it;
* ``world.py``: what a seed fixes: vocabulary, users, topics, MinHash values;
* ``layout.py``: which story each row belongs to, a block of rows at a time;
* ``render.py``: the compiled writer of a block's texts (numba);
* ``text.py``: story seeds, paraphrases, token slots, LSH keys;
* ``plan.py``: specs (``tweets:n=…``) and plans: arguments and the block clock;
* ``blocks.py``: one block's tweets drawn from its layout, before and after rendering;
* ``default_order.py``: the stream in event-time order, with its per-process memo;
* ``zipf_periodic.py``: the phases of the DLB paper's second experiment and its order;
* ``generator.py``: ranges of rows, whole streams, the ground truth's side file;
* ``calibration.py``: key grouping's load RSTD per window (the benches' and tests' measure).

Of cep's code it imports ``cep.engine`` (the text functions' hashes, a sorted unique),
``cep.user_cache`` (where the world is kept) and, for ``calibration.py`` only,
``migration.hashing`` and ``splitter.policies.stats``; besides those, numpy, pandas,
pyarrow and numba. The design follows.

First Story Detection (``rules/fsd.epl``) needs tweets in which stories are born and
spread, so that "is this the first tweet of its story?" has a known answer, and the DLB
paper's second experiment needs the same kind of tweets re-ordered so that the popularity
of the LSH keys swings between balanced and skewed. Nothing is downloaded: every word,
user and story comes from seeded generators, so a seed gives the same rows in every
process (no Python ``hash()``, no global random state).

Ranges (what the Spark source calls)
    :func:`~cep.io.tweets.plan.tweets_plan` turns a spec
    (``tweets:n=30000000,mode=zipf-periodic``) into a small JSON-serialisable plan: the
    arguments and the event time of every block boundary (blocks of
    :data:`~cep.io.tweets.layout.BLOCK` = 10,000 rows; 59 kB of JSON at n = 30M).
    :func:`~cep.io.tweets.generator.tweets_range` gives rows ``lo..hi-1`` and their
    first-story flags.
    Everything random about block ``b`` comes from generators seeded ``(seed, purpose,
    b)``, and a story's attributes from a counter-based hash of ``(seed, story number)``
    (:func:`cep.io.tweets.world.hash_uniform`); no state flows from block to block. A range
    draws the blocks it overlaps whole and keeps its rows, so any cut of ``[0, n)``
    concatenates to the same rows bit for bit;
    :func:`~cep.io.tweets.generator.generate_tweets` is the range ``[0, n)``. A block of
    the default stream also needs the births (not the texts) of the 361 blocks before it,
    because a story tweets for at most 3.6M rows. Measured
    (``bench/bench_tweets.py``, warm process, 2-core machine under a load of 5-7): a
    100k-row range of a 30M plan takes 0.95 s at ``lo = 0`` and 0.91 s at ``lo = 29.9M``
    (peak traced memory 99 MB both); zipf-periodic 0.8-1.0 s and 39 MB. Ranges that start
    in the first 3.6M rows also replay which stories the blocks before them used (to
    know whether a story born before the stream has appeared yet): at most ~3x, 2.7 s
    and 193 MB at ``lo = 3.5M``.

Vocabulary
    8,000 pronounceable words (1-4 consonant-vowel syllables, some closed by n/r/s/l/k),
    ranked shortest first (frequent words are short) and drawn from a Zipf-like law of
    exponent 0.8 over the ranks (the power law ``x**-0.8`` on ``[1, 8001)``, floored,
    sampled by inverting its CDF in closed form). The exponent is below 1 on purpose:
    with exponent 1 two unrelated 14-word tweets of one language average 0.14 cosine
    similarity from the common words alone, close to the FSD rule's τ = 0.2; at 0.8 they
    average 0.036. Each language (``en`` 72%, ``es`` 10%, ``fr`` 7%, ``pt`` 6%, ``de``
    5%) ranks the same words in its own seeded order (by length plus noise, so frequent
    words stay short), so languages differ in their frequent words. Users are word+digits
    handles (``n/10`` of them, 1,000-200,000), active with the same kind of law, exponent 1.

Stories (:mod:`cep.io.tweets.layout`)
    In every block, ``S ~ Binomial(10000, 0.25)`` stories are born at uniform positions:
    their seed tweets, so about a quarter of the rows are first stories. A story is a
    one-off with probability 0.7, otherwise it plans ``1 + Z`` tweets, ``Z`` Zipf(1.9)
    truncated at 20,000. Its later tweets follow it after exponential delays of mean
    ``20,000 rows · sqrt(size) · LogNormal(0, 0.5)`` clipped to [10k, 3.6M] rows, cut at
    6 means and at 3.6M rows (lifetimes count rows, 10 s to 1 h at 1,000 tweets/s, so
    the look-back is bounded whatever the rate). The other ``10000 - S`` rows of the
    block are later tweets of the stories alive in it, shared out by a multinomial whose
    weights are each story's planned later tweets times the mass of its delay law inside
    the block, at uniform positions within that part of the block; rows are ordered by
    position (a seed precedes its later tweets). Every block thus has exactly 10,000 rows
    (row -> block is arithmetic) and realised sizes follow the planned ones up to the
    normalisation. Stories born in the 361 blocks before the stream are included (their
    seeds are not in it), so the stream starts in steady state; the first tweet in the
    stream of such a story is its first story. Event time: block ``b`` lasts
    ``Gamma(10000, 1/rate)`` seconds (drawn in the plan), its rows are uniform order
    statistics inside it, i.e. Poisson arrivals at ``rate`` (1,000/s by default: 2.95M
    tweets ≈ 49 min).
    Trending stories: every 90 blocks (15 min at 1,000/s) the block's first-born story
    trends. It plans 20-35% of the rows for the next 90 blocks (a delay law ten times
    longer than that span, so nearly flat; about 18% once normalised) and every one of
    its tweets carries its hashtag, the next of the 4 "hot words" (see Key skew).
    At 2.95M tweets: 25.2% of the tweets are first stories, the largest story (a trend)
    has 191,758 tweets.

Key skew (default order)
    With key grouping over N engines, a window's engine loads have RSTD about
    ``sqrt((N - 1) · Σ p_k²)`` for key shares ``p_k``: over 5 engines, one key carrying a
    share ``p`` alone gives about ``2p``. Real tweets give 40-44.5% (the DLB paper) because
    a few tokens are both frequent and low under the MinHash permutations: a tweet that
    holds one takes its key from it. Zipf words with random hashes give ~4.5% (the
    previous version of this generator). Here the hot words are the 4 vocabulary words
    whose two MinHash values are lowest (fillers excluded), used only as trending
    hashtags: in 95% of a trend's tweets the hashtag attains both minima, so about 17%
    of the traffic shares one key while the trend lasts, and KG RSTD per 10,000-tweet
    window is 38% (median; p10-p90 31-46%, 292 windows at 2.95M), 40% at 30k. Rejected:
    (1) a topic word (a low-hash word per topic) in half of the seed texts gave 34% but
    cut FSD recall from 0.92 to 0.68 at 20k: unrelated same-topic tweets then share a
    key and a word, and their maximum similarity over the rule's 500-tweet window
    passes τ; (2) trending stories without a low-hash hashtag gave ~15%, because only
    about half of a story's paraphrases keep its seed's key. A trend's key window holds
    the trend's own tweets, so FSD quality does not suffer: reference runner
    (``cep run rules/fsd.epl --input tweets:n=... --runner local``) precision/recall
    0.747/0.931 at 20k and 0.687/0.783 at 200k (previous version 0.728/0.887 and
    0.635/0.734).

Paraphrase
    A later tweet of a story is a retweet (20%: ``RT @author: <seed text>``) or a
    paraphrase of the seed: 1-3 words dropped or replaced by fresh Zipf words, an adjacent
    pair swapped (40%), 0-2 frequent filler words, maybe a leading ``@mention``. Any tweet
    may end with the story's ``#hashtag`` (one of its seed words; 30%, a trend's always),
    capitalise its first word, carry a comma or end in ``!``/``?``/``...``. Sigils, case
    and punctuation vanish under the engine's ``[a-z0-9]+`` tokenisation. Measured with
    ``similarity`` (n = 30k, the test): two tweets of one story average 0.80; tweets of
    different stories average 0.022 (0.021 at 200k, 99th percentile 0.18).

Columns (typed like :func:`cep.io.readers.ranges.read_range` output for the FSD schema)
    ``seq`` 0..n-1, ``id`` (unique, Twitter's snowflake layout ``ms << 22 | worker << 12 |
    counter``: time-ordered to the millisecond, not within one; the counter is ``seq mod
    4096``, unique because one millisecond's rows are consecutive and fewer than 4096),
    ``ts`` (µs since the epoch, non-decreasing, from 2026-01-01T00:00Z), ``user``,
    ``lang``, ``text``, ``retweets`` (heavy-tailed: Zipf(2.1) minus one, plus the story's
    planned size on its seed tweet) and ``topic`` (16 topics, Zipf). Strings are Python
    ``str`` in object columns; the frame's index is ``lo..hi-1``.

Modes
    ``default``: the stream in event-time order, as generated.
    ``zipf-periodic``: the DLB paper's second experiment. Every block of 10,000 rows
    re-orders its own pool: 10,000 tweets laid out like a default block but
    self-contained (its stories are born and done inside it, no trend), each with its key
    ``lsh_bucket(text, buckets)``. The rows keep the default clock; the Zipf exponent is
    0.2 for the first 5 min of each 15 min of event time (counted from
    2026-01-01T00:00Z) and 1.5 for the other 10. Every row draws a key rank from the
    current (exact, discrete) Zipf law over the keys in the pool, ranked in one order for
    the whole stream (by frequency in a reference pool, the never-emitted pool of block
    -1, most frequent first, ties in a seeded order: the hot keys of a skewed phase stay
    hot for its 10 min and have many tweets to emit), and the ``j``-th use of a key in
    the block takes the pool's ``(j mod count)``-th tweet of that key, in pool order:
    when a key's pool tweets run out they come again (a repost, same text, user and
    story, fresh ``seq``/``id``/``ts``). The first story of a story is its first use in the block
    (pool stories never leave their block): 12.4% of the tweets at 2.95M. Pools are per
    block so that a range needs only its own blocks; the price is more reposts than a
    whole-stream pool (the top key of a skewed phase takes about 40% of a block).

Ground truth
    ``tweets_range`` returns each row's first-story flag; ``generate_tweets`` numbers
    stories by first appearance (``story_of``) and lists ``first_story_ids``, the ids of
    the flagged rows in stream order.
    :func:`~cep.io.tweets.generator.write_ground_truth` writes them as JSON lines, the
    side file for FSD verification.

Keys
    :attr:`~cep.io.tweets.generator.GeneratedTweets.keys` is every tweet's
    ``lsh_bucket(text, buckets)``, computed without tokenising the texts: the bucket
    hashes the token set's two MinHash minima, and each minimum is the least of its
    tokens' own values, so it is a row-wise ``min``
    over the token slots' precomputed values (:func:`cep.io.tweets.text.slot_keys`;
    equality with the UDF is tested).

Calibration (``bench/bench_tweets.py``: n = 2.95M, seed 7, 4,096 buckets, key grouping
``migration.hashing.kg_engine`` over 5 engines, RSTD = 100·std/mean of the engines' loads
per window of 10,000 tweets inside one phase;
:func:`~cep.io.tweets.calibration.kg_window_rstd`)
    ``zipf-periodic``: median 3.9% in the 0.2 phases (p10-p90 2.2-5.6%, 113 windows) and
    71.3% in the 1.5 phases (p10-p90 64.6-79.2%, 179 windows); the paper measured ~3% and
    ~77%. Both depend on which engines the top-ranked keys hash to, i.e. on the seed: at
    n = 900k, seeds 1, 2, 3, 7, 11 give 2.7-4.1% and 70-88%. The 0.2 phases stay above
    the paper's 3% because a 10,000-tweet pool holds only ~2,500 of the 4,096 keys. At
    the test's setting (n = 60k, 60 tweets/s, 3,000-tweet windows) 5.6% and 76.1%.
    ``default`` order: 38.5% and 37.1% median under the same clock (no swing; see Key
    skew). The largest key holds 6.3% of the default stream (17% while its trend lasts)
    and 23.8% of the zipf-periodic one.

Speed (one run each on the shared 2-core development machine, load average 5-7)
    2.95M tweets: 20.4 s in ``default`` mode (6.9 µs per tweet, texts and keys included)
    and 10.6 s in ``zipf-periodic`` (it renders each pool tweet it emits, not the whole
    pool); peak resident memory 1.3 GB and 1.2 GB for the
    whole stream (a range's is bounded, above). Rendering the texts (joining and
    splitting strings) is the largest part of a range, so a block renders only the rows
    the range keeps.
"""
