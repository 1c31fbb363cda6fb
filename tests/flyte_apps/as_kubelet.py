"""Run a script as the kubelet would start the pod's container: a ``/dev/shm`` of the size the kubelet mounts for
the pod's memory-backed volume, and the container's memory and CPU limits in a cgroup of its own (root only).

Usage: as_kubelet.py POD_JSON SCRIPT ARG...

``POD_JSON`` is ``{"shm_size": BYTES | null, "cgroups": [DIR, ...], "podinfo": {"path", "labels", "annotations"}}``: a tmpfs of that size (in bytes, as the kubelet writes it) mounted at
``/dev/shm`` in a mount namespace of this process's own (as ``unshare -m``, then ``mount -t tmpfs -o size=...``;
``torch_agents.private_dev_shm``), and the cgroup folders this process joins (``cgroup.procs``), made and limited
by the test (``receipt_pods.kubelet_cgroups``), and the files of a downward API volume in ``podinfo``'s folder
(the pod's labels and annotations). Then ``SCRIPT`` runs as ``python SCRIPT ARG...`` would, in this
process: everything it starts (the elastic agent's workers) is in the same namespace and cgroups, as in a pod.
"""

import json
import os
import runpy
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from torch_agents import private_dev_shm

    pod = json.loads(sys.argv[1])
    if pod.get("shm_size"):
        failed = private_dev_shm(pod["shm_size"])
        if failed:
            sys.exit(f"as_kubelet.py: {failed}")
    podinfo = pod.get("podinfo")
    if podinfo:  # a downward API volume: the kubelet writes key="value" lines, keys sorted (fieldpath.FormatMap);
        # Go's %q quotes printable text as JSON does
        for part in ("labels", "annotations"):
            with open(os.path.join(podinfo["path"], part), "w", encoding="utf-8") as f:
                f.write("\n".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(podinfo[part].items())))
    for folder in pod.get("cgroups") or []:
        with open(os.path.join(folder, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    script = os.path.abspath(sys.argv[2])
    sys.argv = [script, *sys.argv[3:]]
    sys.path[0] = os.path.dirname(script)
    runpy.run_path(script, run_name="__main__")
