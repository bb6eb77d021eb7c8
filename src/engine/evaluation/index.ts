// The evaluation backend a run uses, from its settings
// (`thetaevolve.evaluation.backend`): the one place that picks local or SLURM.
import type { Settings } from '../common/config';
import type { EvaluationQueueEvent } from '../common/events';
import { Evaluator, evaluatorOptionsFromSettings } from '../sandbox/evaluator';
import type { PythonEnvironment } from '../common/pythonEnvironment';
import type { Task } from '../task/task';
import type { EvaluationBackend } from './backend';
import { SlurmEvaluator, type SlurmQueueStats } from './slurm';
import { totalSchedulerCalls } from './slurmCli';
import { type SlurmSettings, slurmOptionsFromSettings } from './slurmSettings';

export type { EvaluateOptions, EvaluationBackend, EvaluationBackendKind } from './backend';
export { cancelOrphans, findOrphans, SlurmEvaluator, type SlurmQueueStats } from './slurm';

export interface EvaluationBackendContext {
  runId: string;
  /** The run's own folder (beside its database): the default staging place for SLURM jobs. */
  runFolder: string;
  /** Folder holding the bundled evaluateJob.js and nodeProbe.js; default: the folder of the running bundle (dist/, where the CLI, the extension and its worker run from). */
  bundleDirectory?: string;
  /** Overrides the task's candidate runtime limit (CLI --timeout). */
  runtimeLimitSec?: number;
  /** Environment SLURM's tools start from (SLURM_CONF, PATH); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Stops waiting for the SLURM probe job. */
  signal?: AbortSignal;
  onQueue?: (queue: SlurmQueueStats) => void;
  onWarning?: (message: string) => void;
  /** The run's interpreter (local: {python} and the sandbox's binds; SLURM: the nodes' default path). */
  python?: PythonEnvironment;
  /** The person's workspace folders (the CLI: its working folder), which the local sandbox's interpreter prefix may not be or hold. */
  workspaceFolders?: readonly string[];
}

type BackendSettings = Pick<
  Settings,
  | 'evaluation.backend'
  | 'evaluationConcurrency'
  | 'sandbox.memoryLimitMb'
  | 'sandbox.outputLimitKb'
  | 'sandbox.allowWeakIsolation'
  | 'slurm.python'
> &
  SlurmSettings;

/** Start the backend the settings choose; SLURM's probe job runs before this resolves (and throws a clear error when the nodes cannot evaluate). */
export async function createEvaluationBackend(
  task: Task,
  settings: BackendSettings,
  context: EvaluationBackendContext,
): Promise<EvaluationBackend> {
  if (settings['evaluation.backend'] === 'local') {
    // A run's stream of candidates takes interpreters warmed with the CPU evaluations leave idle (docs/architecture.md "Warm interpreters").
    const evaluator = new Evaluator(task, {
      ...evaluatorOptionsFromSettings(settings, context.runtimeLimitSec),
      warmInterpreters: 'auto',
      ...(context.onWarning ? { onWarning: context.onWarning } : {}),
      ...(context.python ? { python: context.python } : {}),
      ...(context.workspaceFolders ? { workspaceFolders: context.workspaceFolders } : {}),
    });
    evaluator.warmUp();
    return evaluator;
  }
  return SlurmEvaluator.start(
    task,
    {
      ...slurmOptionsFromSettings(settings, context.runFolder),
      runId: context.runId,
      // Bundled, this module lives in dist/cli.js, dist/extension.js or dist/engineWorker.js, beside the files jobs need.
      bundleDirectory: context.bundleDirectory ?? __dirname,
      ...(context.runtimeLimitSec !== undefined ? { runtimeLimitSec: context.runtimeLimitSec } : {}),
      sandboxLimits: {
        memoryLimitMb: settings['sandbox.memoryLimitMb'],
        outputLimitKb: settings['sandbox.outputLimitKb'],
        // The nodes' interpreter: its own setting, else the run's path (a shared filesystem, or the same image).
        ...(settings['slurm.python'] || context.python ? { python: settings['slurm.python'] || context.python?.executable } : {}),
      },
      ...(context.env ? { env: context.env } : {}),
      ...(context.onQueue ? { onQueue: context.onQueue } : {}),
      ...(context.onWarning ? { onWarning: context.onWarning } : {}),
    },
    context.signal,
  );
}

/** The engine event a SLURM backend's onQueue becomes (status bar, dashboard). */
export function evaluationQueueEvent(queue: SlurmQueueStats, time = Date.now()): EvaluationQueueEvent {
  const { calls, ...counts } = queue;
  return {
    type: 'evaluation_queue',
    time,
    backend: 'slurm',
    ...counts,
    schedulerCalls: totalSchedulerCalls(calls),
  };
}
