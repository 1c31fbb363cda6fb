"""Run a serialized task the way its pod runs it: a fresh process in the image's folder, with the serialized primary
container's environment and args and nothing of the shell's ``KFDEFAULTS_*``, recording what torch is launched with.

flytekit's containers run their own args (``pyflyte-execute``, ``pyflyte-map-execute``) through flytekit's entrypoint
(``flyte_apps/args_runner.py``); Flyte 2's run ``a0`` (``flyte_apps/a0_runner.py``), or, for a parent task, ``a0``
up to the first child the controller serializes (``flyte_apps/a0_parent_runner.py``). Nothing here writes a
container's environment or args by hand: they are the serialized task's.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

APPS = Path(__file__).resolve().parent / "flyte_apps"


def shell_env(**extra: str) -> dict[str, str]:
    """The test's environment without any layer setting of the developer's, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    return {**env, **extra}


def primary_container(template: dict) -> dict:
    """The serialized primary container (protobuf JSON of a TaskTemplate): the pod template's, else ``container``."""
    if "k8sPod" in template:
        name = template["config"]["primary_container_name"]
        [primary] = [c for c in template["k8sPod"]["podSpec"]["containers"] if c["name"] == name]
        return primary
    return template["container"]


def container_env(template: dict) -> dict[str, str]:
    """The serialized primary container's environment (a pod spec's ``name``/``value``, a container's ``key``)."""
    return {e.get("name", e.get("key")): e.get("value", "") for e in primary_container(template).get("env", [])}


def flytekit_inputs(path: Path, **values: Any) -> Path:
    """Write ``values`` (Python ints or lists of ints) as the LiteralMap flytekit's entrypoint reads."""
    from flytekit.core.context_manager import FlyteContextManager
    from flytekit.core.type_engine import TypeEngine
    from flytekit.core.utils import write_proto_to_file
    from flytekit.models.literals import LiteralMap

    ctx = FlyteContextManager.current_context()
    literals = {}
    for name, value in values.items():
        kind = list[int] if isinstance(value, list) else int
        literals[name] = TypeEngine.to_literal(ctx, value, kind, TypeEngine.to_literal_type(kind))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_proto_to_file(LiteralMap(literals=literals).to_flyte_idl(), str(path))
    return path


def run_flytekit_pod(python: Any, image: Path, template: dict, work: Path, *, extra_env: dict[str, str] | None = None,
                     **inputs: Any) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """Run ``template``'s primary container from ``image`` as its pod does (``python`` is a
    :class:`preloaded_python.PreloadedPython`); the LaunchConfigs torch receives (the process ends at the first).
    ``extra_env`` is what Flyte's backend adds (an array node's index)."""
    work.mkdir(parents=True, exist_ok=True)
    record = work / "launch.jsonl"
    record.unlink(missing_ok=True)
    inputs_file = flytekit_inputs(work / "inputs.pb", **inputs)
    env = shell_env(**container_env(template), FLYTE_INTERNAL_EXECUTION_ID="kfd-pod", **(extra_env or {}))
    args = primary_container(template)["args"]
    proc = python.run([APPS / "args_runner.py", record, inputs_file, work, *args], cwd=image, env=env)
    launched = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    return proc, launched


def futures_of(proc: subprocess.CompletedProcess) -> dict:
    """The DynamicJobSpec a ``@dynamic``'s pod wrote (protobuf JSON)."""
    lines = [line for line in proc.stdout.splitlines() if line.startswith("FUTURES ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    return json.loads(lines[0][len("FUTURES "):])


A0_TEMPLATES = ("{{.input}}", "{{.outputPrefix}}", "{{.rawOutputDataPrefix}}", "{{.checkpointOutputPrefix}}",
                "{{.prevCheckpointPrefix}}", "{{.runName}}", "{{.actionName}}", "{{.runStartTime}}")


def run_a0(image: Path, template: dict, work: Path, inputs: Any, *, parent: bool = False) -> tuple[
        subprocess.CompletedProcess, Any]:
    """Run a Flyte 2 task's serialized container through ``a0`` from ``image``, as its pod does, with ``inputs``
    (Flyte 2's proto inputs). Returns the process and the LaunchConfigs recorded (the process ends at the first);
    with ``parent``, the TaskSpec of the first child its controller serialized instead (``None`` if none)."""
    from flyte._internal.runtime.io import upload_inputs

    (work / "outputs").mkdir(parents=True, exist_ok=True)
    asyncio.run(upload_inputs(inputs, str(work / "inputs.pb")))
    values = dict(zip(A0_TEMPLATES, (str(work / "inputs.pb"), str(work / "outputs"), str(work / "raw"),
                                     str(work / "ckpt"), "", "kfdrun", "a0", "2026-01-01T00:00:00Z")))
    args = [values.get(a, a) for a in primary_container(template)["args"]]
    assert args[0] == "a0", args
    out = work / ("submitted.json" if parent else "launch.jsonl")
    out.unlink(missing_ok=True)
    runner = [APPS / "a0_parent_runner.py", out] if parent else [APPS / "a0_runner.py", out, "--record-only"]
    env = {**shell_env(), **container_env(template),
           # what Flyte 2's backend puts in every task pod (flyte/_bin/runtime.py reads them)
           "_U_RUN_BASE": str(work / "run-base"), "_U_ORG_NAME": "o",
           "FLYTE_INTERNAL_EXECUTION_PROJECT": "p", "FLYTE_INTERNAL_EXECUTION_DOMAIN": "development"}
    proc = subprocess.run([sys.executable, *map(str, runner), *args[1:]], cwd=image, env=env, capture_output=True,
                          text=True, timeout=600)
    if parent:
        return proc, json.loads(out.read_text())["taskTemplate"] if out.exists() else None
    return proc, [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
