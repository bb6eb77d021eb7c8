# A converted ThetaEvolve release folder (`thetaevolve convert`): the parts of
# openevolve.modular_utils a program and its verify.py call, built from the
# config's variables (a JSON text fixed at conversion), with no file of ours
# or the release's to import. The candidate's command carries this text
# inlined (the sandbox shows a task.json candidate its program only); the
# trusted evaluator imports it. save_search_results writes the solution file
# (SOLUTION_FILE in the working folder): {"current": data, "best_perfect": data}.
# No {name} placeholder may appear in this text (task.json fills them in).
# BaseConfig and config_from_variables are the stand-in's
# (openevolve/modular_utils/config_controller.py), whose text the converter
# puts before this one (releaseStubsText in src/engine/task/releaseConvert.ts).
import json
import sys
import types

SOLUTION_FILE = "solution.json"


def install(variables):
    """Put openevolve.modular_utils (config, file I/O, error codes) in sys.modules, answering from `variables`."""

    def get_current_problem_config():
        return config_from_variables(variables)

    def save_search_results(best_perfect_solution, current_solution, base_dir=".", directory_pattern="", **extra):
        try:
            best = best_perfect_solution.get("data") if best_perfect_solution else None
            with open(SOLUTION_FILE, "w") as f:
                json.dump(dict(current=(current_solution or dict()).get("data"), best_perfect=best), f)
            return SOLUTION_FILE
        except Exception as err:  # noqa: BLE001 - as the release: reported, None returned
            print("Failed to save search results: " + str(err))
            return None

    codes = types.SimpleNamespace(NO_DIFF_BLOCKS_ERROR=-0.4, NO_VALID_CHANGE=-0.3, EXECUTION_ERROR=-0.2, VALIDATION_FAILED=-0.1)
    codes.EXECUTION_FAILED = codes.TIMEOUT_OCCURRED = codes.NO_SOLUTION_FOUND = codes.EXECUTION_ERROR
    parts = dict(
        evaluation_controller=dict(get_current_problem_config=get_current_problem_config),
        yaml_config_service=dict(create_problem_config_from_yaml=lambda yaml_path=None: config_from_variables(variables)),
        file_io_controller=dict(save_search_results=save_search_results),
        error_constants=dict(ErrorCodes=codes, FORMAT_ERRORS=[-0.4, -0.3], EXECUTION_ERRORS=[-0.2, -0.1], ALL_ERROR_CODES=[-0.4, -0.3, -0.2, -0.1]),
        config_controller=dict(BaseConfig=BaseConfig),
    )
    package = types.ModuleType("openevolve")
    package.__path__ = []
    utils = types.ModuleType("openevolve.modular_utils")
    utils.__path__ = []
    package.modular_utils = utils
    sys.modules["openevolve"] = package
    sys.modules["openevolve.modular_utils"] = utils
    for name, members in parts.items():
        module = types.ModuleType("openevolve.modular_utils." + name)
        module.__dict__.update(members)
        setattr(utils, name, module)
        sys.modules["openevolve.modular_utils." + name] = module
