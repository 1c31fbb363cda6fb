"""Run one task the way ``pyflyte-execute`` runs it in a pod, recording its LaunchConfig.

Usage: pod_runner.py RECORD_FILE WORKDIR TASK_MODULE TASK_NAME X [--record-only]

With ``--record-only`` the process ends once the LaunchConfig is recorded (no workers start).

The task module is imported from the current directory by flytekit's default task resolver, exactly as in a
pod; its inputs (``x``) are written to WORKDIR/inputs.pb and its outputs read from WORKDIR/out.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import launch_recorder

    record, workdir, module, name, x = sys.argv[1:6]
    launch_recorder.install(record, launch="--record-only" not in sys.argv[6:])

    from flyteidl.core import literals_pb2
    from flytekit.bin.entrypoint import _execute_task
    from flytekit.core.context_manager import FlyteContextManager
    from flytekit.core.type_engine import TypeEngine
    from flytekit.core.utils import load_proto_from_file, write_proto_to_file
    from flytekit.models.literals import LiteralMap

    ctx = FlyteContextManager.current_context()
    inputs = LiteralMap(literals={"x": TypeEngine.to_literal(ctx, int(x), int, TypeEngine.to_literal_type(int))})
    write_proto_to_file(inputs.to_flyte_idl(), os.path.join(workdir, "inputs.pb"))
    _execute_task(
        inputs=os.path.join(workdir, "inputs.pb"),
        output_prefix=os.path.join(workdir, "out"),
        test=False,
        raw_output_data_prefix=os.path.join(workdir, "raw"),
        resolver="flytekit.core.python_auto_container.default_task_resolver",
        resolver_args=["task-module", module, "task-name", name],
    )
    outputs = os.path.join(workdir, "out", "outputs.pb")
    if not os.path.exists(outputs):
        print("NO OUTPUTS:", os.listdir(os.path.join(workdir, "out")), file=sys.stderr)
        sys.exit(3)
    result = LiteralMap.from_flyte_idl(load_proto_from_file(literals_pb2.LiteralMap, outputs))
    print("RESULT", result.literals["o0"].scalar.primitive.integer)
