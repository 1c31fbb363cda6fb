"""``kfdefaults cache``: where the cache of validated files and merges is and what it holds; ``clear`` empties it."""

from __future__ import annotations

import argparse

from .common import out, parser
from .common import run as run_body


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, "Show the cache folder and what it holds, or remove every entry of it (clear).\n\n"
                     "The cache keeps files already validated and profiles already merged, keyed by their content\n"
                     "and kfdefaults' own code; it is never wrong, only faster. It lives in $KFDEFAULTS_CACHE_DIR,\n"
                     "else $XDG_CACHE_HOME/kfdefaults, else ~/.cache/kfdefaults, and is kept under 128 MiB.\n"
                     "KFDEFAULTS_NO_CACHE=1 turns it off.")
    p.add_argument("action", nargs="?", choices=["show", "clear"], default="show",
                   help="show (the default): the folder, its entries and their size; clear: remove them all.")
    return p


def run(args: argparse.Namespace) -> int:
    def body() -> None:
        from .. import cache

        from ..settings import NO_CACHE_ENV, flag

        folder = cache.cache_dir()
        if flag(NO_CACHE_ENV):
            out("the cache is off (KFDEFAULTS_NO_CACHE)\n")
        elif folder is None:
            out(f"the cache at {cache.configured_dir()} is not used\n")
        elif args.action == "clear":
            removed = cache.clear(folder)
            out(f"removed {removed} file{'s' * (removed != 1)} from {folder}\n")
        else:
            entries, size = cache.usage(folder)
            out(f"{folder}: {entries} entr{'ies' if entries != 1 else 'y'}, {size / 2**20:.1f} MiB "
                f"(kept under {cache.MAX_CACHE_BYTES >> 20} MiB)\n")

    return run_body(body)
