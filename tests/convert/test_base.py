"""What every converter shares (tracegrade.convert._base): a tool result given as a JSON
value, written as text."""

from __future__ import annotations

import pytest

from tracegrade.convert import ConversionError
from tracegrade.convert._base import text_of


class Handle:
    def __str__(self) -> str:
        return "handle #7"


def test_a_json_value_is_written_as_compact_json_with_exact_integers() -> None:
    value = {"n": 2**70, "ok": True, "r": [0.5, None], "t": "é"}
    assert text_of(value, "w") == '{"n":1180591620717411303424,"ok":true,"r":[0.5,null],"t":"é"}'
    assert text_of("as it is", "w") == "as it is"


def test_what_json_has_no_form_for_is_written_as_its_text() -> None:
    assert text_of({"h": Handle(), 3: None, None: 1}, "w") == '{"h":"handle #7","3":null,"null":1}'


def test_text_that_is_not_unicode_is_a_conversion_error_naming_its_place() -> None:
    with pytest.raises(ConversionError, match=r"^message 2: the value cannot be written as text"):
        text_of(["\ud800"], "message 2")
