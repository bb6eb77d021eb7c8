# The trusted step of a task folder in OpenEvolve's, ShinkaEvolve's or the
# ThetaEvolve release's layout: reads the file run_foreign.py (run_release.py)
# wrote in the sandbox and prints ThetaEvolve's
# one-line reply. It maps, it does not judge: the score is the evaluator's
# combined_score exactly (higher is better), its other numeric metrics are
# passed on, and a result the evaluator itself marks as failed (OpenEvolve:
# an "error" text; ShinkaEvolve: correct.json false) is invalid. An OpenEvolve
# evaluator that returns no combined_score is ranked as OpenEvolve ranks it:
# by the mean of its numeric metrics but the feature dimensions. A module the
# evaluator could not import (the wrapper says so) is no score: exit 2.
#
#   python3 foreign_reply.py SOLUTION [FEATURE_DIMENSIONS, comma-separated]
import json
import sys

from foreign_eval import OPENEVOLVE_FEATURE_DIMENSIONS, infrastructure_problem, reply_of_file

if __name__ == "__main__":
    infrastructure = infrastructure_problem(sys.argv[1])
    if infrastructure:
        # Not the program's failure: no score (the run's health check names it on the starting program).
        sys.stderr.write(f"{infrastructure}\n")
        sys.exit(2)
    dimensions = tuple(d for d in sys.argv[2].split(",") if d) if len(sys.argv) > 2 else OPENEVOLVE_FEATURE_DIMENSIONS
    print(json.dumps(reply_of_file(sys.argv[1], dimensions), allow_nan=False))
