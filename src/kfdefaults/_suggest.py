"""Suggestions for near misses: ``volumeMount`` -> ``volumeMounts``, ``heartbeat`` -> ``heartbeat_timeout``."""

from __future__ import annotations

import difflib
from typing import Iterable


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``word``, if one is close enough to be a likely typo.

    Case-insensitive matches, prefixes (``heartbeat`` of ``heartbeat_timeout``) and small edits count.
    """
    candidates = list(candidates)
    lowered = {c.lower(): c for c in candidates}
    if word.lower() in lowered:
        return lowered[word.lower()]
    matches = difflib.get_close_matches(word, candidates, n=1, cutoff=0.75)
    if matches:
        return matches[0]
    prefixed = [c for c in candidates if len(word) >= 4 and (c.startswith(word) or word.startswith(c))]
    if len(prefixed) == 1:
        return prefixed[0]
    matches = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[matches[0]] if matches else None


def unknown_key_message(key: str, known: Iterable[str], what: str = "field") -> str:
    """``unknown field `volumeMount`; did you mean `volumeMounts`?``"""
    hint = closest(key, known)
    return f"unknown {what} `{key}`" + (f"; did you mean `{hint}`?" if hint else "")
