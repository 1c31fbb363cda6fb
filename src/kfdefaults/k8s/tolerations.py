"""Taints and tolerations: k8s.io/api core/v1/toleration.go ``(*Toleration).ToleratesTaint`` for one toleration, and
component-helpers scheduling/corev1/helpers.go ``TolerationsTolerateTaint`` for a pod's, indexed
(:class:`Tolerations`). The scheduler's TaintToleration and NodeUnschedulable filters (:mod:`.scheduling`) and
``fit``'s causes use them."""

from __future__ import annotations

import re
from typing import Any, Mapping


def _decimal_integer(text: Any) -> int | None:
    """apimachinery pkg/api/validate/content ``IsDecimalInteger`` then ``ParseInt``: canonical form only (no sign
    ``+``, no leading zero), as toleration.go ``compareNumericValues`` reads both values."""
    if not isinstance(text, str) or not re.fullmatch(r"0|-?[1-9][0-9]*", text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any], *, comparison_operators: bool = False) -> bool:
    """Whether ``toleration`` tolerates ``taint`` (k8s.io/api core/v1/toleration.go ``ToleratesTaint``).

    An empty ``effect`` matches every effect; an empty ``key`` matches every key (with ``Exists``); ``Exists``
    matches every value, ``Equal`` (or no operator) the equal value. ``Gt`` and ``Lt`` compare the values as
    integers only with ``comparison_operators`` (the alpha feature gate ``TaintTolerationComparisonOperators``,
    off by default); otherwise, like any other operator, they tolerate nothing.
    """
    effect, key = toleration.get("effect") or "", toleration.get("key") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or ""
    value, taint_value = toleration.get("value") or "", taint.get("value") or ""
    if operator in ("", "Equal"):
        return value == taint_value
    if operator == "Exists":
        return True
    if operator in ("Gt", "Lt") and comparison_operators:
        mine, theirs = _decimal_integer(value), _decimal_integer(taint_value)
        if mine is None or theirs is None:
            return False
        return theirs > mine if operator == "Gt" else theirs < mine
    return False


class Tolerations:
    """A pod's tolerations, indexed: whether one of them tolerates a taint (component-helpers
    ``TolerationsTolerateTaint``) is a few set lookups, exactly as :func:`tolerates` tried on each. A node list may
    hold a thousand pools of hundreds of taints each, and a pod a thousand tolerations: tried pair by pair, one
    ``fit`` took minutes.

    ``Exists`` and ``Equal`` tolerations are indexed by what they must match (an empty key or effect matches any);
    ``Gt`` and ``Lt`` (with ``comparison_operators``) are tried one by one. Any other operator tolerates nothing,
    nor does a key, effect, operator or ``Equal`` value that is not text against a taint of text (every taint of a
    node list or of the facts); a taint whose fields are not text is tried against each toleration.
    """

    def __init__(self, tolerations: Any, comparison_operators: bool = False) -> None:
        self.all = [t if isinstance(t, Mapping) else {} for t in (tolerations if isinstance(tolerations, list) else [])]
        self.comparison_operators = comparison_operators
        self.exists: set[tuple[str, str]] = set()  # (key, effect)
        self.equal: set[tuple[str, str, str]] = set()  # (key, value, effect)
        self.tried: list[Mapping[str, Any]] = []
        for t in self.all:
            key, effect, operator, value = (t.get(f) or "" for f in ("key", "effect", "operator", "value"))
            if not (isinstance(key, str) and isinstance(effect, str) and isinstance(operator, str)):
                continue
            if operator == "Exists":
                self.exists.add((key, effect))
            elif operator in ("", "Equal") and isinstance(value, str):
                self.equal.add((key, value, effect))
            elif operator in ("Gt", "Lt") and comparison_operators:
                self.tried.append(t)

    def tolerate(self, taint: Mapping[str, Any]) -> bool:
        """Whether some toleration tolerates ``taint``."""
        key, effect, value = (taint.get(f) or "" for f in ("key", "effect", "value"))
        if not (isinstance(key, str) and isinstance(effect, str) and isinstance(value, str)):
            return any(tolerates(t, taint, comparison_operators=self.comparison_operators) for t in self.all)
        if any((k, e) in self.exists or (k, value, e) in self.equal for k in {key, ""} for e in {effect, ""}):
            return True
        return any(tolerates(t, taint, comparison_operators=self.comparison_operators) for t in self.tried)
