"""Lines cut to a terminal's width where a reader expects a break: between words, else after a path separator.

A terminal cuts a long line wherever the width ends (``gpu-lar`` / ``ge``); a table cell that rich folds does the
same within its column. :func:`wrap` cuts a value, a path or a message at a space (dropped: the next piece starts
with the next word), else just after one of :data:`BOUNDARIES` (kept at the end of the piece: ``registry.``
``example.com/``), and only a run of characters with neither that is longer than the width is cut where the width
ends.
"""

from __future__ import annotations

BOUNDARIES = "/.,;:=-_])}"
"""Characters after which a word may be cut: the separators of paths (``/``, ``.``), of lists and mappings
written as JSON (``,``, ``:``), of names (``-``, ``_``) and closing brackets."""


def wrap(text: str, width: int) -> list[str]:
    """``text`` cut into pieces of at most ``width`` characters (at least 1), in order.

    Joined with a space where a piece ended at a space and with nothing elsewhere, the pieces give ``text`` back;
    ``text`` holds no line break (it is :func:`~kfdefaults.escape.printable`).

    Returns:
        ``[text]`` when it fits; ``[""]`` for an empty text.
    """
    width = max(1, width)
    pieces: list[str] = []
    rest = text
    while len(rest) > width:
        cut = rest.rfind(" ", 1, width + 1)
        if cut > 0:
            pieces.append(rest[:cut])
            rest = rest[cut + 1:]
            continue
        cut = max(rest.rfind(c, 0, width) for c in BOUNDARIES) + 1  # just after the boundary, within the width
        cut = cut if cut > 0 else width
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    return pieces


def hanging(first: str, text: str, width: int) -> list[str]:
    """``first`` (a mark, a label, an indent) followed by ``text`` wrapped to ``width`` columns, the lines after
    the first indented to where ``text`` starts: a value stays in its column beside its label."""
    pieces = wrap(text, width - len(first))
    return [first + pieces[0]] + [" " * len(first) + piece for piece in pieces[1:]]
