// The full output of the evaluations that failed, kept beside the run's
// database so a person can read a whole traceback after the evaluations
// terminal showed its end (and after a window reload). Only failures are
// kept: a valid child's output is rarely what anyone reads, and failures are
// what "why did this not run?" needs. Each stream is already cut at the
// sandbox's output limit. One gzip file per step, one gzip member (one JSON
// line) per evaluation appended as it finishes: readable while the step runs,
// a few KiB per traceback, and the oldest steps are dropped past a budget.
import { appendFile, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { constants, gunzip, gzip } from 'node:zlib';
import { errorMessage } from './common/errors';
import { evaluationOutputsDir } from './runFiles';
import { type EvaluationOutput, EvaluationOutputSchema } from './common/evaluationOutputSchema';

export { type EvaluationOutput, EvaluationOutputSchema };

/** A kept output without its text (what a list of them shows). */
export type EvaluationOutputSummary = Omit<EvaluationOutput, 'stdout' | 'stderr'> & { bytes: number };

/** Past this many bytes of kept output in a run, the oldest steps' files are dropped (at the start of a step). */
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

export const EVALUATION_OUTPUT_BUDGET_BYTES = 256 * 1024 * 1024;

const stepFileName = (step: number): string => `step-${step}.jsonl.gz`;
const STEP_FILE = /^step-(\d+)\.jsonl\.gz$/;

/** How an evaluation is named to a person, in the evaluations terminal and in the list: `s3-p1#2`, `initial#0`. */
export function evaluationKey(jobKey: string, sampleIndex: number): string {
  return `${jobKey}#${sampleIndex}`;
}

/** Appends a run's failed evaluations to its step files; a write that fails costs that output only (onError says so). */
export class EvaluationOutputWriter {
  private readonly dir: string;
  /** Appends one after another: each member lands whole. */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    dbFile: string,
    private readonly onError: (message: string) => void,
    private readonly budgetBytes = EVALUATION_OUTPUT_BUDGET_BYTES,
  ) {
    this.dir = evaluationOutputsDir(dbFile);
  }

  /** A step (re)starts: what an abandoned try of it kept goes, and the oldest steps go past the budget. */
  /** A step starts (again): its old outputs go; over the budget, the oldest steps' go too, never those from `firstInFlight` on (still being written). */
  startStep(step: number, firstInFlight = step): Promise<void> {
    return this.enqueue(async () => {
      await rm(join(this.dir, stepFileName(step)), { force: true });
      await this.prune(Math.min(step, firstInFlight));
    });
  }

  add(output: EvaluationOutput): Promise<void> {
    return this.enqueue(async () => {
      // Compressed off the thread (a step of large outputs would otherwise stall the engine for seconds).
      const member = await gzipAsync(`${JSON.stringify(output)}\n`);
      await mkdir(this.dir, { recursive: true });
      await appendFile(join(this.dir, stepFileName(output.step)), member);
    });
  }

  /** Resolves once everything added so far is on disk (or failed). */
  flush(): Promise<void> {
    return this.queue;
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(work).catch((err: unknown) => this.onError(`could not keep an evaluation's output: ${errorMessage(err)}`));
    return this.queue;
  }

  private async prune(firstKept: number): Promise<void> {
    const files = await stepFiles(this.dir);
    let total = 0;
    for (const f of files) total += f.bytes;
    for (const f of files) {
      if (total <= this.budgetBytes) break;
      if (f.step >= firstKept) continue;
      await rm(f.path, { force: true });
      total -= f.bytes;
    }
  }
}

/** A run's step files, oldest step first. */
async function stepFiles(dir: string): Promise<{ step: number; path: string; bytes: number }[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const files = await Promise.all(
    names.flatMap((name) => {
      const m = STEP_FILE.exec(name);
      if (!m) return [];
      const path = join(dir, name);
      return [
        stat(path).then(
          (s) => ({ step: Number(m[1]), path, bytes: s.size }),
          () => null,
        ),
      ];
    }),
  );
  return files.filter((f): f is { step: number; path: string; bytes: number } => f !== null).sort((a, b) => a.step - b.step);
}

/** The outputs kept for one step (a line that is not ours is skipped; a missing file is none). */
export async function readStepOutputs(
  dbFile: string,
  step: number,
  maxBytes = EVALUATION_OUTPUT_BUDGET_BYTES,
): Promise<EvaluationOutput[]> {
  const file = join(evaluationOutputsDir(dbFile), stepFileName(step));
  // The folder beside a database is anyone's (a cloned repository): its files are bounded before and after unpacking.
  const size = (await stat(file).catch(() => null))?.size ?? 0;
  if (size > maxBytes) throw new Error(`the kept outputs of step ${step} are ${size} bytes, over the ${maxBytes} all outputs may hold`);
  const bytes = await readFile(file).catch(() => null);
  if (!bytes) return [];
  let text: string;
  try {
    // Concatenated gzip members read as one stream; a member cut short by a crash yields what it holds (its line is skipped).
    // A gzip bomb stops at the cap: a step's outputs unpack to far less.
    text = (await gunzipAsync(bytes, { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: maxBytes })).toString('utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      throw new Error(`the kept outputs of step ${step} unpack to over ${maxBytes} bytes: not read`, { cause: err });
    throw new Error(`the kept outputs of step ${step} are unreadable: ${errorMessage(err)}`, { cause: err });
  }
  return text.split('\n').flatMap((line) => {
    if (!line.trim()) return [];
    try {
      const parsed = EvaluationOutputSchema.safeParse(JSON.parse(line));
      return parsed.success ? [parsed.data] : [];
    } catch {
      return [];
    }
  });
}

/** One kept output, or null when none is kept for it (not a failure, or dropped past the budget). */
export async function readEvaluationOutput(
  dbFile: string,
  step: number,
  jobKey: string,
  sampleIndex: number,
): Promise<EvaluationOutput | null> {
  const outputs = await readStepOutputs(dbFile, step);
  // A sample asked for again (RL resampling) keeps its last output.
  return outputs.filter((o) => o.jobKey === jobKey && o.sampleIndex === sampleIndex).at(-1) ?? null;
}

/** The kept outputs of a run's newest steps (at most `maxSteps` of them), newest step first. */
export async function listEvaluationOutputs(dbFile: string, maxSteps = 50): Promise<EvaluationOutputSummary[]> {
  const files = (await stepFiles(evaluationOutputsDir(dbFile))).reverse().slice(0, maxSteps);
  const summaries: EvaluationOutputSummary[] = [];
  for (const f of files) {
    for (const o of await readStepOutputs(dbFile, f.step).catch(() => [])) {
      const { stdout, stderr, ...rest } = o;
      summaries.push({ ...rest, bytes: Buffer.byteLength(stdout) + Buffer.byteLength(stderr) });
    }
  }
  return summaries;
}
