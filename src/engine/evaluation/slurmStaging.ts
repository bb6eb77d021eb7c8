// The SLURM backend's files on the shared filesystem: what is staged for the
// jobs (our bundled evaluate, a copy of the task, the job and probe scripts) and
// how what a job wrote back is read (capped, never through a link).
import { constants } from 'node:fs';
import { chmod, copyFile, cp, lstat, mkdir, mkdtemp, open, readdir, rm, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { Task } from '../task/task';
import type { ScoredEvaluationResult } from '../common/types';
import { zodIssueText } from '../common/errors';
import { SlurmError } from './slurmCli';
import { EvaluateJsonSchema, resultOfEvaluateJson } from './evaluateJson';
import type { SlurmClusterOptions } from './slurmSettings';

/** Files of ours a job needs beside the task: our `evaluate` (the CLI's, bundled alone), what starts it (with V8's code cache) and the probe. */
export const BUNDLE_FILES = ['jobStart.js', 'evaluateJob.js', 'nodeProbe.js'] as const;
/** The folder of Python files the CLI needs for other systems' task folders (src/engine/task/foreign, copied into dist/). */
export const BUNDLE_FOREIGN_DIR = 'foreign';
/** Seconds a job may take beyond the candidate's and the evaluator's limits (Node start, copying, scoring). */
const JOB_TIME_MARGIN_SEC = 120;
const RESULT_MAX_BYTES = 1024 * 1024;
const TAIL_CHARS = 400;
/** Folders of a task folder that are never staged: runs, version control, dependencies. */
const NOT_STAGED = new Set(['.thetaevolve', '.git', 'node_modules', '__pycache__']);

/** The sandbox limits a compute node applies, as the settings name them. */
export interface SandboxLimits {
  memoryLimitMb: number;
  outputLimitKb: number;
  /** The interpreter on the nodes (thetaevolve.slurm.python, else the run's own path). */
  python?: string;
}

/** `--set` arguments that give the node's `evaluate` the run's sandbox limits, and `--python` its interpreter. */
export function sandboxLimitArguments(limits: SandboxLimits | undefined): string {
  if (!limits) return '';
  const python = limits.python ? ` --python ${shellQuote(limits.python)}` : '';
  return ` --set sandbox.memoryLimitMb=${Math.floor(limits.memoryLimitMb)} --set sandbox.outputLimitKb=${Math.floor(limits.outputLimitKb)}${python}`;
}

/** What staging needs of the backend's options. */
export interface StagingOptions extends Pick<SlurmClusterOptions, 'stagingDirectory' | 'setupCommands' | 'nodeCommand'> {
  bundleDirectory: string;
  sandboxLimits?: SandboxLimits;
}

/** Quote one word for bash. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The end of a job's output, for a message. */
export function tail(text: string): string {
  const trimmed = text.trim();
  return trimmed.length <= TAIL_CHARS ? trimmed : `...${trimmed.slice(-TAIL_CHARS)}`;
}

/** Whether anything is at `path` (a link counts, it is not followed). */
export async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * A regular file written by a job, read without following links and capped at `maxBytes`: its first bytes, or with
 * `from: 'end'` its last (an output log may be long). Null when it is not there, is a link or is not a regular file.
 */
export async function readJobFile(path: string, maxBytes = RESULT_MAX_BYTES, from: 'start' | 'end' = 'start'): Promise<string | null> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return null;
    const length = Math.min(stat.size, maxBytes);
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, from === 'end' ? stat.size - length : 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** The last bytes of a job's output log (enough for a message's tail), or null as readJobFile. */
export function readJobFileEnd(path: string, maxBytes = TAIL_CHARS * 4): Promise<string | null> {
  return readJobFile(path, maxBytes, 'end');
}

/** The time limit of one evaluation job: the candidate's and the evaluator's limits plus a margin, in whole minutes (SLURM rounds up anyway). */
export function jobTimeLimitMinutes(runtimeLimitSec: number, evaluatorTimeLimitSec: number): number {
  return Math.max(1, Math.ceil((runtimeLimitSec + evaluatorTimeLimitSec + JOB_TIME_MARGIN_SEC) / 60));
}

/** One process's staging folder and the scripts its jobs run. */
export interface Staging {
  root: string;
  jobScript: string;
  probeScript: string;
}

/** `--evaluator` for a task loaded with another evaluator than its folder's default (Task.source names the file). */
function evaluatorArgument(task: Task): string {
  return task.source === task.dir ? '' : ` --evaluator "$stage/task/"${shellQuote(basename(task.source))}`;
}

/**
 * Make (or take) a staging folder of this run: 0700, a folder and not a link, owned by this user. The staging place
 * is shared (a cluster's scratch): a folder another user made, or one anyone may write, would let them swap the
 * scripts a job runs or read the token its inference servers require.
 */
export async function privateStagingFolder(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const stats = await lstat(dir);
  const uid = typeof process.getuid === 'function' ? process.getuid() : null;
  if (!stats.isDirectory())
    throw new SlurmError(`${dir}: the staging folder is not a folder (a link?): remove it, or set slurm.stagingDirectory`);
  if (uid !== null && stats.uid !== uid)
    throw new SlurmError(
      `${dir}: the staging folder belongs to user ${stats.uid}, not to you (${uid}): remove it, or set slurm.stagingDirectory`,
    );
  // Ours, made before folders were private: made private now.
  if ((stats.mode & 0o077) !== 0) await chmod(dir, 0o700);
  if (((await lstat(dir)).mode & 0o077) !== 0) throw new SlurmError(`${dir}: the staging folder cannot be made private (mode 0700)`);
}

/** Stage our bundled evaluate, a copy of the task and the job and probe scripts in a new folder under the run's (removed again if staging fails). */
export async function stage(task: Task, options: StagingOptions, jobName: string, runtimeLimitSec: number): Promise<Staging> {
  for (const file of BUNDLE_FILES) {
    if (!(await exists(join(options.bundleDirectory, file)))) {
      throw new SlurmError(
        `${join(options.bundleDirectory, file)} is missing: the SLURM backend stages ThetaEvolve's bundled evaluate for its jobs (build it with npm run build).`,
      );
    }
  }
  // <staging>/<job name>/<one folder per process>: a run's folders, and only its, are under its job name.
  const runDir = join(resolve(options.stagingDirectory), jobName);
  await privateStagingFolder(runDir);
  const root = await mkdtemp(join(runDir, 'process-'));
  try {
    for (const sub of ['bundle', 'candidates', 'waves', 'logs', 'done']) await mkdir(join(root, sub));
    for (const file of BUNDLE_FILES) await copyFile(join(options.bundleDirectory, file), join(root, 'bundle', file));
    // The Python wrapper OpenEvolve and ShinkaEvolve folders are evaluated through (beside the bundled evaluate, as in dist/).
    await cp(join(options.bundleDirectory, BUNDLE_FOREIGN_DIR), join(root, 'bundle', BUNDLE_FOREIGN_DIR), {
      recursive: true,
      filter: (source) => !source.includes('__pycache__'),
    });
    const stagingRoot = resolve(options.stagingDirectory);
    await cp(task.dir, join(root, 'task'), {
      recursive: true,
      filter: (source) => !NOT_STAGED.has(basename(source)) && resolve(source) !== stagingRoot,
    });
    const q = shellQuote(root);
    const setup = options.setupCommands.length > 0 ? ['# slurm.setupCommands', ...options.setupCommands] : [];
    const jobScript = join(root, 'job.sh');
    await writeFile(
      jobScript,
      [
        '#!/bin/bash',
        '# ThetaEvolve evaluation job: array task i evaluates the candidates named on line i+1 of the list file ($1),',
        "# at once, each in its own sandbox, with ThetaEvolve's own `evaluate`, so the sandbox applies on this node too.",
        '# Each result lands in its candidate folder (and its id in done/, one folder to list) the moment it is done.',
        ...setup,
        `stage=${q}`,
        '# When this job started, then (from evaluate) when Node started, began evaluating and wrote each result: where its time goes.',
        'times="$stage/logs/${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.times"',
        'echo "job-start-us ${EPOCHREALTIME/[.,]/}" > "$times"',
        'read -r -a ids <<< "$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" "$1")"',
        'programs=()',
        `for id in "\${ids[@]}"; do programs+=("$stage/candidates/$id/program.${task.language}"); done`,
        `${options.nodeCommand} "$stage/bundle/jobStart.js" "$stage/task" "\${programs[@]}"${evaluatorArgument(task)} --result-files --done-dir "$stage/done" --python-cache "$stage/nodes" --times-file "$times" --timeout ${runtimeLimitSec}${sandboxLimitArguments(options.sandboxLimits)}`,
        'code=$?',
        '# evaluate itself failed: each candidate without a result says so (its own output is in the job log).',
        'if [ "$code" -ne 0 ]; then',
        '  for id in "${ids[@]}"; do [ -e "$stage/candidates/$id/result.json" ] || echo "$code" > "$stage/candidates/$id/failed"; done',
        'fi',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    const probeScript = join(root, 'probe.sh');
    await writeFile(
      probeScript,
      [
        '#!/bin/bash',
        "# ThetaEvolve's probe job: which Node.js and which sandbox this compute node offers.",
        ...setup,
        `cd ${q} || exit 1`,
        `${options.nodeCommand} --version > probe.version 2> probe.stderr`,
        `${options.nodeCommand} bundle/nodeProbe.js > probe.json.part 2>> probe.stderr && mv -f probe.json.part probe.json`,
        'touch probe.done',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    return { root, jobScript, probeScript };
  } catch (err) {
    await rm(root, { recursive: true, force: true });
    throw err;
  }
}

/** Staging folders of this run's earlier processes (their jobs are gone now). */
export async function removeStaleStaging(stagingDirectory: string, jobName: string): Promise<void> {
  const runDir = join(resolve(stagingDirectory), jobName);
  for (const name of await readdir(runDir).catch(() => [])) await rm(join(runDir, name), { recursive: true, force: true });
}

/** What a job left in its candidate's folder: no result yet, a result that cannot be used (why), or the result. */
export type JobResult = { kind: 'none' } | { kind: 'broken'; why: string } | { kind: 'result'; result: ScoredEvaluationResult };

/** Read the result file a job wrote in the candidate folder `dir`. */
export async function readJobResult(dir: string): Promise<JobResult> {
  const text = await readJobFile(join(dir, 'result.json'));
  if (text === null) return { kind: 'none' };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { kind: 'broken', why: 'wrote a result file that is not JSON' };
  }
  const parsed = EvaluateJsonSchema.safeParse(raw);
  if (!parsed.success) {
    return { kind: 'broken', why: `wrote a malformed result (${zodIssueText(parsed.error, 'top level')})` };
  }
  const r = parsed.data;
  // evaluate reports an interrupted evaluation as cancelled: here that is
  // SLURM stopping the job (time limit, preemption), not a candidate's result.
  if (r.metrics.cancelled === true)
    return { kind: 'broken', why: 'was stopped on the node before the evaluation finished (time limit or preemption)' };
  // The node's sandbox or the task's evaluator failed there: not the candidate's result (another node may do).
  const result = resultOfEvaluateJson(r);
  if (result.status === 'evaluation_failed') return { kind: 'broken', why: `could not be evaluated on its node: ${result.reason}` };
  return { kind: 'result', result };
}
