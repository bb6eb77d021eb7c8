# The problem's settings come from the run's config YAML, named by the
# OPENEVOLVE_CONFIG_PATH environment variable (else the first *.yaml / *.yml
# of the working folder): its `variables` section.
import os
from pathlib import Path

from openevolve.modular_utils.config_controller import config_from_variables


def get_current_yaml_path():
    named = os.environ.get("OPENEVOLVE_CONFIG_PATH")
    if named and Path(named).exists():
        return Path(named)
    here = Path.cwd()
    found = list(here.glob("*.yaml")) + list(here.glob("*.yml"))
    return found[0] if found else None


def load_yaml_variables(yaml_path=None):
    path = yaml_path if yaml_path is not None else get_current_yaml_path()
    if not path or not Path(path).exists():
        return {}
    try:
        import yaml

        with open(path, "r") as f:
            return (yaml.safe_load(f) or {}).get("variables", {}) or {}
    except Exception as err:  # noqa: BLE001 - as the release: a warning and no variables
        print(f"Warning: cannot read the variables of {path}: {err}")
        return {}


def create_problem_config_from_yaml(yaml_path=None):
    variables = load_yaml_variables(yaml_path)
    if not variables:
        print("Warning: the config gives no variables; problem settings are empty")
    return config_from_variables(variables)


def get_problem_parameter(param_name, default=None):
    variables = load_yaml_variables()
    core = variables.get("core_parameters", {}) or {}
    return core[param_name] if param_name in core else variables.get(param_name, default)
