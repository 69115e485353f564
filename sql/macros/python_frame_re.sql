-- python_frame_re(): the regular expression of a Python code frame's name as the stack tracers write it,
-- 'file(line): function' (Kineto; MindSpore without the space, and with 'nn.Cell.<Class>.' before a Cell call):
-- group 1 the file, 2 the line (the code object's first line), 3 the function. C functions ('<built-in method
-- ...>') and Kineto's 'nn.Module: <Class>_<n>' frames do not match it.
CREATE MACRO python_frame_re() AS '^(?:nn\.Cell\.[A-Za-z_][A-Za-z0-9_]*\.)?(.+)\(([0-9]+)\): ?(.*)$'
