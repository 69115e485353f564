WITH RECURSIVE scoped_run AS (  -- the captures MindSpore of their era shows with the Scope Layer merge (2.3+)
    SELECT rank, capture, ascend FROM {{ ref('int_scope_run') }} WHERE algorithm = 'scope_layer'
), op AS (  -- MindSpore's input: the CPU OP events, then (Ascend) the Ascend Hardware events
    SELECT o.rank, o.capture, 0 AS source, o.op_index AS source_order, o.start_ns, o.end_ns,
           string_split(o.op_name, '/')[:-2] AS path, o.op_name AS name
    FROM {{ ref('stg_host_op') }} o SEMI JOIN scoped_run r ON r.rank = o.rank AND r.capture = o.capture
    WHERE o.side = 'Host'
    UNION ALL  -- a task launched by a framework op takes the longer of its own scope and the op's (after its last ::)
    SELECT e.rank, e.capture, 1, NULL, e.start_ns, e.end_ns,
           CASE WHEN e.op_attribution = 'source'
                     AND len(string_split(string_split(e.op_name, '::')[-1], '/')) > len(string_split(e.name, '/'))
                THEN string_split(string_split(e.op_name, '::')[-1], '/')[:-2]
                ELSE string_split(e.name, '/')[:-2] END,
           e.name
    FROM {{ ref('int_device_exec') }} e SEMI JOIN scoped_run r ON r.rank = e.rank AND r.capture = e.capture AND r.ascend
), qualifying AS (  -- top scopes by plain prefix; an op without a scope (no '/') is skipped
    SELECT rank, capture, source, source_order, start_ns, end_ns, path,
           row_number() OVER (PARTITION BY rank, capture ORDER BY start_ns, source, source_order, name) AS seq
    FROM op
    WHERE (starts_with(name, 'Default') OR starts_with(name, 'Gradients') OR starts_with(name, 'recompute_Default'))
      AND len(path) > 0
), overlap_flag AS (  -- an op starting at or after every earlier end opens a cluster: it is always kept
    SELECT *, coalesce(start_ns >= max(end_ns) OVER (PARTITION BY rank, capture ORDER BY seq
                                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), TRUE) AS opens
    FROM qualifying
), clustered AS (
    SELECT *, sum(opens::INTEGER) OVER (PARTITION BY rank, capture ORDER BY seq) AS cluster,
           start_ns::HUGEINT * 4294967296 + seq AS seq_key
    FROM overlap_flag
), crowded AS (  -- the ops of clusters of more than one op: there the earlier op hides the ones starting inside it
    SELECT * FROM clustered
    QUALIFY count(*) OVER (PARTITION BY rank, capture, cluster) > 1
), next_kept AS MATERIALIZED (  -- the op kept after an op if that one is kept: the next in order starting at or
                               -- after its end (materialized: DuckDB plans no ASOF join inside a recursive CTE)
    SELECT a.rank, a.capture, a.cluster, a.seq, b.seq AS next_seq
    FROM (SELECT *, greatest(end_ns::HUGEINT * 4294967296, seq_key + 1) AS want FROM crowded) a
    ASOF LEFT JOIN crowded b ON b.rank = a.rank AND b.capture = a.capture AND b.cluster = a.cluster AND b.seq_key >= a.want
), kept_chain(rank, capture, seq) AS (  -- walk each crowded cluster from its first op (all clusters at once)
    SELECT rank, capture, seq FROM crowded WHERE opens
    UNION ALL
    SELECT n.rank, n.capture, n.next_seq
    FROM kept_chain c JOIN next_kept n ON n.rank = c.rank AND n.capture = c.capture AND n.seq = c.seq
    WHERE n.next_seq IS NOT NULL
), kept AS (
    SELECT * FROM clustered WHERE opens
    UNION ALL  -- (the chain starts at the first op of its cluster, an opening one)
    SELECT c.* FROM clustered c SEMI JOIN kept_chain k ON k.rank = c.rank AND k.capture = c.capture AND k.seq = c.seq
    WHERE NOT c.opens
), level AS (  -- one row per kept op and depth of its path
    SELECT k.rank, k.capture, k.seq, k.start_ns, k.end_ns, d.depth - 1 AS depth, k.path[d.depth] AS scope
    FROM kept k, generate_series(1, len(k.path)) AS d(depth)
), compared AS (  -- the span open at this depth is the one of the last kept op that reached it
    SELECT *, lag(scope) OVER (PARTITION BY rank, capture, depth ORDER BY seq) IS DISTINCT FROM scope AS differs
    FROM level
), opened AS (  -- a depth merges only when every depth above it merged too (MindSpore's merge flag)
    SELECT *, bool_or(differs) OVER (PARTITION BY rank, capture, seq ORDER BY depth) AS opens_span
    FROM compared
), numbered AS (
    SELECT *, sum(opens_span::INTEGER) OVER (PARTITION BY rank, capture, depth ORDER BY seq) AS span
    FROM opened
)
SELECT rank, capture, 'scope_layer' AS algorithm, depth::INTEGER AS depth, any_value(scope) AS scope,
       min(start_ns) AS start_ns, arg_max(end_ns, seq) - min(start_ns) AS dur_ns, count(*) AS ops, min(seq) AS first_op,
       max(seq) AS last_op
FROM numbered
GROUP BY rank, capture, depth, span
UNION ALL  -- MindSpore 1.3-2.2's (and GPU and CPU runs') Scope Name thread
SELECT rank, capture, 'scope_name', depth, scope, start_ns, dur_ns, ops, first_op, last_op
FROM {{ ref('int_scope_name_span') }}
