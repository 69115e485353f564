-- step_trace_values(phases, spans, legacy): a step_trace_raw row's values in the file's column order: its phases,
-- then per communication span start, end and duration (legacy: MindInsight 0.3's order) or duration, start and end
-- (later MindSpore); NULL spans: none.
CREATE MACRO step_trace_values(phases, spans, legacy) AS
    phases || flatten(list_transform(coalesce(spans, []), lambda s: CASE WHEN legacy THEN [s.start, s."end", s."end" - s.start]
                                                                    ELSE [s."end" - s.start, s.start, s."end"] END))
