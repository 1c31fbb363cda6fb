"""Register one workflow the way ``pyflyte register`` does, in a fresh process: import its module by name with the
project's folder on ``sys.path``, and serialize it with flytekit's translator.

Usage: register_workflow.py PROJECT_DIR MODULE WORKFLOW

Prints ``{"workflow": WorkflowTemplate, "tasks": {task name: TaskTemplate}}`` (protobuf JSON) on standard output;
a failure prints flytekit's or kfdefaults' error on standard error and exits 1. Python warnings go to standard
error, as pyflyte shows them.
"""

import importlib
import json
import sys
from collections import OrderedDict

if __name__ == "__main__":
    project, module, name = sys.argv[1:4]
    sys.path.insert(0, project)
    from flytekit.configuration import ImageConfig, SerializationSettings
    from flytekit.models.task import TaskSpec
    from flytekit.tools.translator import get_serializable
    from google.protobuf.json_format import MessageToDict

    try:
        workflow = getattr(importlib.import_module(module), name)
        settings = SerializationSettings(image_config=ImageConfig.auto_default_image())
        entities: OrderedDict = OrderedDict()
        spec = get_serializable(entities, settings, workflow)
    except Exception as e:  # what pyflyte would print, in one line
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    tasks = {model.template.id.name: MessageToDict(model.template.to_flyte_idl())
             for model in entities.values() if isinstance(model, TaskSpec)}
    print(json.dumps({"workflow": MessageToDict(spec.template.to_flyte_idl()), "tasks": tasks}))
