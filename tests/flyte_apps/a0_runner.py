"""Run one Flyte 2 task the way its pod does: Flyte 2's ``a0`` entrypoint with the serialized container args,
recording the torch elastic LaunchConfig the plugin launches with.

Usage: a0_runner.py RECORD_FILE [--record-only] ARG...   (ARG...: the primary container's args after ``a0``)

With ``--record-only`` the process ends once the LaunchConfig is recorded (no workers start).

``a0`` imports the task's module again from the current directory (the pod's working directory) through Flyte 2's
default task resolver, reads the inputs, runs the task (torch elastic workers, as in a pod) and writes its outputs.
"""

import os
import sys

if __name__ == "__main__":  # the spawned workers import this file again
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import launch_recorder

    record, *args = sys.argv[1:]
    record_only = args[:1] == ["--record-only"]
    launch_recorder.install_flyte2(record, launch=not record_only)
    from flyte._bin.runtime import main

    sys.argv = ["a0", *args[record_only:]]
    main()
