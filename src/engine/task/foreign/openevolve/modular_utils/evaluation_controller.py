# The release's evaluation workflow: run the program in a working folder with
# the time limit MAX_RUNTIME, read the solution it saved, let the task's
# verify.py validate it and compute the objective, and return an
# EvaluationResult whose combined_score is the objective (1/(objective + 1e-8)
# when minimising) or an error code: -0.2 when the run failed or saved no
# solution, -0.1 when the solution is invalid (docs/algorithm.md section 4).
# Every result carries rl_normalized_reward, the shaped reward
# (score_transform.py).
import time
import traceback
from abc import ABC, abstractmethod

from openevolve.evaluation_result import EvaluationResult
from openevolve.modular_utils.config_controller import BaseConfig
from openevolve.modular_utils.error_constants import DefaultValues, ErrorCodes
from openevolve.modular_utils.file_io_controller import extract_solution_data_universal
from openevolve.modular_utils.run_with_timeout_controller import create_timeout_controller
from openevolve.modular_utils.score_transform import create_score_transform_config_from_dict, transform_score_for_rl
from openevolve.modular_utils.yaml_config_service import create_problem_config_from_yaml

EPS = 1e-8


def evaluation_metrics(combined_score, validity, runtime_seconds=0.0, eval_time=0.0, exit_code=0, timeout_occurred=False, transform=None, **extra):
    metrics = {
        "combined_score": combined_score,
        "validity": validity,
        "eval_time": eval_time,
        "program_runtime": runtime_seconds,
        "program_timeout": float(timeout_occurred),
        "program_exit_code": exit_code,
        **extra,
    }
    if "rl_normalized_reward" not in metrics and transform is not None:
        metrics["rl_normalized_reward"] = transform_score_for_rl(combined_score, transform)
    return metrics


class BaseProblemEvaluator(ABC):
    @abstractmethod
    def validate_solution(self, solution_data):
        """(is_valid, message)"""

    @abstractmethod
    def compute_objective_score(self, full_data):
        """(combined_score, extra metrics); raises ValueError for an invalid solution."""


class ObjectiveBasedProblemEvaluator(BaseProblemEvaluator):
    def __init__(self, validate_func, compute_objective_func, score_transform_config=None, maximize=True):
        self.validate_solution_func = validate_func
        self.compute_objective_func = compute_objective_func
        self.score_transform_config = score_transform_config
        self.maximize = maximize

    def validate_solution(self, solution_data):
        return self.validate_solution_func(solution_data)

    def compute_objective_score(self, full_data):
        data = (full_data.get("current_solution") or {}).get("data")
        if not data:
            raise ValueError("No current solution data found")
        valid, message = self.validate_solution_func(data)
        if not valid:
            raise ValueError(f"Validation failed: {message}")
        objective = self.compute_objective_func(data)
        combined = objective if self.maximize else 1 / (objective + EPS)
        extra = {"objective_value": objective}
        if self.score_transform_config is not None:
            extra["rl_normalized_reward"] = transform_score_for_rl(objective, self.score_transform_config)
        return combined, extra


class UniversalEvaluationController:
    def __init__(self, base_problem_evaluator, config):
        self.base_problem_evaluator = base_problem_evaluator
        if isinstance(config, BaseConfig):
            self.config = {"time_limit": config["time_limit"], "known_bound": config.get("known_bound", 0), **config.to_dict()}
        else:
            self.config = config
        if isinstance(base_problem_evaluator, ObjectiveBasedProblemEvaluator):
            base_problem_evaluator.score_transform_config = create_score_transform_config_from_dict(self.config)
        self.timeout_controller = create_timeout_controller(timeout=self.config.get("time_limit", 300))

    def _transform(self):
        return getattr(self.base_problem_evaluator, "score_transform_config", None)

    def create_error_result(self, error_type, error_message, runtime_seconds=0.0, timeout_occurred=False, program_output="", program_stderr="", **extra):
        code = ErrorCodes.VALIDATION_FAILED if error_type == "validation_failed" else ErrorCodes.EXECUTION_ERROR
        metrics = evaluation_metrics(
            float(code), 0.0, runtime_seconds, runtime_seconds, -1 if timeout_occurred else 1, timeout_occurred, self._transform(), **extra
        )
        return EvaluationResult(metrics=metrics, artifacts={"error": error_message, "error_type": error_type})

    def create_success_result(self, combined_score, execution_result, eval_time, **extra):
        metrics = evaluation_metrics(
            combined_score,
            1.0,
            execution_result.runtime_seconds,
            eval_time,
            execution_result.exit_code,
            execution_result.timeout_occurred,
            None,
            **extra,
        )
        return EvaluationResult(metrics=metrics, artifacts={"program_output": execution_result.stdout})

    def evaluate(self, program_path, temp_dir=None):
        started = time.time()
        limit = self.config["time_limit"]
        try:
            if temp_dir:
                run = self.timeout_controller.run_python_program(program_path, working_directory=temp_dir, timeout_seconds=limit)
            else:
                run, temp_dir = self.timeout_controller.run_in_temp_workspace(program_path, timeout_seconds=limit)
            if not run.success:
                if run.timeout_occurred:
                    message = f"Program timed out after {limit}s"
                else:
                    parts = [f"Program execution failed (exit code: {run.exit_code})"]
                    parts += [f"Error: {run.stderr.strip()}"] if run.stderr.strip() else []
                    parts += [f"Output: {run.stdout.strip()}"] if run.stdout.strip() else []
                    message = " | ".join(parts)
                return self.create_error_result("execution_failed", message, run.runtime_seconds, run.timeout_occurred, run.stdout, run.stderr)
            full_data = extract_solution_data_universal(temp_dir)
            if not (full_data.get("current_solution") or {}).get("data"):
                return self.create_error_result("no_solution", "No solution found in program output", run.runtime_seconds, False, run.stdout)
            try:
                combined, extra = self.base_problem_evaluator.compute_objective_score(full_data)
            except ValueError as err:
                return self.create_error_result("validation_failed", str(err), run.runtime_seconds, False, run.stdout)
            except Exception as err:  # noqa: BLE001 - scoring crashed: an execution failure, as the release scores it
                return self.create_error_result("execution_failed", f"Scoring failed: {err}", run.runtime_seconds, False, run.stdout)
            return self.create_success_result(combined, run, time.time() - started, **extra)
        except Exception as err:  # noqa: BLE001 - as the release: -0.2, with the traceback as an artifact
            return EvaluationResult(
                metrics={
                    "combined_score": DefaultValues.get_error_score(self.config.get("known_bound")),
                    "violations": 0,
                    "fitness": 0.0,
                    "eval_time": time.time() - started,
                    "validity": 0.0,
                },
                artifacts={"error": f"Universal evaluation failed: {err}", "traceback": traceback.format_exc()},
            )


def create_evaluation_controller(base_problem_evaluator, config):
    return UniversalEvaluationController(base_problem_evaluator, config)


def get_current_problem_config():
    return create_problem_config_from_yaml()
