# A problem's settings as a dict-like object (what PROBLEM_CONFIG[...] reads).


class BaseConfig:
    def __init__(self, problem_type, core_parameters, time_limit=300, known_bounds=None, **extra):
        self.config = dict(problem_type=problem_type, core_parameters=core_parameters, time_limit=time_limit)
        self.config["known_bounds"] = known_bounds or {}
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
