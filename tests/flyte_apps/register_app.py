"""Register one task the way ``pyflyte register`` does, in a fresh process: import its module by name with the
project's folder on ``sys.path``, and serialize it with flytekit's translator.

Usage: register_app.py PROJECT_DIR TASK_MODULE TASK_NAME

Prints the TaskTemplate (protobuf JSON) on standard output; a failure prints flytekit's or kfdefaults' error on
standard error and exits 1. Python warnings go to standard error, as pyflyte shows them.
"""

import importlib
import json
import sys
from collections import OrderedDict

if __name__ == "__main__":
    project, module, name = sys.argv[1:4]
    sys.path.insert(0, project)
    from flytekit.configuration import ImageConfig, SerializationSettings
    from flytekit.tools.translator import get_serializable
    from google.protobuf.json_format import MessageToDict

    try:
        task = getattr(importlib.import_module(module), name)
        settings = SerializationSettings(image_config=ImageConfig.auto_default_image())
        spec = get_serializable(OrderedDict(), settings, task)
    except Exception as e:  # what pyflyte would print, in one line
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(MessageToDict(spec.template.to_flyte_idl())))
