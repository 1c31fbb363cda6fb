"""Python processes with the SDKs imported already, for tests that start many of them (``flyte_apps/preloaded_server.py``).

A test asks ``PreloadedPython.run([SCRIPT, ARG...], cwd=..., env=...)`` where it would run
``subprocess.run([sys.executable, SCRIPT, ARG...], cwd=..., env=..., capture_output=True, text=True)`` and gets
the same ``subprocess.CompletedProcess``: the script runs in a process of its own, forked from a server that
imported the given modules (flytekit, torch) once. kfdefaults and the task's modules are imported by each
process afresh. Threads may call ``run`` at once: their processes run side by side.
"""

from __future__ import annotations

import json
import os
import itertools
import subprocess
import sys
import threading

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flyte_apps", "preloaded_server.py")


class PreloadedPython:
    def __init__(self, *modules: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
        self._server = subprocess.Popen([sys.executable, SERVER, *modules], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, encoding="utf-8", env=env)
        self._ids = itertools.count()
        self._writing = threading.Lock()
        self._answered = threading.Condition()
        self._answers: dict[int, dict] = {}
        self._reader = threading.Thread(target=self._read_answers, daemon=True)
        self._reader.start()

    def _read_answers(self) -> None:
        assert self._server.stdout is not None
        for line in self._server.stdout:
            answer = json.loads(line)
            with self._answered:
                self._answers[answer["id"]] = answer
                self._answered.notify_all()
        with self._answered:
            self._answers[None] = {}  # the server ended
            self._answered.notify_all()

    def run(self, argv: list[str], *, cwd: str | os.PathLike, env: dict[str, str], warnings: str | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
        """Run ``python argv...`` in ``cwd`` with exactly ``env``; ``warnings`` is ``python -W``'s action."""
        request = {"id": next(self._ids), "argv": [str(a) for a in argv], "cwd": str(cwd), "env": dict(env),
                   "warnings": warnings, "timeout": timeout}
        assert self._server.stdin is not None
        with self._writing:
            self._server.stdin.write(json.dumps(request) + "\n")
            self._server.stdin.flush()
        with self._answered:
            self._answered.wait_for(lambda: request["id"] in self._answers or None in self._answers)
            answer = self._answers.pop(request["id"], None)
        assert answer is not None, f"the preloaded Python server ended (exit status {self._server.poll()})"
        return subprocess.CompletedProcess([sys.executable, *request["argv"]], answer["returncode"],
                                           answer["stdout"], answer["stderr"])

    def close(self) -> None:
        """End the server (it holds nothing to save; its interpreter's own exit with torch loaded takes seconds)."""
        self._server.kill()
        self._server.wait(timeout=60)
