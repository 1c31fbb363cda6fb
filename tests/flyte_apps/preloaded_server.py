"""Start Python processes that have imported the SDKs already: each request forks a child that runs a script as
``python SCRIPT ARGS...`` would, in its own working folder and environment.

Usage: preloaded_server.py MODULE... (the modules to import once, e.g. ``flytekit torch``)

Reads one JSON request per line on standard input, ``{"id": ..., "argv": [SCRIPT, ARG...], "cwd": ..., "env": {...},
"warnings": null | "always", "timeout": seconds}``, and answers each with one JSON line
``{"id": ..., "returncode": ..., "stdout": ..., "stderr": ...}`` when its child ends. Requests run at once: a
request does not wait for the children of those before it (``torch_runs`` runs many sleeping torch runs this way).

Importing flytekit and torch takes seconds per process; a forked child starts with them in memory and nothing
else: kfdefaults and the task's own modules are never imported here (checked at start), so every child imports
them afresh, under its own environment and working folder, after flytekit, as ``pyflyte`` and
``pyflyte-execute`` do. The child's exit status and output are those the script would have as a process of its
own: ``sys.exit`` codes, an uncaught exception's traceback and exit status 1, ``os._exit``.
"""

import importlib
import json
import os
import runpy
import select
import sys
import tempfile
import threading
import time
import warnings


def as_if_imported_here() -> None:
    """What the preloaded modules decided from the environment when imported, decided again under the child's:
    flytekit picks its log handler when ``flytekit.loggers`` is imported (a JSON handler on standard error where
    FLYTE_INTERNAL_EXECUTION_ID is set, as in a pod; a rich one on standard output elsewhere)."""
    loggers = sys.modules.get("flytekit.loggers")
    if loggers is not None:
        for logger in (loggers.logger, loggers.user_space_logger, loggers.developer_logger):
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
        loggers.initialize_global_loggers()


def child(request: dict, out_fd: int, err_fd: int) -> None:
    """Run the request's script in this (forked) process, then end it with the script's exit status."""
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        as_if_imported_here()
        script = os.path.abspath(request["argv"][0])
        sys.argv = [script, *request["argv"][1:]]
        sys.path[0] = os.path.dirname(script)  # as for `python SCRIPT`
        if request.get("warnings"):
            warnings.simplefilter(request["warnings"])  # python -W ACTION
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as e:  # what the interpreter does with it
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            sys.excepthook(*sys.exc_info())  # the interpreter's report of an uncaught exception
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def start(request: dict) -> tuple[int, dict]:
    """Fork the child of one request; its pid and what its answer needs."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        child(request, out.fileno(), err.fileno())
    return pid, {"id": request.get("id"), "out": out, "err": err,
                 "deadline": time.monotonic() + request.get("timeout", 300)}


def answer(running: dict, status: int) -> dict:
    out, err = running["out"], running["err"]
    out.seek(0)
    err.seek(0)
    done = {"id": running["id"], "returncode": os.waitstatus_to_exitcode(status),
            "stdout": out.read().decode("utf-8", "replace"), "stderr": err.read().decode("utf-8", "replace")}
    out.close()
    err.close()
    return done


def main() -> None:
    for module in sys.argv[1:]:
        importlib.import_module(module)
    imported = sorted(m for m in sys.modules if m.split(".")[0] == "kfdefaults")
    assert not imported, f"the preloaded modules imported {imported}: children would not import them afresh"
    # A forked child has the forking thread alone. torch's own native thread is no matter (torch forks its
    # DataLoader workers and its elastic "fork" workers after import); a Python thread, such as Flyte 2's
    # event loop, would be missed by the child and is refused.
    assert threading.active_count() == 1, f"the preloaded modules started {threading.enumerate()}: a forked child would lack them"
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # nothing printed by an import reaches the answers
    requests, pending, running, closed = sys.stdin.fileno(), b"", {}, False
    while running or not closed:  # requests run at once, each answered when its child ends (by its "id")
        if not closed and select.select([requests], [], [], 0.005 if running else None)[0]:
            chunk = os.read(requests, 1 << 16)
            closed = not chunk
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in filter(None, lines):
                pid, state = start(json.loads(line))
                running[pid] = state
        elif closed:
            time.sleep(0.005)
        for pid, state in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if not done and time.monotonic() > state["deadline"]:
                os.kill(pid, 9)
                done, status = os.waitpid(pid, 0)
            if done:
                answers.write(json.dumps(answer(running.pop(pid), status)) + "\n")
                answers.flush()


if __name__ == "__main__":
    main()
