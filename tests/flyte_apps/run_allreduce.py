"""Run the all-reduce workflow locally; print its result. Usage: run_allreduce.py RECORD_FILE X"""

import sys

if __name__ == "__main__":  # the spawn start method imports this file again in every worker
    import launch_recorder

    launch_recorder.install(sys.argv[1])
    from allreduce_app import wf

    print("RESULT", wf(x=int(sys.argv[2])))
