# Reads a ThetaEvolve release config (configs/*.yaml) with PyYAML, as the
# release does, and prints one JSON document for the task loader: the config
# itself, and the system texts with the config's `variables` substituted the
# way the release's config code does it (docs/architecture.md "Release task
# folders"): variables.target_value is added from core_parameters.target_value
# (or TARGET_VALUE); then, in the variables' order, each `{name}` is replaced
# by str(value) (so a large integer keeps every digit), and for a mapping each
# `{name.key}` of its first level; `{name}` of a mapping or a list, deeper
# keys and unknown names stay as written.
#
#   python3 release_config.py CONFIG.yaml
import json
import sys

try:
    import yaml
except ImportError:
    sys.stderr.write("this Python cannot import yaml: install PyYAML (Debian/Ubuntu: sudo apt install python3-yaml; pip install pyyaml)\n")
    sys.exit(3)


def substitute(text, variables):
    if not variables or not isinstance(text, str) or not text:
        return text
    for name, value in variables.items():
        if isinstance(value, dict):
            for key, inner in value.items():
                text = text.replace("{" + f"{name}.{key}" + "}", str(inner))
        elif not isinstance(value, list):
            text = text.replace("{" + str(name) + "}", str(value))
    return text


def main(path):
    with open(path, encoding="utf-8") as f:
        config = yaml.safe_load(f)
    if not isinstance(config, dict):
        raise SystemExit(f"{path}: the config is not a mapping of sections")
    variables_text = json.dumps(config.get("variables") if isinstance(config.get("variables"), dict) else {}, default=str)
    variables = config.get("variables")
    if isinstance(variables, dict):
        variables = dict(variables)
        core = variables.get("core_parameters", {})
        target = (core.get("target_value") if isinstance(core, dict) else None) or variables.get("TARGET_VALUE")
        if target is not None:
            variables["target_value"] = target
    else:
        variables = {}
    prompt = config.get("prompt") if isinstance(config.get("prompt"), dict) else {}
    items = prompt.get("system_message_list") if prompt.get("use_system_message_sampling") else None
    messages = []
    if isinstance(items, list) and items:
        for item in items:
            if isinstance(item, dict):
                messages.append({"weight": item.get("weight", 1.0), "text": substitute(item.get("message", ""), variables)})
    system_message = prompt.get("system_message")
    out = {
        "config": config,
        # Exact (a large integer keeps every digit): what a converted folder's program and evaluator read.
        "variables_json": variables_text,
        "messages": messages,
        "system_message": substitute(system_message, variables) if isinstance(system_message, str) else None,
    }
    json.dump(out, sys.stdout, default=str)


if __name__ == "__main__":
    main(sys.argv[1])
