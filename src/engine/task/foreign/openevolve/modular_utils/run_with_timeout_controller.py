# Runs the candidate program as its own process with a time limit, in a
# working folder (a fresh temporary one unless given), as the release does.
# The interpreter is the one running the evaluator (the release names
# "python3", which is that one where an environment is active).
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List


@dataclass
class ExecutionResult:
    success: bool
    exit_code: int
    stdout: str
    stderr: str
    runtime_seconds: float
    timeout_occurred: bool
    memory_usage_mb: float = 0.0
    command_executed: List[str] = field(default_factory=list)
    working_directory: str = ""
    environment_vars: Dict[str, str] = field(default_factory=dict)


def _text(data):
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


class UniversalTimeoutController:
    def __init__(self, default_timeout=300, capture_output=True, debug_verbose=False):
        self.default_timeout = default_timeout
        self.capture_output = capture_output
        self.debug_verbose = debug_verbose

    def run_with_timeout(self, command, timeout_seconds=None, working_directory=None, env_vars=None):
        limit = self.default_timeout if timeout_seconds is None else timeout_seconds
        env = {**os.environ, **(env_vars or {})}
        started = time.time()
        where = working_directory or os.getcwd()
        try:
            done = subprocess.run(command, capture_output=self.capture_output, text=True, timeout=limit, cwd=working_directory, env=env)
            return ExecutionResult(
                done.returncode == 0, done.returncode, _text(done.stdout), _text(done.stderr), time.time() - started, False, 0.0, command, where
            )
        except subprocess.TimeoutExpired as err:
            return ExecutionResult(False, -1, _text(err.stdout), _text(err.stderr), time.time() - started, True, 0.0, command, where)
        except Exception as err:  # noqa: BLE001 - no process: a failed run
            return ExecutionResult(False, -1, "", f"Execution error: {err}", time.time() - started, False, 0.0, command, where)

    def run_python_program(self, program_path, working_directory=None, timeout_seconds=None):
        if working_directory is None:
            working_directory = os.path.dirname(os.path.abspath(program_path))
        return self.run_with_timeout([sys.executable, program_path], timeout_seconds, working_directory, {})

    def run_in_temp_workspace(self, program_path, timeout_seconds=None):
        folder = tempfile.mkdtemp(prefix="openevolve_exec_")
        return self.run_python_program(program_path, folder, timeout_seconds), folder


def create_timeout_controller(timeout=300, capture_output=True):
    return UniversalTimeoutController(default_timeout=timeout, capture_output=capture_output)
