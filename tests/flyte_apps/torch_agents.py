"""Run N torch elastic agents on this machine, each the way a PyTorchJob's pod runs a flytekit elastic task.

Usage: torch_agents.py SPEC_JSON    (written by ``tests/torch_runs.py``; see ``run_agents`` there)

Each agent is a process of its own, forked from this one once flytekit and torch are imported, in a process
group of its own; its standard output and error go to ``WORKDIR/agentI.stdout`` / ``.stderr`` (its training
processes inherit them, as in a container's log). It gets the environment the training operator and Flyte's
backend give every pod of the job (``PET_RDZV_ENDPOINT``, ``PET_NNODES``, ``FLYTE_INTERNAL_EXECUTION_ID``), waits
for its start time, then runs the task as ``pyflyte-execute`` does (``flytekit.bin.entrypoint._execute_task``,
which reaches ``PytorchElasticFunctionTask._execute``: the plugin's own ``LaunchConfig`` and ``elastic_launch``).

Which agent hosts the rendezvous store: in a pod, ``_create_tcp_store``
(``torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py``) guesses it by comparing the endpoint's host
with the pod's hostname and addresses (``_matches_machine_hostname``): the pod named in ``PET_RDZV_ENDPOINT``
hosts, the others connect. On one machine every agent would match ``localhost``, and the first one started would
host the store, so each agent is told what its pod would guess: ``rdzv_configs.is_host`` true for agent 0, false
for the others. For a pod that does not host, the code path is the same either way (one ``TCPStore`` client, whose
connection is retried until ``read_timeout`` has passed); only a host whose port is taken would differ (it would
try once more as a client).

An agent whose start is ``null`` never starts. An agent with a ``cue``, ``[J, S]``, starts at its start or ``S``
seconds after agent J's first training process printed its ``KFD_WORKER`` line, whichever is later. At ``deadline`` seconds after the start of the run every agent
still alive is killed with its process group (SIGKILL); when an agent ends, what is left of its process group is
killed too, as a container's end kills its processes. The answer is ``WORKDIR/result.json``: for each agent its
pid, start and end (``time.monotonic()``, shared by the processes of this machine), exit status and whether it was
killed. With ``shm_size`` the run gets a mount namespace of its own with a ``/dev/shm`` of that size (root only).
Each agent also records the ``LaunchConfig`` torch received (``agentI.launch.jsonl``, ``launch_recorder.py``) and
what ``elastic_launch`` raised (``agentI.raised.json``). ``KFD_TORCH_DEBUG=1`` in the run's environment adds torch
elastic's INFO and DEBUG lines to the agents' logs (a pod shows only its warnings and errors).
"""

import ctypes
import faulthandler
import json
import os
import select
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def private_dev_shm(size: str) -> str | None:
    """Give this process (and the agents it forks) a mount namespace with a ``/dev/shm`` of ``size``, as
    ``unshare -m`` then ``mount -t tmpfs -o size=SIZE tmpfs /dev/shm``; the reason why not, or None."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
        return f"unshare(CLONE_NEWNS): {os.strerror(ctypes.get_errno())}"
    for argv in (["mount", "--make-rprivate", "/"], ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", "/dev/shm"]):
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode:
            return f"{' '.join(argv)}: {done.stderr.strip()}"
    return None


def debug_log() -> None:
    """Print torch elastic's log records of every level on standard error, with milliseconds since the start."""
    import logging

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(relativeCreated)d %(name)s %(message)s"))
    elastic = logging.getLogger("torch.distributed.elastic")
    elastic.addHandler(handler)
    elastic.propagate = False
    for name in [n for n in logging.root.manager.loggerDict if n.startswith("torch.distributed.elastic")]:
        logging.getLogger(name).setLevel(logging.DEBUG)


def record_raised(path: str) -> None:
    """Write what ``elastic_launch`` raised to ``path`` as JSON: its class, module and message and, for a
    ``ChildFailedError``, each failed rank's exit code and message.

    The exception is taken where flytekit formats a task's error for its error document
    (``flytekit.bin.entrypoint.get_traceback_str``, called by ``_dispatch_execute`` once the exception is caught),
    as the exception of its chain whose traceback runs through ``torch/distributed/launcher/api.py``: no frame of
    this harness enters the tracebacks the log shows."""
    import flytekit.bin.entrypoint as entrypoint

    real = entrypoint.get_traceback_str

    def get_traceback_str(e):
        seen, chain = set(), [e]
        while chain[-1] is not None and id(chain[-1]) not in seen:
            seen.add(id(chain[-1]))
            chain.append(chain[-1].__cause__ or chain[-1].__context__)
        for exc in chain[:-1]:
            tb, files = exc.__traceback__, []
            while tb is not None:
                files.append(tb.tb_frame.f_code.co_filename)
                tb = tb.tb_next
            if any(f.endswith(os.path.join("torch", "distributed", "launcher", "api.py")) for f in files):
                failures = {str(rank): {"exitcode": f.exitcode, "message": f.message}
                            for rank, f in getattr(exc, "failures", {}).items()}
                with open(path, "w", encoding="utf-8") as f:
                    json.dump({"type": type(exc).__name__, "module": type(exc).__module__, "message": str(exc),
                               "failures": failures}, f)
                break
        return real(e)

    entrypoint.get_traceback_str = get_traceback_str


def after_worker_of(stdout: str, seconds: float) -> None:
    """Return ``seconds`` after the first ``KFD_WORKER`` line in another agent's standard output ``stdout``: a start
    tied to that agent's workers running, not to a time that a loaded machine may reach before they run."""
    while True:
        with open(stdout, encoding="utf-8", errors="replace") as f:
            if any(line.startswith("KFD_WORKER ") for line in f):
                break
        time.sleep(0.05)
    time.sleep(seconds)


def agent(spec: dict, index: int, ready: int, go: int) -> None:
    """The forked agent ``index``: its pod's environment and imports, then (once every agent is ready and the
    coordinator wrote the run's start time to ``go``) its start time, then the task as pyflyte-execute runs it."""
    code, told = 1, False
    try:
        os.setpgid(0, 0)
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: end with the coordinator
        work = os.path.join(spec["workdir"], f"agent{index}")
        os.makedirs(work, exist_ok=True)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            os.dup2(os.open(f"{work}.{name}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        elastic = json.loads(json.dumps(spec["elastic"]))
        elastic.setdefault("rdzv_configs", {})["is_host"] = index == 0
        if spec["elastic"]["nnodes"] not in (1, "1"):  # a PyTorchJob's pod; nnodes 1 is a plain pod, without them
            os.environ.update({"PET_RDZV_ENDPOINT": f"localhost:{spec['port']}",
                               "PET_NNODES": str(spec["elastic"]["nnodes"])})
        os.environ.update({
            "FLYTE_INTERNAL_EXECUTION_ID": spec["run_id"],
            "FLYTE_INTERNAL_EXECUTION_PROJECT": "kfdefaults",
            "FLYTE_INTERNAL_EXECUTION_DOMAIN": "development",
            "KFD_TORCH_ELASTIC": json.dumps(elastic),
            "KFD_TORCH_WORKLOAD": json.dumps(spec["workload"]),
            "KFD_TORCH_AGENT": str(index),
            **spec.get("env", {}),
        })
        import launch_recorder
        from preloaded_server import as_if_imported_here

        as_if_imported_here()  # flytekit's log handler as in a pod: JSON lines on standard error
        import torch.distributed.elastic.rendezvous.c10d_rendezvous_backend  # noqa: F401  (imported before the clock)
        import torch.distributed.elastic.rendezvous.dynamic_rendezvous  # noqa: F401
        import torch_task  # noqa: F401  (the resolver finds it imported)
        from flyteidl.core import literals_pb2  # noqa: F401
        from flytekit.bin.entrypoint import _execute_task
        from flytekit.core.context_manager import FlyteContextManager
        from flytekit.core.type_engine import TypeEngine
        from flytekit.core.utils import write_proto_to_file
        from flytekit.models.literals import LiteralMap

        if os.environ.get("KFD_TORCH_DEBUG"):  # torch elastic's INFO and DEBUG lines too, which a pod does not show
            debug_log()
        faulthandler.register(signal.SIGUSR1)  # as pyflyte-execute does (execute_task_cmd)
        launch_recorder.install(f"{work}.launch.jsonl")
        record_raised(f"{work}.raised.json")
        ctx = FlyteContextManager.current_context()
        literal = TypeEngine.to_literal(ctx, spec["x"], int, TypeEngine.to_literal_type(int))
        write_proto_to_file(LiteralMap(literals={"x": literal}).to_flyte_idl(), os.path.join(work, "inputs.pb"))
        told = os.write(ready, b".") == 1
        start = float(os.read(go, 64).decode()) + spec["agents"][index]["start"]
        time.sleep(max(0.0, start - time.monotonic()))
        cue = spec["agents"][index].get("cue")
        if cue is not None:
            after_worker_of(os.path.join(spec["workdir"], f"agent{cue[0]}.stdout"), cue[1])
        with open(f"{work}.start", "w") as f:
            f.write(repr(time.monotonic()))
        _execute_task(inputs=os.path.join(work, "inputs.pb"), output_prefix=os.path.join(work, "out"), test=False,
                      raw_output_data_prefix=os.path.join(work, "raw"),
                      resolver="flytekit.core.python_auto_container.default_task_resolver",
                      resolver_args=["task-module", "torch_task", "task-name", "work"])
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        if not told:  # the coordinator waits for no one that failed before the start
            os.write(ready, b"!")
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    sys.path.insert(0, HERE)
    result = {"agents": [None] * len(spec["agents"]), "skipped": None}
    if spec.get("shm_size"):
        result["skipped"] = private_dev_shm(spec["shm_size"])
    alive, go = {}, []
    ready_r, ready_w = os.pipe()
    if not result["skipped"]:
        for index, a in enumerate(spec["agents"]):
            if a["start"] is None:
                continue
            go_r, go_w = os.pipe()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                agent(spec, index, ready_w, go_r)
            go.append(go_w)
            alive[pid] = index
            result["agents"][index] = {"pid": pid, "killed": False}
            with open(os.path.join(spec["workdir"], "pgids"), "a") as f:
                f.write(f"{pid}\n")
    waiting = time.monotonic() + 120
    ready = 0
    while ready < len(go) and time.monotonic() < waiting:  # every agent has imported what it needs
        if select.select([ready_r], [], [], 1)[0]:
            ready += len(os.read(ready_r, 64))
    t0 = result["t0"] = time.monotonic() + 0.1
    for w in go:
        try:
            os.write(w, repr(t0).encode())
        except BrokenPipeError:  # that agent failed before the start: its log says why
            pass
    deadline = t0 + spec["deadline"]
    while alive:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid in alive:
            index = alive.pop(pid)
            result["agents"][index].update(ended=time.monotonic(), status=os.waitstatus_to_exitcode(status))
            _kill_group(pid)
            continue
        if time.monotonic() > deadline:
            for pid, index in alive.items():
                result["agents"][index]["killed"] = True
                _kill_group(pid)
        time.sleep(0.02)
    with open(os.path.join(spec["workdir"], "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


if __name__ == "__main__":  # the training processes started with "spawn" import this file again
    main()
