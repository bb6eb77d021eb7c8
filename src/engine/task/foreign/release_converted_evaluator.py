# The trusted evaluator of a converted ThetaEvolve release folder
# (`thetaevolve convert`; copied there as thetaevolve_release_evaluator.py,
# beside thetaevolve_release_stubs.py): reads only the solution file the
# program saved and scores it with the folder's own evaluators/verify.py, as
# the release's ObjectiveBasedProblemEvaluator does: validate_solution, then
# compute_objective_value (the raw objective; task.json's direction makes the
# score). No solution: unreadable (-0.2); invalid, or a ValueError while
# scoring: invalid (-0.1); any other error while scoring: -0.2, as the release.
#
#   python3 thetaevolve_release_evaluator.py SOLUTION TASK_DIR VARIABLES_JSON
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from thetaevolve_release_stubs import install  # noqa: E402

MAX_REASON = 500


def reply(valid, objective=None, reason="", unreadable=False):
    out = {"valid": valid, "objective": objective, "metrics": {}, "reason": reason[:MAX_REASON]}
    if unreadable:
        out["unreadable"] = True
    return out


def score(solution, task_dir, variables):
    try:
        with open(solution, encoding="utf-8") as f:
            data = json.load(f).get("current")
    except (OSError, ValueError, AttributeError) as err:
        return reply(False, reason=f"the saved solution is not readable: {err}", unreadable=True)
    if not data:
        return reply(False, reason="No solution found in program output", unreadable=True)
    install(variables)
    sys.path.insert(0, os.path.join(task_dir, "evaluators"))
    import verify

    try:
        valid, message = verify.validate_solution(data)
        if not valid:
            return reply(False, reason=f"Validation failed: {message}")
        objective = verify.compute_objective_value(data)
    except ValueError as err:
        return reply(False, reason=str(err))
    except Exception as err:  # noqa: BLE001 - the release scores it as a failed run
        return reply(False, reason=f"Scoring failed: {err}", unreadable=True)
    if isinstance(objective, bool) or not isinstance(objective, (int, float)) or not math.isfinite(objective):
        return reply(False, reason=f"compute_objective_value gave {objective!r}, not a finite number")
    return reply(True, float(objective))


if __name__ == "__main__":
    print(json.dumps(score(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))))
