# Runs inside the sandbox, as the candidate: scores the program with a
# ThetaEvolve release task's own evaluators/evaluator_modular.py under its
# config (OPENEVOLVE_CONFIG_PATH), and writes what the evaluator returned as
# the solution file; release_reply (foreign_eval.py) maps it outside.
# The evaluator imports openevolve.modular_utils: the release's own package
# (PACKAGE, a copy of its openevolve/ folder, or one installed in this
# Python) when it imports, else ThetaEvolve's stand-in beside this file.
#
#   python3 run_release.py TASK_DIR CONFIG PROGRAM OUT [PACKAGE|-]
import importlib.util
import json
import os
import shutil
import sys
import tempfile

from foreign_eval import artifacts_of, feedback_text, load_module, metrics_of, plain


def importable(root):
    """Whether the release's openevolve.modular_utils imports from `root` (None: from this Python's own packages)."""
    if root is not None:
        sys.path.insert(0, root)
    try:
        import openevolve.modular_utils.evaluation_controller  # noqa: F401

        return True, ""
    except Exception as err:  # noqa: BLE001 - any failure to import means: not usable here
        for name in [n for n in sys.modules if n == "openevolve" or n.startswith("openevolve.")]:
            del sys.modules[name]
        if root is not None:
            sys.path.remove(root)
        return False, f"{type(err).__name__}: {err}"


def choose_package(root, here):
    """(the folder to put on PYTHONPATH or None, which package, why not the release's)."""
    if root is not None:
        ok, why = importable(root)
        if ok:
            return root, f"release:{root}", ""
        return here, "stand-in", f"the release's openevolve package does not import ({why})"
    spec = importlib.util.find_spec("openevolve")
    origin = os.path.dirname(spec.origin) if spec is not None and spec.origin else None
    if origin and os.path.exists(os.path.join(origin, "modular_utils", "evaluation_controller.py")):
        ok, why = importable(None)
        if ok:
            return None, f"installed:{origin}", ""
        return here, "stand-in", f"the installed openevolve package at {origin} does not import ({why})"
    return here, "stand-in", ""


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
    # What the evaluator itself cannot import (PyYAML, numpy) is this Python's lack, not the program's: no score (run_release's reply).
    missing = None
    try:
        import yaml  # noqa: F401 - the modular utils read the config with it
    except ImportError:
        missing = "yaml (PyYAML), which openevolve.modular_utils reads the config with"
    if missing is None:
        try:
            module = load_module("evaluator_modular", os.path.join(task_dir, "evaluators", "evaluator_modular.py"))
        except ImportError as err:
            missing = f"{err.name or err} (imported by evaluators/evaluator_modular.py or its verify.py)"
    if missing is not None:
        version = ".".join(str(v) for v in sys.version_info[:3])
        with open(out, "w", encoding="utf-8") as f:
            json.dump({"layout": "release", "infrastructure": f"{sys.executable} (Python {version}) cannot import {missing}"}, f)
        return
    result = module.evaluate(staged_program(program, task_dir, config))
    metrics = metrics_of(result, "evaluate")
    # Its artifacts (the error, or the program's output) are what the release shows the model next.
    feedback = feedback_text(artifacts_of(result))
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"layout": "release", "package": package, "metrics": plain(metrics), "feedback": feedback}, f, allow_nan=False)


if __name__ == "__main__":
    main(sys.argv)
