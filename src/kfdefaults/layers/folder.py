"""A folder of profile files, and what every layer source gives: the folders it names."""

from __future__ import annotations

from typing import NamedTuple, Protocol


class Folder(NamedTuple):
    """A folder of profile files.

    Attributes:
        path: The folder.
        layer: ``builtin``, ``platform`` or ``team``.
        origin: What named it, for messages: ``--team``, ``KFDEFAULTS_TEAM_PATH``, ``entry point acme (...)``,
            the path of a ``pyproject.toml``.
        package: The installed distribution it belongs to (``kfdefaults`` for the builtin folder, the package
            of a ``kfdefaults.platform`` entry point), normalised (``acme_platform_profiles``); ``None`` for a
            folder named by path. ``kfdefaults.lock`` names files by it, not by a machine's path.
    """

    path: str
    layer: str
    origin: str
    package: str | None = None


class Source(Protocol):
    """Where one layer finds folders (a flag, a variable, installed packages, pyproject.toml).

    Attributes:
        layer: The layer it feeds.
    """

    layer: str

    def folders(self) -> list[Folder]:
        """The folders, in the order they are listed.

        Raises:
            ProfileError: what names the folders is broken (an installed package, a pyproject.toml).
        """
        ...
