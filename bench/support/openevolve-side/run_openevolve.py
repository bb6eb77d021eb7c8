# OpenEvolve's half of bench evaluation-end-to-end (never shipped): OpenEvolve
# from its own source (argv[1], OPENEVOLVE_SRC) on its own circle-packing
# example, against the project's test server (argv[2]), ITERATIONS children
# with WORKERS worker processes, as the issue measured it. Prints one JSON
# line: wall seconds, the CPU seconds of this process and of its workers,
# and how many children it evaluated.
import asyncio
import json
import logging
import os
import resource
import shutil
import sys
import tempfile
import time

source, base_url, iterations, workers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
here = os.path.dirname(os.path.abspath(__file__))
# The workers are spawned: the stand-ins and OpenEvolve reach them through PYTHONPATH.
os.environ["PYTHONPATH"] = os.pathsep.join([here, source])
sys.path[:0] = [here, source]

from openevolve import OpenEvolve  # noqa: E402
from openevolve.config import Config, LLMModelConfig  # noqa: E402

logging.disable(logging.WARNING)
example = os.path.join(source, "examples", "circle_packing")
work = tempfile.mkdtemp(prefix="te-bench-openevolve-")
try:
    config = Config()
    config.max_iterations = iterations
    config.checkpoint_interval = iterations + 1
    config.log_level = "ERROR"
    config.random_seed = 1
    config.llm.models = [LLMModelConfig(name="test-model", weight=1.0)]
    config.llm.evaluator_models = []
    config.llm.update_model_params({"api_base": base_url, "api_key": "none", "timeout": 600, "retries": 0, "retry_delay": 0})
    config.evaluator.parallel_evaluations = workers
    config.evaluator.cascade_evaluation = False
    config.evaluator.enable_artifacts = True
    config.database.in_memory = True
    started = time.perf_counter()
    controller = OpenEvolve(
        os.path.join(example, "initial_program.py"), os.path.join(example, "evaluator.py"), config=config, output_dir=work
    )
    asyncio.run(controller.run(iterations=iterations))
    wall = time.perf_counter() - started
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    evaluated = len(controller.database.programs) - 1
    cpu = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    print(json.dumps({"wall": wall, "cpu": cpu, "evaluated": evaluated}))
finally:
    shutil.rmtree(work, ignore_errors=True)
