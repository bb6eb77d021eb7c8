# Runs inside the sandbox, as the candidate: scores the program with a
# ThetaEvolve release task's own evaluators/evaluator_modular.py under its
# config (OPENEVOLVE_CONFIG_PATH), and writes what the evaluator returned as
# the solution file; release_reply (foreign_eval.py) maps it outside.
# The evaluator imports openevolve.modular_utils: the release's own package
# (PACKAGE, a copy of its openevolve/ folder, or one installed in this
# Python) when it imports, else ThetaEvolve's stand-in beside this file.
# The evaluator runs the program as a process of its own and keeps its
# stderr to itself: that stderr is written to ours (the run's kept output),
# and a failure of the evaluator's or the package's own code (not the
# program's) is reported as such, never scored (docs/architecture.md
# "Release task folders").
#
#   python3 run_release.py TASK_DIR CONFIG PROGRAM OUT [PACKAGE|-]
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback

from foreign_eval import artifacts_of, feedback_text, load_module, metrics_of, plain


def forget_openevolve():
    """Drop every imported openevolve module: the next import finds the package anew on sys.path."""
    for name in [n for n in sys.modules if n == "openevolve" or n.startswith("openevolve.")]:
        del sys.modules[name]


def importable(root, expected):
    """Whether the release's openevolve.modular_utils imports from `root` (None: from this Python's own packages), from the
    package folder `expected` (an import that came from elsewhere is not this package's)."""
    if root is not None:
        sys.path.insert(0, root)
    try:
        import openevolve.modular_utils.evaluation_controller as controller

        where = os.path.dirname(os.path.dirname(os.path.abspath(controller.__file__)))
        if os.path.realpath(where) != os.path.realpath(expected):
            raise ImportError(f"openevolve imported from {where}, not {expected}")
        return True, ""
    except Exception as err:  # noqa: BLE001 - any failure to import means: not usable here
        forget_openevolve()
        if root is not None:
            sys.path.remove(root)
        return False, f"{type(err).__name__}: {err}"


def choose_package(root, here):
    """(the folder to put on PYTHONPATH or None, which package, why not the release's)."""
    if root is not None:
        ok, why = importable(root, os.path.join(root, "openevolve"))
        if ok:
            return root, f"release:{root}", ""
        return here, "stand-in", f"the release's openevolve package does not import ({why})"
    spec = importlib.util.find_spec("openevolve")
    origin = os.path.dirname(spec.origin) if spec is not None and spec.origin else None
    if origin and os.path.exists(os.path.join(origin, "modular_utils", "evaluation_controller.py")):
        ok, why = importable(None, origin)
        if ok:
            return None, f"installed:{origin}", ""
        return here, "stand-in", f"the installed openevolve package at {origin} does not import ({why})"
    return here, "stand-in", ""


def package_name(package):
    """The package chosen (choose_package's label), for people."""
    kind, _, where = package.partition(":")
    if kind == "release":
        return "the release's own openevolve package"
    if kind == "installed":
        return f"the openevolve package installed at {where}"
    return "ThetaEvolve's stand-in openevolve package"


def staged_program(program, task_dir, config):
    """The program as the release's evaluator is given it: program.py in a fresh folder, with the config's
    evaluator.copy_folders (e.g. initial_programs/ref, which a program imports) and copy_files beside it, found as the
    release finds them (relative to evaluators/, a plain name also beside it)."""
    import yaml

    with open(config, encoding="utf-8") as f:
        loaded = yaml.safe_load(f) or {}
    settings = loaded.get("evaluator") if isinstance(loaded, dict) else None
    settings = settings if isinstance(settings, dict) else {}
    folder = tempfile.mkdtemp(prefix="thetaevolve-program-")
    staged = os.path.join(folder, "program.py")
    shutil.copyfile(program, staged)
    eval_dir = os.path.join(task_dir, "evaluators")
    inside = lambda path: os.path.commonpath([folder, os.path.normpath(path)]) == folder  # noqa: E731
    for name in settings.get("copy_folders") or []:
        if not isinstance(name, str) or not name:
            continue
        source = os.path.normpath(os.path.join(eval_dir, name))
        if not name.startswith("../") and not os.path.exists(source):
            source = os.path.normpath(os.path.join(eval_dir, "..", name))
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(folder, os.path.basename(name.rstrip("/"))), dirs_exist_ok=True)
    for name in settings.get("copy_files") or []:
        if not isinstance(name, str) or not name:
            continue
        source, target = os.path.join(eval_dir, name), os.path.join(folder, name)
        if os.path.isfile(source) and inside(target):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(source, target)
    return staged


# A traceback's frame line: `  File "path", line N, in name`.
FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')
# The end of a failed program run's stderr kept in the reply's reason (the whole of it goes to our stderr).
PROGRAM_STDERR_KEPT = 4000


def observed_program_runs(program):
    """The evaluator's runs of `program` as it finishes them ({"exit_code", "stdout", "stderr"}; exit_code None: timed out):
    subprocess.run, which the release's controller starts the program with, observed, not changed."""
    runs = []
    run = subprocess.run

    def text(data):
        return data.decode("utf-8", "replace") if isinstance(data, bytes) else (data or "")

    def observing(*args, **kwargs):
        command = args[0] if args else kwargs.get("args")
        ours = isinstance(command, (list, tuple)) and any(os.path.abspath(str(a)) == program for a in command)
        try:
            done = run(*args, **kwargs)
        except subprocess.TimeoutExpired as err:
            if ours:
                runs.append({"exit_code": None, "stdout": text(err.stdout), "stderr": text(err.stderr)})
            raise
        if ours:
            runs.append({"exit_code": done.returncode, "stdout": text(done.stdout), "stderr": text(done.stderr)})
        return done

    subprocess.run = observing
    return runs


def import_failure_in(stderr, folders):
    """The exception line of a traceback ending in an ImportError raised by a file in `folders` (the package's or the task's
    own code, not the program's), else None."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    if not lines or not re.match(r"(ModuleNotFoundError|ImportError)\b", lines[-1].strip()):
        return None
    frames = [m.group(1) for m in map(FRAME.match, lines) if m]
    if not frames:
        return None
    innermost = os.path.realpath(frames[-1])
    inside = any(innermost.startswith(os.path.realpath(folder) + os.sep) for folder in folders)
    return lines[-1].strip() if inside else None


def infrastructure(out, problem, trace=""):
    """Write that the evaluation could not run, not the program's doing (foreign_reply: no score): `problem`, after the
    traceback's end where there is one (the reason shows its end; the whole is on our stderr)."""
    if trace:
        sys.stderr.write(trace if trace.endswith("\n") else trace + "\n")
    text = f"{trace.strip()[-PROGRAM_STDERR_KEPT:]}\n{problem}" if trace.strip() else problem
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"layout": "release", "infrastructure": text}, f)


def main(argv):
    task_dir, config, program, out = (os.path.abspath(a) for a in argv[1:5])
    package_copy = argv[5] if len(argv) > 5 and argv[5] not in ("", "-") else None
    root = None
    if package_copy is not None:
        # The copy keeps its own name; a folder holding it as openevolve/ is what goes on the path.
        root = tempfile.mkdtemp(prefix="thetaevolve-release-")
        os.symlink(os.path.abspath(package_copy), os.path.join(root, "openevolve"))
    here = os.path.dirname(os.path.abspath(__file__))
    # Our helpers (foreign_eval) are imported; the stand-in goes first on the path only if it is the package used.
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    # A warm interpreter imported the evaluator's imports ahead, openevolve among them, from beside this script (the
    # stand-in): the choice is made on the path alone, so the evaluator and the program import the same package.
    forget_openevolve()
    package_dir, package, why_not = choose_package(root, here)
    if package_dir == here:
        sys.path.insert(0, here)
    sys.path.append(here)
    os.environ["OPENEVOLVE_CONFIG_PATH"] = config
    # The program the evaluator starts imports the same package and finds the same config; "python3" is this interpreter.
    paths = [p for p in (package_dir, os.environ.get("PYTHONPATH", "")) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    if why_not:
        print(f"thetaevolve: {why_not}; ThetaEvolve's stand-in is used", file=sys.stderr)
    version = f"{sys.executable} (Python {'.'.join(str(v) for v in sys.version_info[:3])})"
    # What the evaluator itself cannot import (PyYAML, numpy) is this Python's lack, not the program's: no score (run_release's reply).
    try:
        import yaml  # noqa: F401 - the modular utils read the config with it
    except ImportError:
        return infrastructure(out, f"{version} cannot import yaml (PyYAML), which openevolve.modular_utils reads the config with")
    evaluator = os.path.join("evaluators", "evaluator_modular.py")
    try:
        module = load_module("evaluator_modular", os.path.join(task_dir, evaluator))
    except ImportError as err:
        missing = err.name or err
        return infrastructure(out, f"{version} cannot import {missing} (imported by {evaluator} or its verify.py)", traceback.format_exc())
    except Exception as err:  # noqa: BLE001 - the evaluator's own code failed before any program ran
        return infrastructure(out, f"{evaluator} failed as it loaded: {type(err).__name__}: {err}", traceback.format_exc())
    staged = staged_program(program, task_dir, config)
    runs = observed_program_runs(staged)
    try:
        result = module.evaluate(staged)
        metrics = metrics_of(result, "evaluate")
    except Exception as err:  # noqa: BLE001 - the program runs as a process of its own: what raises here is the evaluator's
        return infrastructure(out, f"{evaluator}'s evaluate() raised {type(err).__name__}: {err}", traceback.format_exc())
    # The program's own output, which the evaluator keeps to itself: the run's kept output, as a candidate's is.
    for done in runs:
        sys.stdout.write(done["stdout"])
        sys.stderr.write(done["stderr"])
    failed = next((done for done in reversed(runs) if done["exit_code"] != 0), None)
    artifacts = artifacts_of(result)
    package_folder = os.path.join(package_dir, "openevolve") if package_dir else package.split(":", 1)[1]
    broken = import_failure_in(failed["stderr"], [package_folder, task_dir]) if failed else None
    if broken:
        # The program's import of the package (or the task's modules) failed inside their own code: this Python lacks what they need.
        return infrastructure(out, f"{version}: the program could not import {package_name(package)}: {broken}", failed["stderr"])
    error = artifacts.get("error")
    if isinstance(error, str) and error.startswith("Universal evaluation failed") and artifacts.get("traceback"):
        # The controller caught its own failure (not the program's run, nor the scoring of its solution).
        return infrastructure(out, f"the evaluation controller of {package_name(package)} failed: {error}", str(artifacts["traceback"]))
    # Its artifacts (the error, or the program's output) are what the release shows the model next.
    feedback = feedback_text(artifacts)
    reply = {"layout": "release", "package": package, "metrics": plain(metrics), "feedback": feedback}
    if failed and failed["stderr"].strip():
        reply["program_stderr"] = failed["stderr"].strip()[-PROGRAM_STDERR_KEPT:]
    with open(out, "w", encoding="utf-8") as f:
        json.dump(reply, f, allow_nan=False)


if __name__ == "__main__":
    main(sys.argv)
