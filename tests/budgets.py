"""Example budgets of the property tests, per Hypothesis profile (registered in ``conftest.py``).

``ci`` (the default): each test's fixed count, derandomized, so every run draws the same examples and a run never
fails on an example no earlier run drew. ``explore`` (``HYPOTHESIS_PROFILE=explore pytest ...``): ten times
as many, from a fresh random seed, to look for new failures before they are pinned as explicit examples.
"""

from __future__ import annotations

import os

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
SCALE = {"ci": 1, "explore": 10}[PROFILE]


def examples(ci: int) -> int:
    """The example count of a test whose CI budget is ``ci``, under the profile in use."""
    return ci * SCALE
