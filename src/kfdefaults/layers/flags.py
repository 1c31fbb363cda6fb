"""Folders given on the command line (``--platform DIR``) or as ``resolve(platform=[...])``."""

from __future__ import annotations

import os
from typing import Iterable, Sequence

from .folder import Folder


class FlagSource:
    """Folders given explicitly, named in messages by ``flag`` (``--team``, ``team=``)."""

    def __init__(self, layer: str, paths: Sequence[str | os.PathLike[str]], flag: str) -> None:
        self.layer, self.paths, self.flag = layer, list(paths), flag

    def folders(self) -> list[Folder]:
        return [Folder(os.fspath(p), self.layer, self.flag) for p in self.paths]


def folder_arguments(value: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], what: str = "folders") -> list[str]:
    """Folders as a list: one path on its own (``platform="/etc/profiles"``) is one folder, not its letters.

    Raises:
        TypeError: ``value`` is neither a path nor an iterable of paths (``str`` or ``os.PathLike``).
    """
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    wrong = f"{what} takes a folder path or a list of them (str or os.PathLike)"
    if isinstance(value, (bytes, dict)) or not isinstance(value, Iterable):
        raise TypeError(f"{wrong}, not {type(value).__name__}")
    out = []
    for v in value:
        if not isinstance(v, (str, os.PathLike)):
            raise TypeError(f"{wrong}, not a list holding {type(v).__name__} {v!r}")
        out.append(os.fspath(v))
    return out
