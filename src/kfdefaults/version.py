"""kfdefaults' version: what ``kfdefaults --version`` prints, the lock file records and every cache key holds.

A module of its own, imported by the facade (:mod:`kfdefaults`) and by whatever needs the version, so that nothing
imports the facade from below it.
"""

__version__ = "0.2.0"
