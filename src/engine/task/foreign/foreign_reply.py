# The trusted step of a task folder in OpenEvolve's or ShinkaEvolve's layout:
# reads the file run_foreign.py wrote in the sandbox and prints ThetaEvolve's
# one-line reply. It maps, it does not judge: the score is the evaluator's
# combined_score exactly (higher is better), its other numeric metrics are
# passed on, and a result the evaluator itself marks as failed (OpenEvolve:
# an "error" text; ShinkaEvolve: correct.json false) is invalid.
#
#   python3 foreign_reply.py SOLUTION
import json
import sys

from foreign_eval import reply_of_file

if __name__ == "__main__":
    print(json.dumps(reply_of_file(sys.argv[1]), allow_nan=False))
