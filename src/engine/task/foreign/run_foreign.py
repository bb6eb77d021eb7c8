# Runs inside the sandbox, as the candidate: imports the task folder's own
# evaluator (OpenEvolve's evaluator.py or ShinkaEvolve's evaluate.py), lets it
# score the program, and writes what it returned as the solution file. The
# evaluator imports and runs the candidate in this same process, so nothing
# here is protected from a hostile candidate; foreign_reply.py, outside the
# sandbox, only maps this file to ThetaEvolve's reply.
#
#   python3 run_foreign.py openevolve TASK_DIR PROGRAM OUT [THRESHOLDS|off [EVALUATOR_FILE_NAME [STAGE_TIMEOUT_SEC]]]
#   python3 run_foreign.py shinka TASK_DIR PROGRAM OUT
# An exception escaping the evaluator exits 1 (the candidate crashed).
import json
import os
import sys

from foreign_eval import run_openevolve, run_shinka


def main(argv):
    layout, task_dir, program, out = argv[1:5]
    # Processes the evaluator starts find our stand-in packages and its own modules too.
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, task_dir, os.environ.get("PYTHONPATH", "")) if p)
    out = os.path.abspath(out)
    program = os.path.abspath(program)
    if layout == "openevolve":
        spec = argv[5] if len(argv) > 5 else "off"
        thresholds = None if spec == "off" else [float(x) for x in spec.split(",") if x != ""]
        evaluator = argv[6] if len(argv) > 6 else "evaluator.py"
        stage_timeout = float(argv[7]) if len(argv) > 7 else None
        result = run_openevolve(task_dir, program, thresholds, evaluator, stage_timeout)
    elif layout == "shinka":
        result = run_shinka(task_dir, program)
    else:
        raise SystemExit(f"unknown layout {layout!r}")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, allow_nan=False)


if __name__ == "__main__":
    main(sys.argv)
