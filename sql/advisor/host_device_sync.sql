-- Ranks whose host blocks on the device inside its steps: the CUDA runtime and driver calls that wait for the GPU
-- (device, stream and event synchronisation, the synchronous cudaMemcpy family, whose device-to-host copies are
-- what tensor.item() and .cpu() issue) from cuda_api_stats, as a share of the rank's step time (step_phases).
WITH sync AS (
    SELECT rank, sum(total_ns) AS sync_ns, sum(calls) AS sync_calls, string_agg(name, ', ' ORDER BY total_ns DESC) AS apis
    FROM {{ ref('cuda_api_stats') }}
    WHERE name IN ('cudaDeviceSynchronize', 'cudaStreamSynchronize', 'cudaEventSynchronize', 'cudaMemcpy',
                   'cudaMemcpy2D', 'cudaMemcpyFromSymbol', 'cuCtxSynchronize', 'cuStreamSynchronize',
                   'cuEventSynchronize', 'cuMemcpyDtoH', 'cuMemcpy')
    GROUP BY rank
), steps AS (
    SELECT rank, sum(total_ns) AS step_ns, count(*) AS steps FROM {{ ref('step_phases') }} GROUP BY rank
)
SELECT rank, NULL::INTEGER AS capture, NULL::BIGINT AS step, sync_ns / step_ns AS value, apis, sync_ns, sync_calls,
       steps, sync_calls / steps AS calls_per_step, step_ns
FROM sync JOIN steps USING (rank)
WHERE step_ns > 0 AND sync_ns / step_ns > {{ threshold }}
