# Compatible with shinka.core.run_shinka_eval (our own code, written from its
# public interface): runs the program's experiment function num_runs times,
# validates and aggregates the results, and writes metrics.json and
# correct.json to results_dir. Runs are sequential (run_workers is accepted;
# the results are the same); early stopping and plots are not done here.
import importlib.util
import json
import math
import os
import pickle
import time

DEFAULT_METRICS_ON_ERROR = {
    "combined_score": 0.0,
    "execution_time_mean": 0.0,
    "execution_time_std": 0.0,
    "num_successful_runs": 0,
    "num_valid_runs": 0,
    "num_invalid_runs": 0,
    "all_validation_errors": [],
}


def load_program(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"Could not load spec for module at {program_path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def save_json_results(results_dir, metrics, correct, error=None, verbose=True):
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "correct.json"), "w") as f:
        json.dump({"correct": correct, "error": error}, f, indent=4)
    with open(os.path.join(results_dir, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=4)


def _mean_std(values):
    if not values:
        return 0.0, 0.0
    mean = sum(values) / len(values)
    return float(mean), float(math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)))


def run_shinka_eval(
    program_path,
    results_dir,
    experiment_fn_name,
    num_runs,
    get_experiment_kwargs=None,
    aggregate_metrics_fn=None,
    validate_fn=None,
    plotting_fn=None,
    default_metrics_on_error=None,
    early_stop_method=None,
    early_stop_threshold=None,
    early_stop_score_fn=None,
    early_stop_kwargs=None,
    run_workers=1,
    max_workers_cap=None,
    verbose=None,
    **_ignored,
):
    defaults = dict(DEFAULT_METRICS_ON_ERROR)
    defaults.update(default_metrics_on_error or {})
    correct, first_error = True, None
    validation_errors, num_valid, num_invalid = [], 0, 0
    results, times = [], []
    try:
        module = load_program(program_path)
        if not hasattr(module, experiment_fn_name):
            raise AttributeError(f"Experiment function '{experiment_fn_name}' not found in {program_path}")
        experiment = getattr(module, experiment_fn_name)
        for i in range(num_runs):
            kwargs = get_experiment_kwargs(i) if get_experiment_kwargs else {"seed": i + 1}
            started = time.perf_counter()
            result = experiment(**kwargs)
            times.append(time.perf_counter() - started)
            results.append(result)
            if validate_fn:
                valid, message = validate_fn(result)
                if valid:
                    num_valid += 1
                else:
                    num_invalid += 1
                    correct = False
                    if message:
                        first_error = first_error or f"Validation failed: {message}"
                        if message not in validation_errors:
                            validation_errors.append(message)
        if aggregate_metrics_fn:
            metrics = aggregate_metrics_fn(results)
        else:
            metrics = {"num_successful_runs": len(results)}
            metrics["first_run_result_type"] = str(type(results[0])) if results else "N/A"
            metrics["raw_results_preview"] = str(results[:2]) if results else "N/A"
        metrics["execution_time_mean"], metrics["execution_time_std"] = _mean_std(times)
        if validate_fn:
            metrics["num_valid_runs"] = num_valid
            metrics["num_invalid_runs"] = num_invalid
            metrics["all_validation_errors"] = validation_errors
        score = metrics.get("combined_score")
        if isinstance(score, float) and not math.isfinite(score):
            correct = False
            first_error = first_error or f"combined_score is {score}"
    except Exception as err:  # noqa: BLE001 - as ShinkaEvolve: the defaults, marked incorrect
        metrics = {key: defaults.get(key, value) for key, value in DEFAULT_METRICS_ON_ERROR.items()}
        if validate_fn:
            metrics.setdefault("num_invalid_runs", len(results) or num_runs)
            metrics.setdefault("all_validation_errors", [str(err)])
        first_error, correct = str(err), False
    if "extra_data" in metrics:
        os.makedirs(results_dir, exist_ok=True)
        with open(os.path.join(results_dir, "extra.pkl"), "wb") as f:
            pickle.dump(metrics.pop("extra_data"), f)
    save_json_results(results_dir, metrics, correct, first_error)
    return metrics, correct, first_error
