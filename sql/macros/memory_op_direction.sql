-- memory_op_direction(kind, name): the direction of a memcpy or memset execution from the names the readers
-- write: 'memset' for a memset; for a memcpy 'HtoD', 'DtoH', 'DtoD', 'PtoP', ... from Kineto ("Memcpy HtoD
-- (Pageable -> Device)": the word after Memcpy, as HolisticTraceAnalysis' get_memory_kernel_type reads it),
-- Nsight Systems ("[CUDA memcpy Host-to-Device]"; "Unified HtoD" for unified memory) and MindSpore
-- ("MemcpyH2D"); 'unknown' for another name (HTA's "Memcpy Unknown").
CREATE MACRO memory_op_direction(kind, name) AS CASE
    WHEN kind = 'memset' OR starts_with(name, 'Memset') THEN 'memset'
    WHEN regexp_matches(name, '^Memcpy [A-Za-z]+( \(.*\))?$') THEN regexp_extract(name, '^Memcpy ([A-Za-z]+)', 1)
    WHEN regexp_matches(name, '^\[CUDA memcpy (Unified )?(Host|Device|Array|Peer)-to-(Host|Device|Array|Peer)\]$')
        THEN regexp_replace(name, '^\[CUDA memcpy (Unified )?([HDAP])[a-z]+-to-([HDAP])[a-z]+\]$', '\1\2to\3')
    WHEN regexp_matches(name, '^Memcpy[HDAP]2[HDAP]$') THEN regexp_replace(name, '^Memcpy([HDAP])2([HDAP])$', '\1to\2')
    ELSE 'unknown' END
