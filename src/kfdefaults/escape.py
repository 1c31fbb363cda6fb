"""Text that came from a file, shown: one escaping rule per medium.

Whoever writes a profile (the author of a pull request, say) chooses every key, value, file and folder name that
kfdefaults shows, and every error message quotes some of them. Each medium they are shown in has one rule, here:

* **A terminal or a log** (standard output and error, exception and warning messages, a CI log):
  :func:`printable`. A character that a terminal or a log reader acts on rather than shows is written as a
  visible escape: ``\\n``, ``\\r``, ``\\t``, ``\\x1b``, ``\\x9b``, ``\\u202e``, ``\\U000e0001``. That is every
  character of the Unicode categories Cc (C0 controls, DEL, C1 controls: ESC starts a terminal's escape
  sequences, OSC 52 writes the clipboard, ``\\r`` overwrites a line, a line break starts a forged
  ``::error::`` workflow command in a GitHub Actions log), Cf (format characters: the bidirectional overrides
  and isolates U+202A-202E and U+2066-2069 that reorder what a line seems to say, the zero-width characters that
  hide a difference, the byte-order mark), Zl and Zp (U+2028, U+2029, which some readers take for line breaks)
  and Cs (lone surrogates: the bytes of a file name that are not UTF-8). A backslash is kept as it is: the
  escape is for reading, and a name that holds ``\\x1b`` as four characters reads the same as one that holds
  ESC, both harmlessly. A dotted path quotes such a key (:func:`quoted`), so paths stay unambiguous and read
  back (:func:`read_escape`).
* **JSON and YAML output**: the same characters, as the format's own escapes (``"\\u001b"``), so that the data
  reads back the same (:func:`is_unsafe`, used by :mod:`kfdefaults.show.output`).
* **Markdown** (a pull-request comment): every text from a file is a code span (:func:`code_span`,
  :func:`table_cell`) or inside a fenced block (:func:`fenced`), fenced by more backticks than the longest run
  inside, as CommonMark's rule for code spans and fenced code blocks asks (spec 0.31, "Code spans" and "Fenced
  code blocks"). Inside code nothing is markup: no HTML, emphasis, heading, link or ``@``-mention; the text is
  :func:`printable` first, so a line break cannot end a table row or the block.

Imports nothing of kfdefaults: every step of the flow may use it.
"""

from __future__ import annotations

import re

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def is_unsafe(c: str) -> bool:
    """Whether the character ``c`` is one a terminal or log reader may act on rather than show (categories Cc,
    Cf, Cs, Zl, Zp: see the module's docstring)."""
    if c.isprintable():  # every character of those categories is not printable to Python: the fast test first
        return False
    import unicodedata

    return unicodedata.category(c) in _UNSAFE_CATEGORIES


def has_unsafe(text: str) -> bool:
    """Whether ``text`` holds a character :func:`is_unsafe` names."""
    return not text.isprintable() and any(is_unsafe(c) for c in text)


def escape_char(c: str) -> str:
    """One character as a visible escape: ``\\n``, ``\\r``, ``\\t``, else ``\\xNN`` up to U+00FF, ``\\uNNNN`` up to
    U+FFFF, ``\\UNNNNNNNN`` beyond (Python's and YAML's notation, which :func:`read_escape` reads back)."""
    short = _SHORT.get(c)
    if short is not None:
        return short
    code = ord(c)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: str, encoding: str | None = None) -> str:
    """``text`` as a terminal or a log shows it safely: every character :func:`is_unsafe` names written as its
    visible escape (:func:`escape_char`), and, for an ``encoding`` that cannot hold every character (the ``C``
    locale, ``ISO-8859-1``: :func:`kfdefaults.show.output.output_encoding`), each character it cannot hold too.

    The result holds no line break: one message stays one line. Applying it twice changes nothing.

    Args:
        text: Any text (a message, a path, a value, a file name).
        encoding: The encoding the text will be written in; ``None`` for one that holds every character.
    """
    if text.isprintable() and (encoding is None or text.isascii()):
        return text
    out = []
    for c in text:
        if is_unsafe(c) or (encoding is not None and not c.isascii() and not _encodes(c, encoding)):
            out.append(escape_char(c))
        else:
            out.append(c)
    return "".join(out)


def _encodes(c: str, encoding: str) -> bool:
    try:
        c.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def quoted(text: str) -> str:
    """``text`` in double quotes, ``\\`` and ``"`` escaped by a backslash and the rest :func:`printable`: how a
    dotted path writes a key or a list item's name that needs quoting (``"nvidia.com/gpu"``, ``"a\\x1bb"``)."""
    return '"' + printable(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'


_ESCAPE = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))", re.DOTALL)
_NAMED = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}


def read_escape(text: str, i: int) -> tuple[str, int]:
    """The character the backslash escape at ``text[i]`` stands for, and the index after the escape.

    Reads what :func:`quoted` and JSON strings write: ``\\xNN``, ``\\uNNNN``, ``\\UNNNNNNNN`` (a code point each;
    no surrogate pairs), ``\\n``, ``\\r``, ``\\t``, ``\\b``, ``\\f``; a backslash before any other character stands
    for that character (``\\"``, ``\\\\``, ``\\.``), and a backslash that ends the text for itself.
    """
    m = _ESCAPE.match(text, i)
    if m is None:
        return "\\", i + 1
    digits = m.group(1) or m.group(2) or m.group(3)
    if digits is not None and int(digits, 16) <= 0x10FFFF:
        return chr(int(digits, 16)), m.end()
    if digits is not None:  # beyond Unicode: the letter, as any other escaped character
        return text[i + 1], i + 2
    return _NAMED.get(m.group(4), m.group(4)), m.end()


def unescape(text: str) -> str:
    """``text`` with each backslash escape replaced by its character (:func:`read_escape`)."""
    out, i = [], 0
    while True:
        j = text.find("\\", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        c, i = read_escape(text, j)
        out.append(c)


# --- Markdown ------------------------------------------------------------------------------------------------

_BACKTICKS = re.compile("`+")


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)


def code_span(text: str) -> str:
    """``text`` as one CommonMark code span, whatever it holds.

    The content is :func:`printable` ``text`` (a line break is written ``\\n``: CommonMark would turn it into a
    space, and a table row would end there), fenced by one backtick more than its longest run of backticks, with
    a space inside each fence where the content starts or ends with a backtick or a space (CommonMark strips one
    space from each side of such a content: spec 0.31, "Code spans"). An empty ``text`` is a span of one space:
    CommonMark has no empty code span.

    Returns:
        Markdown that a CommonMark parser reads as exactly one code span whose content is ``printable(text)``.
    """
    content = printable(text) or " "
    fence = "`" * (_longest_backtick_run(content) + 1)
    pad = " " if content.strip(" ") and (content[0] in "` " or content[-1] in "` ") else ""
    return f"{fence}{pad}{content}{pad}{fence}"


def table_cell(text: str) -> str:
    """``text`` as a code span in a cell of a GitHub table (GFM's table extension).

    A table splits its rows into cells at every ``|`` before it reads code spans, so each ``|`` is written
    ``\\|`` (the table takes the backslash away again). A backslash right before a ``|`` would pair with that
    backslash instead (GitHub's cmark-gfm reads ``\\\\|`` as an escaped backslash and a cell's end, and the rest
    of the text as Markdown): such a backslash is written ``\\x5c``.
    """
    return code_span(printable(text).replace("\\|", "\\x5c|")).replace("|", "\\|")


def fenced(text: str, info: str = "text") -> str:
    """``text`` as a fenced code block: each line :func:`printable`, the fence one backtick longer than the longest
    run of backticks inside (three at least), so that no line of the text can close it (a closing fence is a
    run of backticks at least as long as the opening one: spec 0.31, "Fenced code blocks").

    Args:
        text: Lines of text.
        info: The info string (the language), written after the opening fence; our own words, never a file's.
    """
    lines = [printable(line) for line in text.split("\n")]
    fence = "`" * max(3, _longest_backtick_run("\n".join(lines)) + 1)
    return "\n".join([fence + info, *lines, fence])
