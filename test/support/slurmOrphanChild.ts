// A ThetaEvolve that submits two slow evaluations and then waits to be
// killed (slurm.test.ts kills it with SIGKILL to leave orphaned jobs).
// Prints `submitted <job id>` for each job.
import { SlurmEvaluator } from '../../src/engine/evaluation/slurm';
import { loadTask } from '../../src/engine/task/task';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

void (async () => {
  const task = await loadTask(env('ORPHAN_TASK'));
  const evaluator = await SlurmEvaluator.start(task, {
    runId: env('ORPHAN_RUN_ID'),
    bundleDirectory: env('ORPHAN_DIST'),
    stagingDirectory: env('ORPHAN_STAGING'),
    partition: '',
    account: '',
    sbatchArguments: [],
    exportVariables: [],
    setupCommands: [],
    nodeCommand: process.execPath,
    maxJobs: 16,
    pollSeconds: 0.2,
    maxResubmits: 0,
    // One job each: the test expects two orphaned jobs.
    candidatesPerJob: 1,
    runtimeLimitSec: 120,
  });
  for (const value of [1, 2]) {
    void evaluator.evaluate(`import time\ntime.sleep(100)\nprint(${value})\n`, {
      onSubmitted: (id) => process.stdout.write(`submitted ${id}\n`),
    });
  }
})();
