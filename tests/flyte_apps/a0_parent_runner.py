"""Run a Flyte 2 parent task the way its pod does (``a0`` with the serialized container args) up to its first
child: Flyte 2's controller serializes the child task in this process, as it does in the parent's pod; the
TaskSpec it would submit to the backend is written to SUBMITTED_FILE (protobuf JSON) and the process ends there.

Usage: a0_parent_runner.py SUBMITTED_FILE ARG...   (ARG...: the primary container's args after ``a0``)

Only the network call is replaced (``RemoteController.submit_and_wait_for_action``), and the child's inputs are
written to a local folder made first (an object store needs none); the child is serialized by the controller's own
``_submit`` (``translate_task_to_wire`` with the pod's serialization context).
"""

import os
import sys

if __name__ == "__main__":
    submitted = sys.argv[1]

    import flyte._internal.controllers.remote._controller as controller
    from flyte._internal.controllers.remote._controller import RemoteController
    from google.protobuf.json_format import MessageToJson

    async def record_and_end(self, action):
        with open(submitted, "w", encoding="utf-8") as f:
            f.write(MessageToJson(action.task))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    upload = controller.upload_inputs_with_retry

    async def upload_into_a_folder(data, path, **kwargs):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return await upload(data, path, **kwargs)

    controller.upload_inputs_with_retry = upload_into_a_folder
    RemoteController.submit_and_wait_for_action = record_and_end
    from flyte._bin.runtime import main

    sys.argv = ["a0", *sys.argv[2:]]
    main()
