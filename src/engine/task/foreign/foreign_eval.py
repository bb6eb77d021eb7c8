# ThetaEvolve's one implementation of running another system's evaluator and
# reading what it returned. Used inside the sandbox by run_foreign.py, outside
# by foreign_reply.py (the trusted step), and copied into a converted folder
# as thetaevolve_foreign.py by `thetaevolve convert`.
import functools
import importlib.util
import json
import math
import os
import re
import signal
import sys

MAX_TEXT = 2000
# Evaluator feedback kept per program (OpenEvolve's artifacts, ShinkaEvolve's
# text_feedback): OpenEvolve's max_artifact_bytes, in characters; the prompt
# shows at most thetaevolve.prompt.feedbackChars of it.
MAX_FEEDBACK = 20 * 1024
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def feedback_text(parts):
    """Feedback as text: 'name: value' lines (a lone text as it is), control characters but newline and tab stripped, bounded."""
    lines = []
    for name, value in parts.items():
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if not isinstance(value, str):
            value = json.dumps(plain(value), default=str)
        lines.append(value if name == "" else f"{name}: {value}")
    text = CONTROL.sub("", "\n".join(lines)).strip()
    return text if len(text) <= MAX_FEEDBACK else text[:MAX_FEEDBACK] + "..."


def artifacts_of(result):
    """OpenEvolve's artifacts: an EvaluationResult's .artifacts, or a dict result's "artifacts" (as its k_module_problem returns them)."""
    artifacts = result.get("artifacts") if isinstance(result, dict) else getattr(result, "artifacts", None)
    return dict(artifacts) if isinstance(artifacts, dict) else {}


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
    """OpenEvolve's threshold rule: combined_score when numeric, else the mean of the numeric metrics but 'error'
    (a bool is numeric there, true counting as 1, as in its isinstance(value, (int, float)))."""
    score = metrics.get("combined_score")
    if isinstance(score, (int, float)):
        return float(score) >= threshold
    values = [float(v) for k, v in metrics.items() if k != "error" and isinstance(v, (int, float))]
    return bool(values) and sum(values) / len(values) >= threshold


def merged(*stages):
    """OpenEvolve's merge of cascade stages: every int or float (a bool too, as 1.0 or 0.0) but 'error', as a float."""
    out = {}
    for metrics in stages:
        for name, value in metrics.items():
            if name != "error" and isinstance(value, (int, float)):
                out[name] = float(value)
    return out


def cascade_stages(module, thresholds):
    """How many stages OpenEvolve's cascade can run: stage 1, then each next stage defined while a threshold leads to it."""
    stages = 1
    for name, needed in (("evaluate_stage2", 1), ("evaluate_stage3", 2)):
        if not hasattr(module, name) or len(thresholds) < needed:
            break
        stages += 1
    return stages


class StageTimeout(BaseException):
    """A cascade stage past OpenEvolve's per-stage timeout (a BaseException, so an evaluator's `except Exception` lets it by)."""


def timed_stage(function, program, artifacts, seconds):
    """run_stage within `seconds` (None: no limit of its own); the main thread's SIGALRM, as this process has no other use for it."""
    if not seconds or not hasattr(signal, "setitimer"):
        return run_stage(function, program, artifacts)

    def expire(_signum, _frame):
        raise StageTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return run_stage(function, program, artifacts)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def later_stage(name, number, earlier, program, artifacts, module, stage_timeout):
    """Stage 2 or 3 as OpenEvolve runs it: its metrics, or (raised, or past the timeout) the earlier metrics marked as it marks them."""
    try:
        return metrics_of(timed_stage(getattr(module, name), program, artifacts, stage_timeout), name), None
    except StageTimeout:
        print(f"{name} timed out after {stage_timeout} s", file=sys.stderr)
        artifacts.update({f"stage{number}_timeout": True, "failure_stage": f"stage{number}"})
        return None, {**earlier, f"stage{number}_passed": 0.0, "timeout": True}
    except Exception as err:  # noqa: BLE001 - OpenEvolve keeps the earlier stages' result
        print(f"{name} failed: {err!r}", file=sys.stderr)
        artifacts.update({f"stage{number}_stderr": str(err)[:MAX_TEXT], "failure_stage": f"stage{number}"})
        return None, {**earlier, f"stage{number}_passed": 0.0}


def cascade(module, program, thresholds, artifacts, stage_timeout=None):
    """OpenEvolve's cascade: stage 1, then 2 and 3 while the thresholds are passed; a later stage that raises or passes
    `stage_timeout` keeps the earlier metrics. Returns the metrics and the stage they end at (a stage that failed: that stage).
    Stage 1 has the whole candidate's limit (a timeout there is the program's timeout)."""
    stage1 = metrics_of(run_stage(module.evaluate_stage1, program, artifacts), "evaluate_stage1")
    if not thresholds or not passes(stage1, thresholds[0]) or not hasattr(module, "evaluate_stage2"):
        return stage1, 1
    stage2, failed = later_stage("evaluate_stage2", 2, stage1, program, artifacts, module, stage_timeout)
    if failed is not None:
        return failed, 2
    both = merged(stage1, stage2)
    if len(thresholds) < 2 or not passes(both, thresholds[1]) or not hasattr(module, "evaluate_stage3"):
        return both, 2
    stage3, failed = later_stage("evaluate_stage3", 3, both, program, artifacts, module, stage_timeout)
    if failed is not None:
        return failed, 3
    return merged(both, stage3), 3


def run_stage(function, program, artifacts):
    """One evaluation call; its artifacts are merged into `artifacts`, as OpenEvolve merges the stages'."""
    result = function(program)
    artifacts.update(artifacts_of(result))
    return result


def run_openevolve(task_dir, program, thresholds, evaluator="evaluator.py", stage_timeout=None):
    module = load_module("evaluation_module", os.path.join(task_dir, evaluator))
    artifacts = {}
    reached = None
    if thresholds is not None and hasattr(module, "evaluate_stage1"):
        metrics, stage = cascade(module, program, thresholds, artifacts, stage_timeout)
        reached = [stage, cascade_stages(module, thresholds)]
    else:
        metrics = metrics_of(run_stage(module.evaluate, program, artifacts), "evaluate")
    metrics.pop("artifacts", None)
    out = {"layout": "openevolve", "metrics": plain(metrics), "feedback": feedback_text(artifacts)}
    if reached:
        out["cascade"] = reached
    return out


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
    feedback = metrics.pop("text_feedback", None)
    return {
        "layout": "shinka",
        "metrics": plain(metrics),
        "correct": plain(correct.get("correct")),
        "error": plain(correct.get("error")),
        "feedback": feedback_text({"": feedback}) if feedback else "",
    }


MAX_REASON = 500
# A failure's reason: its headline, then the end of the program's stderr after this marker, as the sandbox writes a
# crashed candidate's (src/engine/common/evaluationReason.ts, src/engine/sandbox/trustedEvaluator.ts).
OUTPUT_TAIL_MARKER = "; stderr ends with:\n"
OUTPUT_TAIL_CHARS = 600
# What run_release.py reports it could not run (a traceback's end and the problem): the reason shows its end.
MAX_INFRASTRUCTURE = 4000
# The metric naming the stage a cascade ended at, of how many ("1 of 2", src/engine/operators/cascade.ts): a text, ours,
# apart from the evaluator's numbers as score_rule is.
CASCADE_STAGE_METRIC = "cascade_stage"
# OpenEvolve's database.feature_dimensions default (openevolve/config.py): left out of the mean.
OPENEVOLVE_FEATURE_DIMENSIONS = ("complexity", "diversity")
METRIC_MEAN_RULE = "no combined_score: the mean of the numeric metrics, as OpenEvolve ranks it"


def openevolve_fitness(metrics, feature_dimensions):
    """OpenEvolve's get_fitness_score without combined_score: the mean of the numeric (int, float, bool) metrics that are not
    NaN, the feature dimensions left out unless nothing else is numeric; None when no metric is numeric (OpenEvolve: 0.0)."""

    def numeric(items):
        return [float(v) for k, v in items if isinstance(v, (int, float)) and not math.isnan(float(v))]

    values = numeric((k, v) for k, v in metrics.items() if k not in feature_dimensions) or numeric(metrics.items())
    return sum(values) / len(values) if values else None


def number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def with_output(reason, output):
    """`reason` (bounded) and the end of a program's stderr after the marker (nothing added without one)."""
    reason = reason[:MAX_REASON]
    output = output.strip()
    if not output:
        return reason
    tail = output if len(output) <= OUTPUT_TAIL_CHARS else "..." + output[-OUTPUT_TAIL_CHARS:]
    return f"{reason}{OUTPUT_TAIL_MARKER}{tail}"


def reply(valid, objective=None, metrics=None, reason="", unreadable=False, feedback="", output=""):
    """ThetaEvolve's evaluator reply (src/engine/task/README.md, "The contract"); `output`: the program's stderr, whose end
    follows the reason."""
    out = {"valid": valid, "objective": objective, "metrics": metrics or {}, "reason": with_output(reason, output)}
    if unreadable:
        out["unreadable"] = True
    if feedback:
        out["feedback"] = feedback[:MAX_FEEDBACK]
    return out


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


def infrastructure_problem(path):
    """What the wrapper reported it lacked to run the evaluator at all (run_release.py: a module this Python cannot import), or None."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    problem = data.get("infrastructure") if isinstance(data, dict) else None
    # Its end: the traceback's last lines and the problem, which run_release.py writes last.
    return problem[-MAX_INFRASTRUCTURE:] if isinstance(problem, str) and problem else None


def reply_of_file(path, feature_dimensions=OPENEVOLVE_FEATURE_DIMENSIONS):
    """The reply for the file run_foreign.py wrote."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as err:
        return reply(False, reason=f"the evaluator's output is not readable JSON: {err}", unreadable=True)
    return reply_of(data, feature_dimensions)


# The release's error codes (modular_utils/error_constants.py): what each says of the program.
RELEASE_INVALID = -0.1
RELEASE_ERROR_BOUNDARY = -0.1


def release_reply(data):
    """A ThetaEvolve release evaluator's result: the raw objective (metrics.objective_value; combined_score where the evaluator
    gives none) when it is valid; -0.1 an invalid solution; any other error code (-0.2) a run that failed or saved nothing."""
    metrics = data["metrics"]
    feedback = data.get("feedback") if isinstance(data.get("feedback"), str) else ""
    others = numeric_metrics(metrics)
    score = metrics.get("combined_score")
    error = feedback.split("\n")[0] if feedback else ""
    # A failed run of the program: the release's text quotes its stderr after " | Error: "; the headline, then the
    # stderr's end, as a crashed candidate's reason has it.
    output = data.get("program_stderr") if isinstance(data.get("program_stderr"), str) else ""
    if output:
        error = error.split(" | ")[0]
    if not number(score):
        return reply(False, None, others, f"the evaluator returned no finite combined_score (got {json.dumps(score)[:80]})", True, feedback)
    if score <= RELEASE_ERROR_BOUNDARY or metrics.get("validity") == 0:
        if score == RELEASE_INVALID:
            return reply(False, None, others, error or "the solution failed the validation", False, feedback)
        return reply(False, None, others, error or f"the evaluator scored it {score}", True, feedback, output)
    objective = metrics.get("objective_value")
    return reply(True, objective if number(objective) else score, others, "", False, feedback)


def reply_of(data, feature_dimensions=OPENEVOLVE_FEATURE_DIMENSIONS):
    """The reply for what an evaluator returned: combined_score as the objective, exactly (OpenEvolve without one: the mean of
    the numeric metrics); its own failure marks invalid."""
    if isinstance(data, dict) and isinstance(data.get("metrics"), dict) and data.get("layout") == "release":
        return release_reply(data)
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict) or data.get("layout") not in ("openevolve", "shinka"):
        return reply(False, reason="the evaluator's output does not have the expected shape", unreadable=True)
    # The evaluator's feedback (artifacts, text_feedback) goes with every reply, valid or not.
    reply_with_feedback = functools.partial(reply, feedback=data.get("feedback") if isinstance(data.get("feedback"), str) else "")
    metrics = data["metrics"]
    score = metrics.get("combined_score")
    objective = score if number(score) else None
    others = numeric_metrics(metrics)
    reached = data.get("cascade")
    if isinstance(reached, list) and len(reached) == 2 and all(isinstance(n, int) and 1 <= n <= 3 for n in reached):
        # The stage the cascade ended at, as a cascade of task.json says it (src/engine/operators/cascade.ts); never ranked.
        others[CASCADE_STAGE_METRIC] = f"{reached[0]} of {reached[1]}"
    if data["layout"] == "shinka" and data.get("correct") is False:
        error = data.get("error")
        return reply_with_feedback(False, objective, others, f"correct.json: incorrect{': ' + error if isinstance(error, str) and error else ''}")
    error = metrics.get("error")
    if isinstance(error, str) and error.strip():
        return reply_with_feedback(False, objective, others, f"the evaluator reported an error: {error}")
    if data["layout"] == "openevolve" and "combined_score" not in metrics:
        # OpenEvolve ranks such a program by the mean of its numeric metrics (get_fitness_score); so do we, and say so.
        fitness = openevolve_fitness(metrics, feature_dimensions)
        if fitness is not None and math.isfinite(fitness):
            return reply_with_feedback(True, fitness, {**others, "score_rule": METRIC_MEAN_RULE})
    if objective is None:
        return reply_with_feedback(False, None, others, f"the evaluator returned no finite combined_score (got {json.dumps(score)[:80]})")
    return reply_with_feedback(True, objective, others)


# The array types a solution may name: numbers and booleans, whose elements
# are at most 16 bytes, so an array is never much larger than its JSON text.
# A string or object dtype could make a few bytes of JSON allocate gigabytes
# ("U20000000"), and is refused.
ALLOWED_DTYPES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64", "complex64", "complex128"]
)


def refused_dtype(value, depth=0):
    """The first array type in a solution that decode() refuses, or None (also for nesting deeper than any real solution)."""
    if depth > 64:
        return "nesting deeper than 64 levels"
    if isinstance(value, list):
        for v in value:
            found = refused_dtype(v, depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(value, dict):
        if "__ndarray__" in value and value.get("dtype") not in ALLOWED_DTYPES:
            return f"array type {json.dumps(value.get('dtype'))[:40]}"
        for v in value.values():
            found = refused_dtype(v, depth + 1)
            if found is not None:
                return found
    return None


def decode(value):
    """A value solution_wrapper.py wrote (numpy arrays, tuples and dicts tagged), back as it was returned; only ALLOWED_DTYPES."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if "__ndarray__" in value:
            import numpy

            dtype = value.get("dtype")
            if dtype not in ALLOWED_DTYPES:
                raise ValueError(f"solution.json names the array type {json.dumps(dtype)[:40]}; only numbers and booleans are allowed")
            return numpy.array(decode(value["__ndarray__"]), dtype=dtype)
        if "__tuple__" in value:
            return tuple(decode(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {decode(k): decode(v) for k, v in value["__dict__"]}
        return {k: decode(v) for k, v in value.items()}
    return value
