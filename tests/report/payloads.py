"""Transcripts that try to run script in a report, and the samples that carry them."""

from __future__ import annotations

from typing import Any

PAYLOADS = (
    "<script>window.__pwned = 'script'; document.title = 'pwned'</script>",
    "<img src=x onerror=\"window.__pwned = 'img'\">",
    "<a href=\"javascript:window.__pwned = 'link'\">click me</a>",
    "javascript:window.__pwned = 'url'",
    '" onmouseover="window.__pwned = \'attribute\'" x="',
    "</script><script>window.__pwned = 'island'</script><!--",
    "<svg onload=\"window.__pwned = 'svg'\"></svg>",
    "<iframe srcdoc=\"<script>parent.__pwned = 'frame'</script>\"></iframe>",
    "\u2028\u2029{{ 7 * 7 }}",
)
"""Each would set ``window.__pwned`` (or the title) if the page ran it."""


def hostile_records() -> list[dict[str, Any]]:
    """One sample per payload, the payload in its id, messages, tool names, argument
    keys and values, tool results and reference; then one on which every metric fails,
    and one that is rejected with a payload in its reason."""
    records: list[dict[str, Any]] = []
    for number, payload in enumerate(PAYLOADS):
        call = {"name": f"tool{payload}", "args": {payload: payload, "n": number}}
        records.append(
            {
                "id": f"{payload}#{number}",
                "user_input": [
                    {"type": "human", "content": payload},
                    {"type": "ai", "content": payload, "tool_calls": [{**call, "id": "c1"}]},
                    {"type": "tool", "content": payload, "tool_call_id": "c1"},
                    {"type": "ai", "content": f"done {payload}"},
                ],
                "reference_tool_calls": [
                    {"name": f"tool{payload}", "args": {payload: "other", "n": number}},
                    {"name": payload, "args": {}},
                ],
                "reference": payload,
            }
        )
    # a record every metric fails on (it has no conversation), and one that is rejected
    records.append({"id": f"failing {PAYLOADS[1]}", "user_input": PAYLOADS[0]})
    records.append({"id": "broken", "user_input": [{"type": PAYLOADS[0], "content": "x"}]})
    return records
