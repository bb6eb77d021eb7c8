# The trusted step of a task folder in OpenEvolve's or ShinkaEvolve's layout:
# reads the file run_foreign.py wrote in the sandbox and prints ThetaEvolve's
# one-line reply. It maps, it does not judge: the score is the evaluator's
# combined_score exactly (higher is better), its other numeric metrics are
# passed on, and a result the evaluator itself marks as failed (OpenEvolve:
# an "error" text; ShinkaEvolve: correct.json false) is invalid.
#
#   python3 foreign_reply.py SOLUTION
import json
import math
import sys

MAX_REASON = 500


def number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def reply(valid, objective=None, metrics=None, reason="", unreadable=False):
    out = {"valid": valid, "objective": objective, "metrics": metrics or {}, "reason": reason[:MAX_REASON]}
    if unreadable:
        out["unreadable"] = True
    print(json.dumps(out, allow_nan=False))


def numeric_metrics(metrics):
    """Every numeric metric but combined_score; one level of nested objects (ShinkaEvolve's public/private) as dotted names."""
    out = {}
    for name, value in metrics.items():
        if name in ("combined_score", "error"):
            continue
        if number(value):
            out[name] = value
        elif isinstance(value, dict):
            for inner, inner_value in value.items():
                if number(inner_value):
                    out[f"{name}.{inner}"] = inner_value
    return out


def main(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as err:
        return reply(False, reason=f"the evaluator's output is not readable JSON: {err}", unreadable=True)
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict) or data.get("layout") not in ("openevolve", "shinka"):
        return reply(False, reason="the evaluator's output does not have the expected shape", unreadable=True)
    metrics = data["metrics"]
    score = metrics.get("combined_score")
    objective = score if number(score) else None
    others = numeric_metrics(metrics)
    if data["layout"] == "shinka" and data.get("correct") is False:
        error = data.get("error")
        return reply(False, objective, others, f"correct.json: incorrect{': ' + error if isinstance(error, str) and error else ''}")
    error = metrics.get("error")
    if isinstance(error, str) and error.strip():
        return reply(False, objective, others, f"the evaluator reported an error: {error}")
    if objective is None:
        return reply(False, None, others, f"the evaluator returned no finite combined_score (got {json.dumps(score)[:80]})")
    return reply(True, objective, others)


if __name__ == "__main__":
    main(sys.argv[1])
