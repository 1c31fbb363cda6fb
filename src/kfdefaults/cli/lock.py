"""``kfdefaults lock [NAME ...] [--check | --upgrade]``: the project's ``kfdefaults.lock``."""

from __future__ import annotations

import argparse
import os

from .common import add_kubernetes_version, add_layer_options, err, layer_arguments, parser, report
from .common import run as run_body


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, "Write kfdefaults.lock beside the project's pyproject.toml (the working directory's, or\n"
                     "--project's): for every profile the project uses (its code's Elastic(profile=\"...\") calls,\n"
                     "the NAMEs given, the profiles already locked), the files of each layer that make it (by content\n"
                     "digest; installed packages by name and version) and the digest of what they merge to, for each\n"
                     "SDK, the layers read as render reads them (the same layer flags). While the file is there,\n"
                     "render, validate and Elastic(profile=...) at registration fail when a profile is made of other\n"
                     "files or merges to something else, naming what changed, instead of giving another result.\n\n"
                     "  kfdefaults lock               write it, or add the profiles not locked yet\n"
                     "  kfdefaults lock --check       exit 1 when anything differs from it (for CI)\n"
                     "  kfdefaults lock --upgrade     write it again from the files as they are now\n\n"
                     "Exit status: 0 written or up to date, 1 a change (--check, or one `lock` will not make\n"
                     "without --upgrade) or a broken profile, 2 a usage mistake.")
    p.add_argument("names", nargs="*", metavar="NAME", help="Profiles to lock besides those the code names.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_const", dest="mode", const="check",
                      help="Write nothing; report every difference between the lock file and the profiles now.")
    mode.add_argument("--upgrade", action="store_const", dest="mode", const="upgrade",
                      help="Write the lock file again from the profiles as they resolve now.")
    add_layer_options(p)
    add_kubernetes_version(p, "Kubernetes version of the schema the profiles are merged with")
    return p


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        from ..pipeline.locking import lock_project

        layers = layer_arguments(build("kfdefaults lock"), args)
        project = layers.pop("project")
        result = lock_project(args.names, mode=args.mode or "write", kubernetes_version=args.kubernetes_version,
                              start=project[0] if project else None, layers=layers)
        report(result.findings)
        shown = os.path.relpath(result.path) if len(os.path.relpath(result.path)) < len(result.path) else result.path
        count = f"{len(result.profiles)} profile{'s' * (len(result.profiles) != 1)} ({', '.join(result.profiles)})"
        if result.errors:
            hint = "" if args.mode == "check" else "; `kfdefaults lock --upgrade` writes it from the profiles as they are"
            err(f"kfdefaults lock: {shown} differs from the profiles now{hint}" if result.changed
                else f"kfdefaults lock: {shown} not written" if args.mode != "check" else f"kfdefaults lock: {shown}: "
                f"{len(result.errors)} error{'s' * (len(result.errors) != 1)}")
            return 1
        if result.written:
            err(f"kfdefaults lock: wrote {shown}: {count}")
        else:
            err(f"kfdefaults lock: {shown} is up to date: {count}")
        return 0

    return run_body(body)
