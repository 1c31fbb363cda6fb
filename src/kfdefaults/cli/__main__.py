"""``python -m kfdefaults.cli``: the command line."""

from . import main

main()
