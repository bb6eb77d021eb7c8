# The evaluator of a FunSearch specification converted by `thetaevolve
# convert SPEC --inputs JSON`, copied there as evaluator.py beside
# funsearch.json (the run function's name, the inputs, the reduction): an
# OpenEvolve evaluator, run in the sandbox with the candidate as FunSearch
# runs the specification, so its score is not protected from a hostile
# candidate. As FunSearch does (implementation/evaluator.py), it calls the
# @funsearch.run function once per input, a list input as one argument (a
# tuple, as FunSearch's inputs are), and requires an int or float result;
# unlike FunSearch, which keeps the inputs that ran, any input that fails or
# gives something else makes the program invalid. The per-input scores are
# reduced as funsearch.json says: "last" (FunSearch's own _reduce_score),
# "mean" or "sum" (its forks). `funsearch.run` and `funsearch.evolve` work
# without FunSearch installed: no-op decorators of ours.
import builtins
import importlib.util
import json
import math
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))


def no_op_decorator(*args, **kwargs):
    """@funsearch.run and @funsearch.run(...): the function unchanged."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda function: function


def provide_funsearch():
    stand_in = types.ModuleType("funsearch")
    stand_in.run = no_op_decorator
    stand_in.evolve = no_op_decorator
    sys.modules["funsearch"] = stand_in
    builtins.funsearch = stand_in  # FunSearch's specifications use `funsearch` without importing it


def as_input(value):
    """A JSON input as FunSearch's: lists become tuples (inputs are hashable, one argument)."""
    if isinstance(value, list):
        return tuple(as_input(v) for v in value)
    return value


def reduce(scores, how):
    if how == "mean":
        return sum(scores) / len(scores)
    if how == "sum":
        return sum(scores)
    return scores[-1]


def evaluate(program_path):
    with open(os.path.join(HERE, "funsearch.json"), encoding="utf-8") as f:
        settings = json.load(f)
    provide_funsearch()
    spec = importlib.util.spec_from_file_location("program", program_path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    run = getattr(program, settings["run"], None)
    if not callable(run):
        return {"error": f"the program defines no {settings['run']}() (the @funsearch.run function)"}
    metrics = {}
    scores = []
    for raw in settings["inputs"]:
        value = as_input(raw)
        call = f"{settings['run']}({value!r})"
        try:
            score = run(value)
        except Exception as err:  # noqa: BLE001 - the program failed on this input
            return {**metrics, "error": f"{call} raised {err!r}"[:500]}
        if not isinstance(score, (int, float)):
            return {**metrics, "error": f"{call} returned {type(score).__name__}, not an int or float score (FunSearch's check)"}
        if not math.isfinite(score):
            return {**metrics, "error": f"{call} returned {score!r}, not a finite score"}
        scores.append(score)
        metrics[call] = score
    return {"combined_score": reduce(scores, settings["reduce"]), **metrics}
