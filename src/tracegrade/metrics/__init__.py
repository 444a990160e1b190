"""The metrics: deterministic tool-call and string metrics, and judged ones (topic
adherence, agent goal accuracy) that ask an LLM judge."""
