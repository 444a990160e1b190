"""The metrics: deterministic tool-call and string metrics (judged ones come later)."""
