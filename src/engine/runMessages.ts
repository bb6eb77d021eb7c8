// What a run says to people: its finish, its steer results, its start failures,
// and the settings it announces (the loop, src/engine/loop.ts, decides; this words it).
import type { Settings } from './common/config';
import type { EvaluationResult } from './common/types';
import type { RunFinishReason } from './common/events';
import { formatScore } from './common/format';
import { OPERATORS_META_KEY, operatorSettingsOf } from './operators/recorded';
import type { applySteer } from './steering/applySteer';
import { fillTemplate, type Task } from './task/task';

/** What a steer request did, for people. */
export function steeredMessage(result: Awaited<ReturnType<typeof applySteer>>): { message: string; id: string | null } {
  if ('queued' in result) return { message: `${result.kind} queued`, id: null };
  if (result.kind === 'add')
    return {
      message: `added program ${result.id} (${result.outcome}, score ${formatScore(result.score)}) on island ${result.island}`,
      id: result.id,
    };
  const ids = 'ids' in result && result.ids ? ` ${result.ids.join(', ')}` : '';
  // The event carries its step: whoever shows the message names it once (the message does not).
  const done = {
    guidance: 'guidance set',
    clearGuidance: 'guidance cleared',
    recommendations: "model's recommendations edited",
    ban: 'banned',
    unban: 'unbanned',
    pin: 'pinned',
  }[result.kind];
  return { message: `${done}${ids}`, id: result.ids?.[0] ?? null };
}

export function finishMessage(reason: RunFinishReason, lastStep: number): string {
  switch (reason) {
    case 'steps_done':
      return `finished after step ${lastStep}`;
    case 'target_reached':
      return `target reached at step ${lastStep}`;
    case 'token_limit':
      return `token limit reached at step ${lastStep}`;
    case 'no_improvement':
      return `no new best for thetaevolve.stopAfterStepsWithoutImprovement steps; ended after step ${lastStep}`;
    case 'budget_reached':
      return `budget reached at step ${lastStep}: the next step would pass thetaevolve.maxCostUsd`;
    case 'stopped':
      return `stopped after step ${lastStep}`;
    case 'error':
      return 'failed';
  }
}

/** The operator settings a new run records (none for the paper's loop, whose files stay as they were). */
export function recordedOperatorsMeta(settings: Settings): Record<string, unknown> {
  const operators = operatorSettingsOf(settings);
  return Object.keys(operators).length > 0 ? { [OPERATORS_META_KEY]: operators } : {};
}

/** The settings that shape a run, for the run_started event (never secrets). */
export function runSettingsSummary(s: Settings): Record<string, string | number | boolean | null> {
  return {
    sampler: s.sampler,
    endpoint: s.sampler === 'llm' ? s.endpoint : null,
    model: s.model || null,
    batchSize: s.batchSize,
    samplesPerPrompt: s.samplesPerPrompt,
    temperature: s.temperature,
    topP: s.topP,
    maxTokens: s.maxTokens,
    evaluationConcurrency: s.evaluationConcurrency,
    pipelineDepth: s.pipelineDepth,
    databasePreset: s['database.preset'],
    lazyPenalty: s.lazyPenalty,
    rewardProcess: s['rewardShaping.process'],
    seed: s.seed,
    // Several models and a budget: said only when set, so a one-model run announces what it always did.
    ...(s.models.length > 0 ? { models: s.models.map((m) => m.name).join(', '), modelSelection: s.modelSelection } : {}),
    ...(s.editFormat !== 'diff' ? { editFormat: s.editFormat } : {}),
    ...(s.maxCostUsd > 0 ? { maxCostUsd: s.maxCostUsd } : {}),
  };
}

/** A reason on one line: its first line, and its last where that says more (an error's last line). */
export function oneLine(reason: string): string {
  const lines = reason
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const first = lines[0] ?? '';
  const last = lines[lines.length - 1] ?? '';
  return lines.length > 1 && last !== first ? `${first} ... ${last}` : first;
}

/** The module a Python traceback says could not be imported, or null. */
export function missingModule(output: string): string | null {
  return /ModuleNotFoundError: No module named '([^']+)'/.exec(output)?.[1] ?? null;
}

/** Why the run cannot start: an interpreter that lacks a module. */
export function importFailure(
  task: Task,
  module: string,
  python: string,
  evaluatorFailed: boolean,
  program = 'the starting program',
): string {
  // Another system's evaluator imports and runs the program in one process: either of them may be the importer.
  const who = evaluatorFailed
    ? "the task's evaluator"
    : task.evaluatorTrust === 'separate'
      ? program
      : `${program} or the task's evaluator`;
  return `${who} cannot import ${module} with the Python interpreter ${python}: install it there, or choose an interpreter that has it (--python, the setting thetaevolve.python)`;
}

/**
 * A ModuleNotFoundError of a program or of the evaluator on it, said as the environment's failure (the run's health
 * check and `evaluate` alike: docs/architecture.md "The researcher's Python"), or null when the result says none.
 */
export function environmentImportFailure(
  task: Task,
  result: Pick<EvaluationResult, 'status' | 'reason' | 'stderr' | 'metrics'>,
  python: string,
  program = 'the starting program',
): string | null {
  if (result.status === 'ok') return null;
  const missing = missingModule(`${result.reason}\n${result.stderr}`);
  return missing === null ? null : importFailure(task, missing, python, result.metrics.evaluator_failed === true, program);
}

/** Why the run cannot start: the task's evaluator (named) or the sandbox failed on the starting program. */
export function startFailure(task: Task, reason: string, evaluatorFailed: boolean): string {
  if (!evaluatorFailed) return `the starting program could not be evaluated: ${oneLine(reason)}`;
  const script = task.evaluatorCommand.find((arg) => /\.(py|c?js|mjs|sh)$/.test(arg)) ?? task.evaluatorCommand[0] ?? 'the evaluator';
  const name = fillTemplate(script, { ...task.variables, taskDir: task.dir, solution: task.solutionFile });
  return `the task's evaluator (${name}) failed on the starting program, so no candidate could be scored: ${oneLine(reason)}. Fix the evaluator; \`thetaevolve evaluate ${task.dir} <program>\` shows its whole output.`;
}
