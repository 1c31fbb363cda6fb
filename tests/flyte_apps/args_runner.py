"""Run a registered flytekit container the way its pod runs it: its own ``args`` (``pyflyte-execute ...`` or
``pyflyte-map-execute ...``), with the backend's templates filled in, recording the LaunchConfig torch receives.

Usage: args_runner.py RECORD_FILE INPUTS_PB WORKDIR ARG...   (ARG...: the container's args as registered)

The inputs (a LiteralMap in INPUTS_PB) are what Flyte's backend would hand the task; outputs go to WORKDIR/out.
The process ends when the first LaunchConfig is recorded (no workers start). Otherwise it prints what the task
wrote: ``OUTPUTS <LiteralMap JSON>`` or, for a ``@dynamic``, ``FUTURES <DynamicJobSpec JSON>``; an error the task
wrote (``error.pb``) is printed on standard error and the exit status is 3.
"""

import os
import shutil
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import launch_recorder

    record, inputs, workdir, *args = sys.argv[1:]
    launch_recorder.install(record, launch=False)

    from flytekit.bin.entrypoint import _pass_through
    from google.protobuf.json_format import MessageToJson

    out = os.path.join(workdir, "out")
    shutil.rmtree(out, ignore_errors=True)  # what an earlier run wrote is not this run's
    templates = {"{{.input}}": inputs, "{{.outputPrefix}}": out, "{{.rawOutputDataPrefix}}": os.path.join(workdir, "raw"),
                 "{{.checkpointOutputPrefix}}": os.path.join(workdir, "ckpt"), "{{.prevCheckpointPrefix}}": ""}
    args = [templates.get(a, a) for a in args]
    try:
        _pass_through.main(args, standalone_mode=False)
    except SystemExit as e:  # flytekit exits non-zero after writing error.pb
        if e.code not in (0, None):
            print(f"EXIT {e.code}", file=sys.stderr)
    from flyteidl.core import dynamic_job_pb2, errors_pb2, literals_pb2
    from flytekit.core.utils import load_proto_from_file

    for name, kind, label in (("outputs.pb", literals_pb2.LiteralMap, "OUTPUTS"),
                              ("futures.pb", dynamic_job_pb2.DynamicJobSpec, "FUTURES")):
        path = os.path.join(out, name)
        if os.path.exists(path):
            print(label, MessageToJson(load_proto_from_file(kind, path), indent=None))
            sys.exit(0)
    error = os.path.join(out, "error.pb")
    if os.path.exists(error):
        print("TASK ERROR", load_proto_from_file(errors_pb2.ErrorDocument, error).error.message, file=sys.stderr)
    sys.exit(3)
