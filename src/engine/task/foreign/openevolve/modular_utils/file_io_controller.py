# How a program hands its solution to the evaluator: save_search_results
# writes <problem>_search_data/search_info.json (with the solution files beside
# it) in the working folder; extract_solution_data_universal reads it back.
import json
import os
import shutil
import tempfile
import time

from openevolve.modular_utils.yaml_config_service import create_problem_config_from_yaml


def _folder_name(directory_pattern):
    problem = str(create_problem_config_from_yaml().get("problem_type", "Unknown")).lower()
    for old, new in (("(", ""), (")", ""), (",", "_"), (" ", "_")):
        problem = problem.replace(old, new)
    return directory_pattern.format(problem)


def save_search_results(best_perfect_solution, current_solution, base_dir=".", directory_pattern="{}_search_data", **kwargs):
    try:
        config = create_problem_config_from_yaml()
        folder = os.path.join(base_dir, _folder_name(directory_pattern))
        os.makedirs(folder, exist_ok=True)
        stamp = int(time.time() * 1000)

        def keep(solution, kind):
            if not solution or not solution.get("data"):
                return None
            path = os.path.join(folder, f"solution_{kind}_{stamp}.json")
            with open(path, "w") as f:
                json.dump(solution["data"], f)
            return path

        perfect_file = keep(best_perfect_solution, "perfect")
        current_file = keep(current_solution, "current")
        info = {
            "timestamp": stamp,
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "problem_type": config.get("problem_type", "Unknown"),
            "best_perfect_solution": (
                {**best_perfect_solution, "data_file": perfect_file, "solution_id": f"perfect_{stamp}"} if best_perfect_solution else None
            ),
            "current_solution": {**current_solution, "data_file": current_file, "solution_id": f"current_{stamp}"},
            **kwargs,
        }
        info_file = os.path.join(folder, "search_info.json")
        with open(info_file, "w") as f:
            json.dump(info, f, indent=2)
        return info_file
    except Exception as err:  # noqa: BLE001 - as the release: reported, None returned
        print(f"Failed to save search results: {err}")
        return None


def extract_solution_data_universal(temp_dir=".", directory_pattern="{}_search_data"):
    try:
        with open(os.path.join(temp_dir, _folder_name(directory_pattern), "search_info.json"), "r") as f:
            return json.load(f)
    except Exception:  # noqa: BLE001 - no solution: an empty dict
        return {}


def create_temp_directory(prefix="openevolve_temp_"):
    return tempfile.mkdtemp(prefix=prefix)


def cleanup_temp_directory(temp_dir):
    shutil.rmtree(temp_dir, ignore_errors=True)
