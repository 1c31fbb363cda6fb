"""The builtin layer: the profiles shipped with kfdefaults."""

from __future__ import annotations

import os

from .folder import Folder


def builtin_folder() -> str:
    """The builtin profiles folder.

    Installed from a wheel, it is ``kfdefaults/profiles`` inside the package; in a source checkout (an editable
    install), the repository's top-level ``profiles/``, which the wheel packs to that place.
    """
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    packaged = os.path.join(here, "profiles")
    if os.path.isdir(packaged):
        return packaged
    return os.path.normpath(os.path.join(here, os.pardir, os.pardir, "profiles"))


class BuiltinSource:
    """The builtin layer's one folder."""

    layer = "builtin"

    def folders(self) -> list[Folder]:
        return [Folder(builtin_folder(), self.layer, "builtin", "kfdefaults")]
