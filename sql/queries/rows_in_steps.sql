-- step_list (profpipe/step_filter.py): the rows of the timed table in the Parquet file $rows that lie in
-- their cycle's window (the exporter's temp table step_windows, from step_windows.sql); a cycle without a
-- step trace keeps all its rows.
SELECT t.*
FROM read_parquet($rows) t LEFT JOIN step_windows w USING (rank, capture)
WHERE w.rank IS NULL
   OR (t.start_ns <= w.end_ns AND (t.start_ns > w.previous_end_ns OR (w.previous_end_ns IS NULL AND t.start_ns >= w.start_ns)))
