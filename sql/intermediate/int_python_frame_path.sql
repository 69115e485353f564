-- Each Python frame with its call path: the frames from its thread's top-level frame down to it, as a hash
-- (path_id = hash(parent's path_id, name); a top-level frame's is hash(name)) and its depth. Frames are walked
-- from the top level down their parent_index links (the reader numbers a parent before its children); a frame
-- whose parent is not in the table starts a path of its own.
WITH RECURSIVE frames AS (
    SELECT rank, capture, tid, frame_index, parent_index, name, frame_kind, start_ns, dur_ns
    FROM {{ ref('stg_python_frame') }}
), roots AS (
    SELECT f.* FROM frames f
    WHERE f.parent_index < 0
       OR NOT EXISTS (SELECT 1 FROM frames p WHERE p.rank = f.rank AND p.capture = f.capture
                                                AND p.frame_index = f.parent_index)
), walk AS (
    SELECT rank, capture, frame_index, 0 AS depth, hash(name) AS path_id, NULL::UBIGINT AS parent_path_id FROM roots
    UNION ALL
    SELECT c.rank, c.capture, c.frame_index, w.depth + 1, hash(w.path_id, c.name), w.path_id
    FROM walk w
    JOIN frames c ON c.rank = w.rank AND c.capture = w.capture AND c.parent_index = w.frame_index
    WHERE w.depth < 100000  -- a parent link that loops (never written by a reader) ends here
)
SELECT f.rank, f.capture, f.tid, f.frame_index, f.parent_index, f.name, f.frame_kind, f.start_ns, f.dur_ns,
       w.depth, w.path_id, w.parent_path_id
FROM frames f JOIN walk w USING (rank, capture, frame_index)
