# Runs inside the sandbox, as the candidate: imports the task folder's own
# evaluator (OpenEvolve's evaluator.py or ShinkaEvolve's evaluate.py), lets it
# score the program, and writes what it returned as the solution file. The
# evaluator imports and runs the candidate in this same process, so nothing
# here is protected from a hostile candidate; foreign_reply.py, outside the
# sandbox, only maps this file to ThetaEvolve's reply.
#
#   python3 run_foreign.py openevolve TASK_DIR PROGRAM OUT [THRESHOLDS|off]
#   python3 run_foreign.py shinka TASK_DIR PROGRAM OUT
# An exception escaping the evaluator exits 1 (the candidate crashed).
import importlib.util
import json
import math
import os
import sys

MAX_TEXT = 2000


def plain(value, depth=0):
    """A JSON-safe copy: finite numbers, short strings, booleans, None, and dicts two levels deep."""
    if isinstance(value, bool) or value is None:
        return value
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 0) == 0:
        value = value.item()  # numpy scalars
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        number = float(value)
        if not math.isfinite(number):
            return str(number)
        return value if isinstance(value, int) and abs(value) < 2**53 else number
    if isinstance(value, dict) and depth < 2:
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    text = value if isinstance(value, str) else repr(value)
    return text[:MAX_TEXT]


def load_module(name, path):
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def metrics_of(result, what):
    """OpenEvolve's contract: a dict of metrics, or an EvaluationResult (.metrics, .artifacts)."""
    if isinstance(result, dict):
        return dict(result)
    metrics = getattr(result, "metrics", None)
    if isinstance(metrics, dict):
        return dict(metrics)
    raise TypeError(f"{what} returned {type(result).__name__}, not a dict or an EvaluationResult")


def passes(metrics, threshold):
    """OpenEvolve's threshold rule: combined_score when numeric, else the mean of the numeric metrics but 'error'."""
    score = metrics.get("combined_score")
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        return float(score) >= threshold
    values = [float(v) for k, v in metrics.items() if k != "error" and isinstance(v, (int, float)) and not isinstance(v, bool)]
    return bool(values) and sum(values) / len(values) >= threshold


def merged(*stages):
    out = {}
    for metrics in stages:
        for name, value in metrics.items():
            if name != "error" and isinstance(value, (int, float)) and not isinstance(value, bool):
                out[name] = float(value)
    return out


def cascade(module, program, thresholds):
    """OpenEvolve's cascade: stage 1, then 2 and 3 while the thresholds are passed; a later stage's failure keeps the earlier metrics."""
    stage1 = metrics_of(module.evaluate_stage1(program), "evaluate_stage1")
    if not thresholds or not passes(stage1, thresholds[0]) or not hasattr(module, "evaluate_stage2"):
        return stage1
    try:
        stage2 = metrics_of(module.evaluate_stage2(program), "evaluate_stage2")
    except Exception as err:  # noqa: BLE001 - OpenEvolve keeps stage 1's result
        print(f"evaluate_stage2 failed: {err!r}", file=sys.stderr)
        return {**stage1, "stage2_passed": 0.0}
    both = merged(stage1, stage2)
    if len(thresholds) < 2 or not passes(both, thresholds[1]) or not hasattr(module, "evaluate_stage3"):
        return both
    try:
        stage3 = metrics_of(module.evaluate_stage3(program), "evaluate_stage3")
    except Exception as err:  # noqa: BLE001
        print(f"evaluate_stage3 failed: {err!r}", file=sys.stderr)
        return {**both, "stage3_passed": 0.0}
    return merged(both, stage3)


def run_openevolve(task_dir, program, thresholds):
    module = load_module("evaluation_module", os.path.join(task_dir, "evaluator.py"))
    if thresholds is not None and hasattr(module, "evaluate_stage1"):
        metrics = cascade(module, program, thresholds)
    else:
        metrics = metrics_of(module.evaluate(program), "evaluate")
    return {"layout": "openevolve", "metrics": plain(metrics)}


def run_shinka(task_dir, program):
    module = load_module("evaluate", os.path.join(task_dir, "evaluate.py"))
    results_dir = os.path.abspath("shinka_results")
    os.makedirs(results_dir, exist_ok=True)
    module.main(program, results_dir)
    with open(os.path.join(results_dir, "metrics.json"), encoding="utf-8") as f:
        metrics = json.load(f)
    if not isinstance(metrics, dict):
        raise TypeError("metrics.json does not hold an object")
    correct = {}
    correct_path = os.path.join(results_dir, "correct.json")
    if os.path.exists(correct_path):
        with open(correct_path, encoding="utf-8") as f:
            correct = json.load(f)
    if not isinstance(correct, dict):
        correct = {}
    return {"layout": "shinka", "metrics": plain(metrics), "correct": plain(correct.get("correct")), "error": plain(correct.get("error"))}


def main(argv):
    layout, task_dir, program, out = argv[1:5]
    out = os.path.abspath(out)
    program = os.path.abspath(program)
    if layout == "openevolve":
        spec = argv[5] if len(argv) > 5 else "off"
        thresholds = None if spec == "off" else [float(x) for x in spec.split(",") if x != ""]
        result = run_openevolve(task_dir, program, thresholds)
    elif layout == "shinka":
        result = run_shinka(task_dir, program)
    else:
        raise SystemExit(f"unknown layout {layout!r}")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, allow_nan=False)


if __name__ == "__main__":
    main(sys.argv)
