# The candidate side of a converted folder (`thetaevolve convert`), inlined
# into task.json's candidate command as `python3 -c SOURCE {program} NAMES`:
# imports the program, calls the functions the evaluator calls (no
# arguments) that it defines, and writes what they return to solution.json (numpy arrays,
# tuples and dicts tagged; foreign_eval.decode reads them back). No
# `{identifier}` braces in this file: task.json fills those as placeholders.
import importlib.util
import json
import sys


def encode(value):
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        return {"__ndarray__": encode(value.tolist()), "dtype": str(value.dtype)}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"__dict__": [[encode(k), encode(v)] for k, v in value.items()]}
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value


def main(program, names):
    spec = importlib.util.spec_from_file_location("program", program)
    module = importlib.util.module_from_spec(spec)
    sys.modules["program"] = module
    spec.loader.exec_module(module)
    # Only what the program defines: the evaluator may look for one function or another (hasattr).
    values = {name: encode(getattr(module, name)()) for name in names.split(",") if callable(getattr(module, name, None))}
    with open("solution.json", "w", encoding="utf-8") as f:
        json.dump(values, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
