# A problem's settings as a dict-like object (what PROBLEM_CONFIG[...] reads).
# `thetaevolve convert` puts this text before release_stubs.py in a converted
# release folder's stubs (src/engine/task/releaseConvert.ts): no import, no
# {name} placeholder here.


class BaseConfig:
    def __init__(self, problem_type, core_parameters, time_limit=300, known_bounds=None, **extra):
        self.config = dict(problem_type=problem_type, core_parameters=core_parameters, time_limit=time_limit)
        self.config["known_bounds"] = known_bounds or dict()
        self.config.update(extra)
        self.config["known_bound"] = self.config["known_bounds"].get(problem_type)

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


def config_from_variables(variables):
    """The problem's settings from a config's `variables` section, as the release builds them."""
    core = variables.get("core_parameters") or dict()
    extra = dict()
    if variables.get("CURRENT_SOTA") is not None:
        extra["current_sota"] = variables["CURRENT_SOTA"]
    target = core.get("target_value") or variables.get("TARGET_VALUE")
    if target is not None:
        extra["target_value"] = target
    if variables.get("score_transform") is not None:
        extra["score_transform"] = variables["score_transform"]
    problem = variables.get("PROBLEM_TYPE", "Unknown")
    config = BaseConfig(problem, core, time_limit=variables.get("MAX_RUNTIME", 300), known_bounds=variables.get("KNOWN_BOUNDS"), **extra)
    if config["known_bound"] is not None:
        config["target_n"] = config["known_bound"] + 1
    return config
