"""Where the values of model objects being built come from, and the error a model rule
raises (see :mod:`tracegrade.model._base`)."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Literal

Origin = Literal["python", "builtins", "json"]

origin: ContextVar[Origin] = ContextVar("tracegrade_model_origin", default="python")
"""``"python"``: built by a caller; ``"builtins"``: converted from dicts and lists;
``"json"``: decoded from JSON text. Set around a conversion, read by ``__post_init__``."""


class RuleError(ValueError):
    """A value breaks one of the model's rules; ``field`` is its path inside the object
    that checked it (empty for the object as a whole)."""

    def __init__(self, field: str, rule: str) -> None:
        self.field = field
        self.rule = rule
        super().__init__(f"{field}: {rule}" if field else rule)
