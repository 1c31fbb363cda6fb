"""What the benchmarks share: the profile fragments of the render cases, how the command line is run, and the
wait after writing files before a render may be replayed."""

from __future__ import annotations

import os
import sys
import time

PLATFORM_FRAGMENT = """\
description: benchmark profile, platform layer
extends: elastic-gpu-default
elastic:
  nnodes: "2:4"
  nproc_per_node: 8
pod_template:
  labels:
    platform.example.com/pool: a100
  spec:
    nodeSelector:
      cloud.example.com/gpu: a100
    containers:
      - name: primary
        resources:
          limits:
            nvidia.com/gpu: "8"
            memory: 320Gi
    tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
    volumes:
      - name: dshm
        emptyDir:
          medium: Memory
          sizeLimit: 64Gi
"""

TEAM_FRAGMENT = """\
pod_template:
  labels:
    team: vision
  spec:
    containers:
      - name: primary
        image: registry.example.com/vision/train:2.1
        env:
          - name: WANDB_PROJECT
            value: detection
      - name: log-shipper
        image: registry.example.com/infra/log-shipper:1.4
"""


REPLAY_SETTLE_SECONDS = 2.5
"""A render is not kept for replay while any of its inputs changed less than two seconds before it (their change
time, which cannot be set back): files the benchmark has just written are older than that in a user's
checkout, so the benchmark waits this long after writing them."""


def settle() -> None:
    """Wait until files just written are as old as a checkout's (:data:`REPLAY_SETTLE_SECONDS`)."""
    time.sleep(REPLAY_SETTLE_SECONDS)


def child_env(cache: str, **extra: str) -> dict[str, str]:
    """This environment without any KFDEFAULTS_ setting or PYTHONDONTWRITEBYTECODE, the cache in ``cache``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["KFDEFAULTS_CACHE_DIR"] = cache
    env.update(extra)
    return env


def kfdefaults_command(python: str = sys.executable) -> list[str]:
    """The console script beside ``python``, as users run it (else ``python -m kfdefaults.cli``)."""
    script = os.path.join(os.path.dirname(python), "kfdefaults")
    return [script] if os.path.isfile(script) and os.access(script, os.X_OK) else [python, "-m", "kfdefaults.cli"]
