# A converted ThetaEvolve release folder (`thetaevolve convert`): the parts of
# openevolve.modular_utils a program and its verify.py call, built from the
# config's variables (a JSON text fixed at conversion), with no file of ours
# or the release's to import. The candidate's command carries this text
# inlined (the sandbox shows a task.json candidate its program only); the
# trusted evaluator imports it. save_search_results writes the solution file
# (SOLUTION_FILE in the working folder): {"current": data, "best_perfect": data}.
# No {name} placeholder may appear in this text (task.json fills them in).
import json
import sys
import types

SOLUTION_FILE = "solution.json"


class ProblemConfig:
    def __init__(self, values):
        self.config = values

    def __getitem__(self, key):
        return self.config[key]

    def __setitem__(self, key, value):
        self.config[key] = value

    def get(self, key, default=None):
        return self.config.get(key, default)

    def update(self, other):
        self.config.update(other)

    def to_dict(self):
        return dict(self.config)


def problem_config(variables):
    core = variables.get("core_parameters") or dict()
    bounds = variables.get("KNOWN_BOUNDS") or dict()
    problem = variables.get("PROBLEM_TYPE", "Unknown")
    values = dict(problem_type=problem, core_parameters=core, time_limit=variables.get("MAX_RUNTIME", 300), known_bounds=bounds)
    if variables.get("CURRENT_SOTA") is not None:
        values["current_sota"] = variables["CURRENT_SOTA"]
    target = core.get("target_value") or variables.get("TARGET_VALUE")
    if target is not None:
        values["target_value"] = target
    if variables.get("score_transform") is not None:
        values["score_transform"] = variables["score_transform"]
    values["known_bound"] = bounds.get(problem)
    if values["known_bound"] is not None:
        values["target_n"] = values["known_bound"] + 1
    return ProblemConfig(values)


def install(variables):
    """Put openevolve.modular_utils (config, file I/O, error codes) in sys.modules, answering from `variables`."""

    def get_current_problem_config():
        return problem_config(variables)

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
        yaml_config_service=dict(create_problem_config_from_yaml=lambda yaml_path=None: problem_config(variables)),
        file_io_controller=dict(save_search_results=save_search_results),
        error_constants=dict(ErrorCodes=codes, FORMAT_ERRORS=[-0.4, -0.3], EXECUTION_ERRORS=[-0.2, -0.1], ALL_ERROR_CODES=[-0.4, -0.3, -0.2, -0.1]),
        config_controller=dict(BaseConfig=ProblemConfig),
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
