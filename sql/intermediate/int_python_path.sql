-- Each distinct call path of a thread (int_python_frame_path.path_id) with its frames from the top level down,
-- the ids of the paths above it, whether its frame already appears above it (a recursive call) and the innermost
-- Python code frame on it (python_frame_kind 'python'): the source line that made the calls below it.
WITH RECURSIVE paths AS (
    SELECT DISTINCT rank, capture, tid, path_id, parent_path_id, depth, name, frame_kind
    FROM {{ ref('int_python_frame_path') }}
), build AS (
    SELECT rank, capture, tid, path_id, parent_path_id, depth, name, frame_kind, [name] AS frames,
           [path_id] AS path_ids, false AS recursive, CASE WHEN frame_kind = 'python' THEN name END AS source_frame
    FROM paths WHERE parent_path_id IS NULL
    UNION ALL
    SELECT p.rank, p.capture, p.tid, p.path_id, p.parent_path_id, p.depth, p.name, p.frame_kind,
           list_append(b.frames, p.name), list_append(b.path_ids, p.path_id), list_contains(b.frames, p.name),
           CASE WHEN p.frame_kind = 'python' THEN p.name ELSE b.source_frame END
    FROM build b
    JOIN paths p ON p.rank = b.rank AND p.capture = b.capture AND p.tid IS NOT DISTINCT FROM b.tid
                AND p.parent_path_id = b.path_id AND p.depth = b.depth + 1
)
SELECT rank, capture, tid, path_id, parent_path_id, depth, name AS frame, frame_kind,
       array_to_string(frames, ';') AS call_path, frames, path_ids, recursive, source_frame
FROM build
