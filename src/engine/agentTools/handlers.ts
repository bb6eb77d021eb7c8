// The agent tools' handlers (docs/architecture.md "Agents"): each reads a run
// with the same queries `thetaevolve db` uses, or steers it through
// `steerRun`, the one entry point `thetaevolve steer` and the editor use (same
// records, same refusals), with the request marked as the agent's. A refusal
// is a result naming the problem, never a throw, and leaves the run as it was.
// Text a model or an evaluator wrote (code, feedback, diffs, notes, guidance)
// reaches the agent inside AgentDataBlocks: data, never instructions.
import { readFile } from 'node:fs/promises';
import { type AgentToolResult } from '../common/agentToolResult';
import { errorMessage, zodIssueText } from '../common/errors';
import { feedbackOf, FEEDBACK_METRIC } from '../common/feedback';
import { AgentDataBlocks, forDisplay } from '../common/displayText';
import { formatScore } from '../common/format';
import { unifiedLineDiff } from '../common/lineDiff';
import { parseRunMeta, type RunMeta } from '../common/runMeta';
import { type SteerRequest, steerResultText } from '../common/steering';
import { StepStatisticsSchema } from '../common/events';
import { blameOf, lineageOf, programLines, resolveProgram } from '../database/lineage';
import type { ProgramDatabase, ProgramRecord } from '../database/programDatabase';
import { DatabaseFileError } from '../database/schema';
import { runControlFile } from '../runFiles';
import { runHolder } from '../runLock';
import { SteerInputError } from '../steering/applySteer';
import { readInbox } from '../steering/inbox';
import { requestRunControl, type RunControlAction } from '../steering/runControl';
import { steerRun } from '../steering/steerRun';
import {
  AGENT_TOOL_INPUTS,
  AGENT_TOOLS,
  type AgentToolInput,
  type AgentToolName,
  DEFAULT_PIN_SHARE,
  DEFAULT_PIN_STEPS,
  DEFAULT_STATUS_STEPS,
  isAgentToolName,
} from './definitions';
import { AgentToolError } from './errors';
import { type AgentToolHost, listRunRefs, resolveRun, type RunRef } from './host';

type Answer = { text: string; data: Record<string, unknown> };
type Handler<N extends AgentToolName> = (input: AgentToolInput<N>, host: AgentToolHost) => Promise<Answer>;

/** Run one tool: its input checked against its schema, a mutating one refused where changes are not allowed. Never throws. */
export async function runAgentTool(name: string, input: unknown, host: AgentToolHost): Promise<AgentToolResult> {
  if (!isAgentToolName(name)) return { ok: false, text: `no tool "${name}": the tools are ${Object.keys(AGENT_TOOLS).join(', ')}` };
  const parsed = AGENT_TOOL_INPUTS[name].safeParse(input ?? {});
  if (!parsed.success) return { ok: false, text: `${name}: bad input at ${zodIssueText(parsed.error, '(input)')}` };
  if (AGENT_TOOLS[name].mutating && !host.trusted)
    return {
      ok: false,
      text: `${name} refused: this workspace is not trusted, and ThetaEvolve changes no run from an untrusted workspace (a run evaluates programs, which runs code). The read-only tools still work.`,
    };
  try {
    const answer = await (HANDLERS[name] as Handler<AgentToolName>)(parsed.data, host);
    return { ok: true, ...answer };
  } catch (err) {
    if (err instanceof AgentToolError || err instanceof SteerInputError || err instanceof DatabaseFileError)
      return { ok: false, text: `${name} refused: ${err.message}` };
    return { ok: false, text: `${name} failed: ${errorMessage(err)}` };
  }
}

async function readRun<T>(host: AgentToolHost, ref: RunRef, use: (db: ProgramDatabase, meta: RunMeta) => T): Promise<T> {
  return host.read(ref.file, (db) => use(db, parseRunMeta(db.meta(), ref.file)));
}

function programOf(db: ProgramDatabase, ref: RunRef, id: string): ProgramRecord {
  const program = resolveProgram(db, id);
  if (!program) throw new AgentToolError(id === 'best' ? `run ${ref.id} has no program yet` : `no program ${id} in run ${ref.id}`);
  return program;
}

/** A program's facts without its code. */
function programFacts(db: ProgramDatabase, program: ProgramRecord, blocks: AgentDataBlocks): Record<string, unknown> {
  return {
    id: program.id,
    step: program.step,
    parentId: program.parentId,
    origin: program.origin,
    note: program.note === null ? null : blocks.wrap(forDisplay(program.note)),
    island: program.island,
    outcome: program.outcome,
    score: program.score,
    objective: program.objective,
    live: db.isLive(program.id),
    banned: db.isBanned(program.id),
  };
}

function bestFacts(db: ProgramDatabase): Record<string, unknown> | null {
  const best = db.best();
  return best ? { id: best.id, step: best.step, score: best.score, objective: best.objective } : null;
}

function liveState(holder: Awaited<ReturnType<typeof runHolder>>): string {
  return holder ? 'live' : 'stopped';
}

const listRuns: Handler<'list_runs'> = async (_input, host) => {
  const refs = await listRunRefs(host);
  const runs = await Promise.all(
    refs.map(async (ref) => {
      const holder = await runHolder(ref.file);
      try {
        return await readRun(host, ref, (db, meta) => ({
          id: ref.id,
          file: ref.file,
          task: meta.task,
          direction: meta.direction,
          state: liveState(holder),
          lastStep: db.lastStep,
          programs: db.size,
          best: bestFacts(db),
        }));
      } catch (err) {
        return { id: ref.id, file: ref.file, state: liveState(holder), unreadable: errorMessage(err) };
      }
    }),
  );
  const text =
    runs.length === 0
      ? 'No run database found.'
      : runs
          .map((r) =>
            'unreadable' in r
              ? `${r.id}: unreadable (${r.unreadable})`
              : `${r.id}: ${r.task}, ${r.state}, step ${r.lastStep}, best ${r.best ? formatScore(r.best.objective as number | null) : 'none'}`,
          )
          .join('\n');
  return { text, data: { runs } };
};

const runStatus: Handler<'run_status'> = async (input, host) => {
  const ref = await resolveRun(host, input.run);
  const holder = await runHolder(ref.file);
  const inbox = await readInbox(ref.file);
  const control = await readFile(runControlFile(ref.file), 'utf8').catch(() => null);
  const report = await readRun(host, ref, (db, meta) => {
    const steps = db.steps().flatMap((row) => {
      const parsed = StepStatisticsSchema.safeParse(row.stats);
      return parsed.success ? [parsed.data] : [];
    });
    const recent = steps.slice(-(input.steps ?? DEFAULT_STATUS_STEPS)).map((s) => ({
      step: s.step,
      samples: s.samples,
      outcomes: Object.fromEntries(Object.entries(s.counts).filter(([, n]) => n > 0)),
      bestScore: s.best,
      meanScore: s.mean,
      seconds: Math.round(s.timings.totalMs / 100) / 10,
    }));
    const tokens = steps.reduce((sum, s) => ({ prompt: sum.prompt + s.tokens.prompt, completion: sum.completion + s.tokens.completion }), {
      prompt: 0,
      completion: 0,
    });
    const last = steps.at(-1);
    const committedAt =
      last?.sessionStartedAt !== undefined && last.elapsedMs !== undefined ? last.sessionStartedAt + last.elapsedMs : null;
    const guidance = db.guidanceHistory().at(-1) ?? null;
    const queued = inbox.filter((item) => !db.appliedRequest(item.id)).map((item) => item.request?.kind ?? 'unreadable');
    let waitingFor: string;
    if (!holder)
      waitingFor = `nothing: the run is stopped (no process runs it); the researcher resumes it with Resume in the editor or \`thetaevolve run ${meta.taskDir} --db ${ref.file}\``;
    else
      waitingFor =
        host.activity?.(ref.file) ??
        `its next commit, step ${db.lastStep + 1}${
          committedAt !== null ? ` (step ${db.lastStep} committed ${Math.max(0, Math.round((Date.now() - committedAt) / 1000))} s ago)` : ''
        }`;
    return {
      run: ref.id,
      file: ref.file,
      task: meta.task,
      direction: meta.direction,
      source: meta.source,
      state: liveState(holder),
      heldBy: holder ? { pid: holder.pid, host: holder.host, since: holder.since } : null,
      waitingFor,
      lastStep: db.lastStep,
      programs: db.size,
      best: bestFacts(db),
      lastSteps: recent,
      guidance:
        guidance && guidance.text !== null
          ? { step: guidance.step, by: guidance.by, text: new AgentDataBlocks().wrap(forDisplay(guidance.text)) }
          : null,
      banned: db.bannedIds(),
      pins: db.pins(),
      queuedRequests: queued,
      controlRequested: control === null ? null : (/"action":"(\w+)"/.exec(control)?.[1] ?? 'unreadable'),
      spend: {
        promptTokens: tokens.prompt,
        completionTokens: tokens.completion,
        samples: steps.reduce((n, s) => n + s.samples, 0),
        cost: null,
      },
    };
  });
  const best = report.best as { id: string; objective: number | null } | null;
  const text = [
    `Run ${report.run} (${report.task}) is ${report.state}: last step ${report.lastStep}, best ${best ? `${formatScore(best.objective)} (program ${best.id})` : 'none'}.`,
    `Waiting for ${report.waitingFor}.`,
    report.queuedRequests.length > 0 ? `${report.queuedRequests.length} steering request(s) wait for the next step.` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return { text, data: report };
};

const getProgram: Handler<'get_program'> = async (input, host) => {
  const ref = await resolveRun(host, input.run);
  return readRun(host, ref, (db) => {
    const program = programOf(db, ref, input.program);
    const blocks = new AgentDataBlocks();
    // The evaluator's metrics: a text value is its output too.
    const metrics = Object.fromEntries(
      Object.entries(program.metrics)
        .filter(([key]) => key !== FEEDBACK_METRIC)
        .map(([key, value]) => [key, typeof value === 'string' ? blocks.wrap(forDisplay(value)) : value]),
    );
    const feedback = blocks.wrap(forDisplay(feedbackOf(program.metrics)));
    const data = { run: ref.id, ...programFacts(db, program, blocks), metrics, feedback, code: blocks.wrap(program.code) };
    const text = `Program ${program.id} of run ${ref.id}: step ${program.step}, ${program.origin}, ${program.outcome}, objective ${formatScore(program.objective)}${
      program.parentId ? `, parent ${program.parentId}` : ''
    }.`;
    return { text, data };
  });
};

const getLineage: Handler<'get_lineage'> = async (input, host) => {
  const ref = await resolveRun(host, input.run);
  return readRun(host, ref, (db) => {
    const lineage = lineageOf(db, programOf(db, ref, input.program));
    const blocks = new AgentDataBlocks();
    const programs = lineage.programs.map((entry) => ({
      ...entry,
      note: entry.note === null ? null : blocks.wrap(forDisplay(entry.note)),
      objective: db.get(entry.id)?.objective ?? null,
    }));
    const text = `Lineage of ${programs[0]?.id}: ${programs.map((p) => `${p.id} (step ${p.step}, ${p.origin}, ${formatScore(p.objective)})`).join(' <- ')}${
      lineage.complete ? '' : ' <- (older ancestors not kept)'
    }`;
    return { text, data: { run: ref.id, programs, complete: lineage.complete } };
  });
};

const getBlame: Handler<'get_blame'> = async (input, host) => {
  const ref = await resolveRun(host, input.run);
  return readRun(host, ref, (db) => {
    const blame = blameOf(db, programOf(db, ref, input.program));
    const authors = new Map<string, number>();
    for (const line of blame.lines) authors.set(line.id, (authors.get(line.id) ?? 0) + 1);
    const text = `Blame of ${blame.id}: ${blame.lines.length} lines from ${authors.size} program(s) (${[...authors]
      .map(([id, n]) => `${id}: ${n}`)
      .join(', ')}).`;
    const blocks = new AgentDataBlocks();
    return { text, data: { run: ref.id, ...blame, lines: blame.lines.map((line) => ({ ...line, text: blocks.wrap(line.text) })) } };
  });
};

const diffPrograms: Handler<'diff_programs'> = async (input, host) => {
  const ref = await resolveRun(host, input.run);
  return readRun(host, ref, (db) => {
    const from = programOf(db, ref, input.from);
    const to = programOf(db, ref, input.to);
    const blocks = new AgentDataBlocks();
    const diff = unifiedLineDiff(programLines(from.code), programLines(to.code));
    const changed = diff.split('\n').filter((l) => /^[-+]/.test(l)).length;
    const text =
      diff === ''
        ? `Programs ${from.id} and ${to.id} have the same text.`
        : `Diff from ${from.id} (objective ${formatScore(from.objective)}) to ${to.id} (objective ${formatScore(to.objective)}): ${changed} line(s) changed.`;
    return {
      text,
      data: {
        run: ref.id,
        from: programFacts(db, from, blocks),
        to: programFacts(db, to, blocks),
        diff: blocks.wrap(`--- ${from.id}\n+++ ${to.id}\n${diff}`),
      },
    };
  });
};

/** A steer request through steerRun, as the agent's: queued on a live run, applied now on a stopped one. */
async function steer(host: AgentToolHost, ref: RunRef, request: SteerRequest): Promise<Answer> {
  try {
    const result = await steerRun(ref.file, { ...request, by: 'agent' }, { openEvaluator: (meta) => host.openEvaluator(meta) });
    const text =
      'queued' in result
        ? `${result.kind}: queued for the next step of the live run ${ref.id} (run_status shows when it is taken).`
        : `${steerResultText(result)} (run ${ref.id}).`;
    return { text, data: { run: ref.id, ...result } };
  } finally {
    host.changed?.(ref.file);
  }
}

const setGuidance: Handler<'set_guidance'> = async (input, host) =>
  steer(host, await resolveRun(host, input.run), { kind: 'guidance', text: input.text });

const clearGuidance: Handler<'clear_guidance'> = async (input, host) =>
  steer(host, await resolveRun(host, input.run), { kind: 'clearGuidance' });

const addProgram: Handler<'add_program'> = async (input, host) =>
  steer(host, await resolveRun(host, input.run), {
    kind: 'add',
    code: input.code,
    ...(input.island !== undefined ? { island: input.island } : {}),
    ...(input.parent !== undefined ? { parentId: input.parent } : {}),
    ...(input.note !== undefined ? { note: input.note } : {}),
  });

const banProgram: Handler<'ban_program'> = async (input, host) =>
  steer(host, await resolveRun(host, input.run), { kind: 'ban', id: input.program, descendants: input.descendants ?? false });

const unbanProgram: Handler<'unban_program'> = async (input, host) =>
  steer(host, await resolveRun(host, input.run), { kind: 'unban', id: input.program });

const pinProgram: Handler<'pin_program'> = async (input, host) =>
  steer(host, await resolveRun(host, input.run), {
    kind: 'pin',
    id: input.program,
    share: input.share ?? DEFAULT_PIN_SHARE,
    steps: input.steps ?? DEFAULT_PIN_STEPS,
  });

/** Pause, resume or stop a live run (src/engine/steering/runControl.ts); a stopped run is refused. */
function control(action: RunControlAction): Handler<'pause_run' | 'resume_run' | 'stop_run'> {
  return async (input, host) => {
    const ref = await resolveRun(host, input.run);
    const holder = await runHolder(ref.file);
    if (!holder) {
      const lastStep = await host.read(ref.file, (db) => db.lastStep);
      throw new AgentToolError(
        action === 'resume'
          ? `run ${ref.id} is stopped (last step ${lastStep}), not paused: an agent does not start runs; the researcher resumes it (Resume in the editor, or thetaevolve run --db)`
          : `run ${ref.id} is not running (stopped after step ${lastStep}): nothing to ${action}`,
      );
    }
    await requestRunControl(ref.file, action, 'agent');
    const effect = {
      pause: 'it pauses once its steps in flight commit',
      resume: 'its steps start again',
      stop: 'it stops, abandoning the steps in flight; every committed step is kept',
    }[action];
    return {
      text: `${action} requested for the live run ${ref.id}: ${effect} (the run takes the request within a second; run_status shows it).`,
      data: { run: ref.id, action, requested: true },
    };
  };
}

const HANDLERS: { [N in AgentToolName]: Handler<N> } = {
  list_runs: listRuns,
  run_status: runStatus,
  get_program: getProgram,
  get_lineage: getLineage,
  get_blame: getBlame,
  diff_programs: diffPrograms,
  set_guidance: setGuidance,
  clear_guidance: clearGuidance,
  add_program: addProgram,
  ban_program: banProgram,
  unban_program: unbanProgram,
  pin_program: pinProgram,
  pause_run: control('pause'),
  resume_run: control('resume'),
  stop_run: control('stop'),
};
