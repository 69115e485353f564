SELECT rank, capture, step,
       CASE WHEN regexp_matches(lower(op_name), '^hcom_(send|receive|batchsendrecv)') THEN 'p2p' ELSE 'collective' END
           AS comm_kind,
       count(*) AS executions,
       sum(elapse_ns)::BIGINT AS elapse_ns, sum(transit_ns)::BIGINT AS transit_ns, sum(wait_ns)::BIGINT AS wait_ns,
       sum(synchronization_ns)::BIGINT AS synchronization_ns, sum(idle_ns)::BIGINT AS idle_ns,
       round(sum(wait_ns) / nullif(sum(wait_ns) + sum(transit_ns), 0), 4) AS wait_share,
       round(sum(synchronization_ns) / nullif(sum(synchronization_ns) + sum(transit_ns), 0), 4) AS synchronization_share
FROM {{ ref('comm_op_time') }}
GROUP BY ALL
