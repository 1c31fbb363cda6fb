"""How long kfdefaults takes to reject hostile YAML and TOML, in process.

Each input is one that a naive YAML or TOML reader spends seconds or gigabytes on: a "billion laughs" file of
nested aliases, one 30 KB string repeated 6,000 times by aliases, 2,000 nested flow sequences, 200 nested flow
mappings, a list of more values than the budget, a file just under the 64 KiB size cap made of many small
values, and a TOML integer of 60,000 digits. The limits are described in docs/limits.md;
the target is under a second each, so that an editor or a pre-commit hook never hangs on a bad file.

Usage: python benchmarks/hostile_input.py [--runs N]
Exit status: 0 when every input is rejected within a second (median), 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))

from kfdefaults import ProfileError  # noqa: E402
from kfdefaults.read import MAX_FILE_BYTES, MAX_NODES, parse_text  # noqa: E402

TARGET_SECONDS = 1.0


def billion_laughs() -> str:
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def near_cap() -> str:
    """Many small mappings, just under the size cap: more values than the budget allows."""
    item = "- {a: 1, b: 2}\n"
    return "x:\n" + item * ((MAX_FILE_BYTES - 16) // len(item))


def large_string_aliases() -> tuple[str, str]:
    """54 KB standing for 180 MB: under the node budget, over the byte budget."""
    return ("image: &b " + "x" * 30_000 + "\nargs: [" + ", ".join(["*b"] * 6000) + "]\n", "hostile.yaml")


CASES = {
    "billion laughs (10**9 values once expanded)": billion_laughs(),
    "a 30 KB string aliased 6,000 times (180 MB)": large_string_aliases(),
    "a TOML integer of 60,000 digits": ("a = " + "9" * 60_000 + "\n", "hostile.toml"),
    "2,000 nested [": "a: " + "[" * 2000 + "]" * 2000 + "\n",
    "200 nested {b: ": "a: " + "{b: " * 200 + "1" + "}" * 200 + "\n",
    f"a list of {MAX_NODES + 10} values": "a: [" + "1, " * (MAX_NODES + 10) + "]\n",
    f"{MAX_FILE_BYTES // 1024} KiB of small mappings": near_cap(),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    parse_text("warm: up\n", "warm.yaml")  # imports the YAML reader before timing
    failures = 0
    for label, case in CASES.items():
        text, file = case if isinstance(case, tuple) else (case, "hostile.yaml")
        times = []
        message = ""
        for _ in range(args.runs):
            start = time.perf_counter()
            try:
                parse_text(text, file)
            except ProfileError as e:
                message = str(e.findings[0])
            else:
                message = "ACCEPTED"
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        ok = median < TARGET_SECONDS and message != "ACCEPTED"
        failures += not ok
        print(f"  {label:45s} {median * 1000:8.1f} ms  {'met' if ok else 'NOT met'}  ({message.split(': ', 1)[-1]})")
    print(f"{len(CASES) - failures} of {len(CASES)} rejected in under {TARGET_SECONDS:g} s (median of {args.runs})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
