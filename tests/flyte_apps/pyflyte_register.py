"""Run ``pyflyte register ARG...`` for real, in dry-run mode (``--dry-run``: nothing is sent to a backend), and write
what it would register: the TaskTemplates flytekit serialized (protobuf JSON), by task name, to OUT.

Usage: pyflyte_register.py OUT ARG...   (ARG...: pyflyte's, after ``pyflyte``)

Only the list of entities ``pyflyte register`` serializes is read on its way (``serialize_get_control_plane_entities``
is wrapped); the command line, its flags and the serialization settings are pyflyte's own.
"""

import json
import sys

if __name__ == "__main__":
    out, *args = sys.argv[1:]
    import flytekit.tools.repo as repo
    from flytekit.clis.sdk_in_container.pyflyte import main
    from flytekit.models.task import TaskSpec
    from google.protobuf.json_format import MessageToDict

    serialize = repo.serialize_get_control_plane_entities

    def recording(*a, **kw):
        entities = serialize(*a, **kw)
        tasks = {e.template.id.name: MessageToDict(e.template.to_flyte_idl()) for e in entities if isinstance(e, TaskSpec)}
        with open(out, "w", encoding="utf-8") as f:
            json.dump(tasks, f)
        return entities

    repo.serialize_get_control_plane_entities = recording
    main(args)
