-- collective_type(name): the collective of a name, in nccl-tests' terms (AllReduce, ReduceScatter, AllGather,
-- AllToAll, Broadcast, Reduce, Gather, Scatter, SendRecv, Barrier; Other for the rest, e.g. PyTorch's `wait`):
-- PyTorch's 'Collective name' (allreduce, _allgather_base, reduce_scatter_tensor_coalesced, all_to_all, send,
-- recv), the collective of an NCCL kernel name (ncclKernel_AllReduce_RING_LL_Sum_float,
-- ncclDevKernel_AllGather_RING_LL, ncclDevKernel_SendRecv) or an HCCL op (allReduce_1_1, hcom_allGather_,
-- receive). Case, underscores and spaces are ignored; NULL stays NULL.
CREATE MACRO collective_type(name) AS (
    WITH k AS (SELECT lower(regexp_replace(coalesce(regexp_extract(name, '^nccl(?:Dev)?Kernel_([A-Za-z]+)', 1)
                                                        .nullif(''), name), '[_ ]', '', 'g')) AS s)
    SELECT CASE WHEN s IS NULL THEN NULL
                WHEN contains(s, 'allreduce') THEN 'AllReduce'
                WHEN contains(s, 'reducescatter') THEN 'ReduceScatter'
                WHEN contains(s, 'allgather') THEN 'AllGather'
                WHEN contains(s, 'alltoall') THEN 'AllToAll'
                WHEN contains(s, 'broadcast') THEN 'Broadcast'
                WHEN contains(s, 'sendrecv') OR regexp_matches(s, '^(hcom)?(send|recv|receive)') THEN 'SendRecv'
                WHEN regexp_matches(s, '^(hcom)?reduce') THEN 'Reduce'
                WHEN regexp_matches(s, '^(hcom)?gather') THEN 'Gather'
                WHEN regexp_matches(s, '^(hcom)?scatter') THEN 'Scatter'
                WHEN regexp_matches(s, '^(hcom)?barrier') THEN 'Barrier'
                ELSE 'Other' END
    FROM k)
