"""Stage 4, export: files users open, written from the models in profile.duckdb."""
