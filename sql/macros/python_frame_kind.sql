-- python_frame_kind(name): what a stack frame is, by its name: 'python' (Python code: python_frame_re), 'module'
-- (Kineto's 'nn.Module: <Class>_<n>' call of an nn.Module), else 'c' (a C function called from Python:
-- '<built-in method ...>', MindSpore's repr of the callable). NULL stays NULL.
CREATE MACRO python_frame_kind(name) AS
    CASE WHEN name IS NULL THEN NULL
         WHEN starts_with(name, 'nn.Module: ') THEN 'module'
         WHEN regexp_full_match(name, python_frame_re(), 's') THEN 'python'
         ELSE 'c' END
