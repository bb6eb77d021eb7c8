# The bare warm cost of a candidate for bench evaluation-quick-candidate: one
# Python, started once with numpy imported, runs each request's scripts (the
# candidate's command and the evaluator's, as `python script args...` would,
# but in this same process) in a fresh folder and answers the milliseconds
# they took. No sandbox, no process start: the candidate's own work only.
import json
import os
import runpy
import shutil
import sys
import tempfile
import time

import numpy  # noqa: F401 - warmed, as the sandbox's warm interpreters are


def run_script(argv):
    saved_argv, saved_path0 = sys.argv[:], sys.path[0]
    sys.argv[:] = argv
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            raise RuntimeError(f"{argv[0]} exited with {e.code!r}") from None
    finally:
        sys.argv[:] = saved_argv
        sys.path[0] = saved_path0


def main():
    for line in sys.stdin:
        request = json.loads(line)
        work = tempfile.mkdtemp(prefix="thetaevolve-bench-warm-")
        program = os.path.join(work, request["programName"])
        with open(program, "w", encoding="utf-8") as f:
            f.write(request["code"])
        fill = lambda args: [a.replace("{program}", program).replace("{work}", work) for a in args]  # noqa: E731
        os.chdir(work)
        started = time.perf_counter()
        saved_stdout = sys.stdout
        sys.stdout = open(os.devnull, "w")
        try:
            for argv in request["scripts"]:
                run_script(fill(argv))
        finally:
            sys.stdout.close()
            sys.stdout = saved_stdout
        elapsed = (time.perf_counter() - started) * 1000
        os.chdir("/")
        shutil.rmtree(work, ignore_errors=True)
        print(json.dumps({"ms": elapsed}), flush=True)


main()
