-- Report, utilisation page: each rank's GPU idle time by HTA's causes (host_wait: the host had not launched the
-- next kernel; kernel_wait: short gaps between queued kernels; other), ms, summed over streams; profpipe's
-- definition (the steps' window, ns).
SELECT rank, category, sum(idle_ns) / 1e6 AS idle_ms, sum(gaps) AS gaps
FROM gpu_idle_breakdown
WHERE definition = 'profpipe'
GROUP BY rank, category
ORDER BY rank, category
