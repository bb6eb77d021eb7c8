// Meta-recommendations (docs/algorithm.md section 12; ShinkaEvolve's
// meta_rec_interval): every k committed steps the run's model reads a summary
// of the last k steps (their outcome counts, the new best programs with the
// lines they changed, the most frequent reasons children failed, the
// recommendations in force) and writes a few short recommendations. Later
// prompts carry them in their own section, marked as the model's, beside the
// researcher's guidance. They are recorded in the steering log with the step
// they apply from, so a resumed run carries the same ones. The request is no
// rollout: it never reaches a trainer.
import { forDisplay } from '../common/displayText';
import { StepStatisticsSchema } from '../common/events';
import { summarizeFailures } from '../common/failureReasons';
import { formatScore } from '../common/format';
import { unifiedLineDiff } from '../common/lineDiff';
import { MAX_GUIDANCE_CHARS } from '../common/steering';
import type { ChatMessage, Outcome } from '../common/types';
import type { ProgramDatabase } from '../database/programDatabase';
import { programLines } from '../database/lineage';

/** The heading the meta request starts with (the test server's model answers it with recommendations). */
export const META_REQUEST_HEADING = '# Review of an evolution run';

/** How much of the summary each part may take: the request stays small whatever the run. */
const MAX_IMPROVEMENTS = 5;
const MAX_DIFF_LINES = 40;
const MAX_FAILURE_REASONS = 5;
const MAX_REASON_CHARS = 300;
/** Recommendations longer than this are cut (they go into every later prompt). */
export const MAX_RECOMMENDATIONS_CHARS = Math.min(MAX_GUIDANCE_CHARS, 3_000);

/** Whether the meta round after the last committed step is due and not yet recorded (0: off). */
export function metaRoundDue(db: ProgramDatabase, everySteps: number): boolean {
  return everySteps > 0 && db.lastStep > 0 && db.lastStep % everySteps === 0 && !db.metaRoundDone(db.lastStep);
}

export interface MetaSummaryInput {
  db: ProgramDatabase;
  /** The task's title and whether its score is maximized. */
  task: { title: string; direction: 'maximize' | 'minimize' };
  everySteps: number;
  /** The reasons of the window's failed evaluations, as kept beside the database (evaluationOutputs.ts). */
  failureReasons: readonly string[];
}

/** The chat messages of the meta request for the window of the last `everySteps` committed steps. */
export function metaRequestMessages({ db, task, everySteps, failureReasons }: MetaSummaryInput): ChatMessage[] {
  const last = db.lastStep;
  const first = Math.max(1, last - everySteps + 1);
  const counts = new Map<Outcome, number>();
  let samples = 0;
  for (const { step, stats } of db.steps()) {
    if (step < first || step > last) continue;
    const parsed = StepStatisticsSchema.safeParse(stats);
    if (!parsed.success) continue;
    samples += parsed.data.samples;
    for (const [outcome, n] of Object.entries(parsed.data.counts) as [Outcome, number][])
      if (n > 0) counts.set(outcome, (counts.get(outcome) ?? 0) + n);
  }
  const sections: string[] = [
    META_REQUEST_HEADING,
    `Task: ${forDisplay(task.title)} (the score is ${task.direction === 'maximize' ? 'maximized' : 'minimized'}).`,
    `Steps ${first} to ${last}: ${samples} children; ${
      [...counts].map(([outcome, n]) => `${n} ${outcome}`).join(', ') || 'no outcome recorded'
    }.`,
  ];
  const best = db.best();
  if (best) sections.push(`Best program so far: ${best.id}, score ${formatScore(best.score)} (step ${best.step}).`);

  const gains = db
    .improvements()
    .filter((p) => p.step >= first && p.step <= last)
    .slice(-MAX_IMPROVEMENTS);
  if (gains.length === 0) sections.push('## New best programs\nNone in these steps.');
  else
    sections.push(
      ['## New best programs, with the lines each changed in its parent', ...gains.map((program) => improvementText(db, program))].join(
        '\n\n',
      ),
    );
  const reasons = summarizeFailures(failureReasons.map(firstLine)).slice(0, MAX_FAILURE_REASONS);
  if (reasons.length > 0)
    sections.push(['## Most frequent reasons children failed', ...reasons.map((r) => `- ${r.count} x ${r.message}`)].join('\n'));
  const inForce = db.recommendationsAt(last + 1);
  if (inForce?.text) sections.push(['## Your recommendations in force', forDisplay(inForce.text)].join('\n'));
  sections.push(
    [
      '## What to write',
      'Write at most 5 short recommendations, one per line starting with "- ", for the next programs: what to try, what to keep, what to avoid.',
      'Write only the recommendations: no code, no preamble.',
    ].join('\n'),
  );
  return [
    { role: 'system', content: 'You review an evolutionary search over programs and advise the model that writes the next ones.' },
    { role: 'user', content: sections.join('\n\n') },
  ];
}

function firstLine(reason: string): string {
  const line = forDisplay(reason).trim().split('\n')[0] ?? '';
  return line.length > MAX_REASON_CHARS ? `${line.slice(0, MAX_REASON_CHARS)}...` : line;
}

function improvementText(db: ProgramDatabase, program: ReturnType<ProgramDatabase['improvements']>[number]): string {
  const parent = program.parentId !== null ? db.get(program.parentId) : null;
  const head = `### ${program.id} (step ${program.step}): score ${formatScore(program.score)}${
    parent ? `, from ${parent.id} at ${formatScore(parent.score)}` : ''
  }`;
  if (!parent) return head;
  const diff = unifiedLineDiff(programLines(parent.code), programLines(program.code), 1).split('\n');
  const shown =
    diff.length > MAX_DIFF_LINES ? [...diff.slice(0, MAX_DIFF_LINES), `... (${diff.length - MAX_DIFF_LINES} more lines)`] : diff;
  return [head, '```diff', forDisplay(shown.join('\n')), '```'].join('\n');
}

/** The recommendations of a reply: its reasoning and code fences dropped, control characters removed, bounded; '' when nothing is left. */
export function recommendationsOfReply(content: string): string {
  const text = forDisplay(content)
    .replace(/<think>[\s\S]*?<\/think>/g, '')
    .replace(/```[\s\S]*?(```|$)/g, '')
    .trim();
  return text.length <= MAX_RECOMMENDATIONS_CHARS ? text : `${text.slice(0, MAX_RECOMMENDATIONS_CHARS)}...`;
}
