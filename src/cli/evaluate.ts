// `thetaevolve evaluate <task-dir> <program-file> [--json] [--timeout SECONDS]`:
// one sandboxed evaluation with the task's evaluator. Exit 0 whenever the
// evaluation ran, whatever the candidate did.
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { DEFAULT_EVALUATOR_OPTIONS, Evaluator } from '../engine/sandbox/evaluator';
import { loadTask, TaskError } from '../engine/task/task';
import { IN_SANDBOX_TRUST_REASON } from '../engine/types';
import { booleanFlag, numberFlag, type ParsedArgs, UsageError } from './args';
import { type CliIO, InputError } from './io';

export async function evaluateCommand(args: ParsedArgs, io: CliIO): Promise<number> {
  const [taskDir, programFile] = args.positionals as [string, string];
  const timeout = numberFlag(args, 'timeout');
  if (timeout !== undefined && !(timeout > 0)) throw new UsageError(`--timeout needs a positive number of seconds, got ${timeout}`);
  const json = booleanFlag(args, 'json');

  let task;
  try {
    task = await loadTask(resolve(io.cwd, taskDir));
  } catch (err) {
    if (err instanceof TaskError) throw new InputError(err.message);
    throw err;
  }
  let code: string;
  const programPath = resolve(io.cwd, programFile);
  try {
    code = await readFile(programPath, 'utf8');
  } catch {
    throw new InputError(`cannot read the program file ${programPath}`);
  }

  const evaluator = new Evaluator(task, { ...DEFAULT_EVALUATOR_OPTIONS, concurrency: 1, ...(timeout !== undefined ? { runtimeLimitSec: timeout } : {}) });
  if (evaluator.isolation.warning) io.stderr(`thetaevolve: ${evaluator.isolation.warning}\n`);
  try {
    const result = await evaluator.evaluate(code, { signal: io.signal });
    if (json) {
      const { status, score, objective, metrics, reason, durationMs } = result;
      // protected: false when the folder's own evaluator ran with the candidate (OpenEvolve/ShinkaEvolve layout).
      const isProtected = task.evaluatorTrust === 'separate';
      const unprotectedReason = isProtected ? null : IN_SANDBOX_TRUST_REASON;
      io.stdout(JSON.stringify({ status, score, objective, metrics, reason, durationMs: Math.round(durationMs), protected: isProtected, unprotectedReason }) + '\n');
    } else {
      const lines = [
        `status     ${result.status}`,
        `score      ${result.score}`,
        `objective  ${result.objective === null ? '-' : result.objective} (${task.direction})`,
        `time       ${(result.durationMs / 1000).toFixed(2)} s`,
      ];
      for (const [key, value] of Object.entries(result.metrics)) lines.push(`  ${key}: ${String(value)}`);
      if (result.reason) lines.push(`reason     ${result.reason}`);
      if (task.evaluatorTrust !== 'separate') lines.push(`protected  no: ${IN_SANDBOX_TRUST_REASON}`);
      io.stdout(lines.join('\n') + '\n');
    }
    return 0;
  } finally {
    await evaluator.close();
  }
}
