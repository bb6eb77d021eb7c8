# The trusted evaluator of a folder converted by `thetaevolve convert`, copied
# there as thetaevolve_evaluate.py (beside thetaevolve_foreign.py, a copy of
# foreign_eval.py). It runs outside the sandbox on the solution file only:
# a stand-in program whose functions return the values the candidate wrote,
# handed to the folder's own evaluate(program_path) (or its cascade). The
# candidate's code never runs in this process. Where OpenEvolve is not
# installed, `openevolve.evaluation_result` is our compatible module, copied
# in as thetaevolve_evaluation_result.py (not as a folder named openevolve,
# which would hide a real OpenEvolve run from this folder).
#
#   python3 thetaevolve_evaluate.py SOLUTION NAMES THRESHOLDS|off [FEATURE_DIMENSIONS [EVALUATOR_FILE_NAME]]
import importlib.util
import json
import os
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from thetaevolve_foreign import OPENEVOLVE_FEATURE_DIMENSIONS, refused_dtype, reply, reply_of, run_openevolve  # noqa: E402


def provide_openevolve():
    if importlib.util.find_spec("openevolve") is not None:
        return
    package = types.ModuleType("openevolve")
    package.__path__ = []
    spec = importlib.util.spec_from_file_location("openevolve.evaluation_result", os.path.join(HERE, "thetaevolve_evaluation_result.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["openevolve"] = package
    sys.modules["openevolve.evaluation_result"] = module
    spec.loader.exec_module(module)
    package.evaluation_result = module

STUB_HEAD = """import json as _json
import sys as _sys
_sys.path.insert(0, %r)
from thetaevolve_foreign import decode as _decode
with open(%r, encoding="utf-8") as _f:
    _VALUES = _decode(_json.load(_f))
"""
STUB_FUNCTION = """

def %s(*args, **kwargs):
    return _VALUES[%r]
"""


def main(solution, names, thresholds, feature_dimensions=OPENEVOLVE_FEATURE_DIMENSIONS, evaluator="evaluator.py"):
    names = names.split(",")
    try:
        with open(solution, encoding="utf-8") as f:
            values = json.load(f)
    except (OSError, ValueError) as err:
        return reply(False, reason=f"solution.json is not readable JSON: {err}", unreadable=True)
    if not isinstance(values, dict) or any(name not in names for name in values):
        return reply(False, reason=f"solution.json holds values of {', '.join(names)} only", unreadable=True)
    refused = refused_dtype(values)
    if refused is not None:
        # Before anything is built from it: the folder's evaluator would catch the error and might score the rest.
        return reply(False, reason=f"solution.json is refused: {refused} (only numeric and boolean arrays are allowed)")
    provide_openevolve()
    with tempfile.TemporaryDirectory() as folder:
        stub = os.path.join(folder, "program.py")
        with open(stub, "w", encoding="utf-8") as f:
            f.write(STUB_HEAD % (HERE, os.path.abspath(solution)) + "".join(STUB_FUNCTION % (name, name) for name in names if name in values))
        try:
            result = run_openevolve(HERE, stub, thresholds, evaluator)
        except Exception as err:  # noqa: BLE001 - the evaluator failed on this solution
            return reply(False, reason=f"the evaluator failed on this solution: {err!r}")
    return reply_of(result, feature_dimensions)


if __name__ == "__main__":
    spec = sys.argv[3] if len(sys.argv) > 3 else "off"
    thresholds = None if spec == "off" else [float(x) for x in spec.split(",") if x]
    dimensions = tuple(d for d in sys.argv[4].split(",") if d) if len(sys.argv) > 4 else OPENEVOLVE_FEATURE_DIMENSIONS
    evaluator = sys.argv[5] if len(sys.argv) > 5 else "evaluator.py"
    print(json.dumps(main(sys.argv[1], sys.argv[2], thresholds, dimensions, evaluator), allow_nan=False))
