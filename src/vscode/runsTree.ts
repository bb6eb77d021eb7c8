// The Runs view: every run database under the runs directory (the active run
// live), each with its improving programs (step, objective, delta, outcome counts
// of that step), the best pinned on top (programRowOrder). Programs carry context values for their menu actions (Show
// Diff, Compare with File, Apply to File, Open Program). Everything is read
// through the engine worker.
import * as vscode from 'vscode';
import type { Direction } from '../engine/common/types';
import type { RunInfo } from '../protocol/workerMessages';
import { log } from './log';
import { listRunFiles, type RunController, runOrigin, type RunState } from './runController';
import { formatScore, NO_VALID_PROGRAM, programName, programNameDetail, type StepRank } from '../engine/common/format';
import { IN_SANDBOX_TRUST_REASON } from '../engine/common/types';
import { errorMessage } from '../engine/common/errors';
import { displayObjective } from '../engine/common/scoring';
import { recordsMetaRecommendations } from '../engine/operators/recorded';
import { programRowId, programRowOrder } from './programRowOrder';

export interface RunNode {
  kind: 'run';
  runId: string;
  dbFile: string;
  info: RunInfo | null;
  error: string | null;
  active: boolean;
}

export interface ProgramNode {
  kind: 'program';
  runId: string;
  dbFile: string;
  programId: string;
  parentId: string | null;
  step: number;
  /** Its rank among its step's children: with the step, its name. */
  stepRank: StepRank | null;
  score: number;
  /** The task's own objective (what people read; null for a program without one). */
  objective: number | null;
  /** The objective's change from the previous improvement (negative improves a minimise task). */
  delta: number | null;
  /** The previous improvement's name ("step 7 #1"), which delta is measured from; null for the first. */
  previousName: string | null;
  /** Its parent's name ("step 3 #2", "initial"), whose diff a click opens; null: unknown or none. */
  parentName: string | null;
  /** "valid 3, no diff 1" for the program's step. */
  counts: string;
  /** Banned now (docs/algorithm.md section 11). */
  banned: boolean;
  /** Still in the population: only then are Pin as Parent and Ban offered. */
  live: boolean;
  extension: string;
  fileUri: vscode.Uri | undefined;
  /** The text the run started from (Apply asks before overwriting later edits). */
  startCode: string | undefined;
  direction: Direction;
  /** The pinned best row on top of the run's rows (programRowOrder). */
  pinnedBest: boolean;
}

export interface MessageNode {
  kind: 'message';
  label: string;
}

export type RunsTreeNode = RunNode | ProgramNode | MessageNode;

/** A program row of the view (the argument its context menu's commands get). */
export function isProgramNode(value: unknown): value is ProgramNode {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'program' &&
    typeof (value as { programId?: unknown }).programId === 'string'
  );
}

/** A run row of the view (the argument its context menu's commands get). */
export function isRunNode(value: unknown): value is Pick<RunNode, 'kind' | 'runId' | 'dbFile'> {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return v.kind === 'run' && typeof v.runId === 'string' && typeof v.dbFile === 'string';
}

/** Longest a step count in the view lags behind the run. */
const STEP_REFRESH_MS = 5000;

/** A run no process of this window runs (finished, stopped, left by a reload): Resume, Open Dashboard, Delete. */
export const STORED_RUN_CONTEXT = 'thetaevolve.run.stored';
/** The active run's row: `thetaevolve.run.<state>` (running, paused...), so its menu offers what that state allows. */
export function activeRunContext(state: RunState): string {
  return `thetaevolve.run.${state}`;
}
/** Added to the row of a run with meta-recommendations on (meta.everySteps): its menu offers Edit Model Recommendations. */
export const RECOMMENDING_CONTEXT_SUFFIX = '.recommending';
/** A program with a parent: every action. */
export const PROGRAM_CONTEXT = 'thetaevolve.program.child';
/** The initial program: no parent to diff against. */
export const ROOT_PROGRAM_CONTEXT = 'thetaevolve.program.root';
/** Added to a banned program's context value: its menu offers Unban instead of Ban. */
export const BANNED_CONTEXT_SUFFIX = '.banned';
/** Suffix of a program row no longer in the population (an earlier best evicted since): nothing to pin or ban. */
export const GONE_CONTEXT_SUFFIX = '.gone';

function fmt(value: number | null): string {
  return formatScore(value, 6);
}

/** The objective people read: the program's own, else the one its score stands for in the task's direction. */
function objectiveOf(program: { score: number; objective: number | null }, direction: Direction): number | null {
  return program.objective ?? displayObjective(program.score, direction);
}

const OUTCOME_LABELS: Record<string, string> = {
  valid: 'valid',
  invalid_solution: 'invalid',
  no_solution: 'no solution',
  timeout: 'timeout',
  no_diff: 'no diff',
  no_change: 'no change',
  duplicate: 'duplicate',
  not_novel: 'not novel',
  too_long: 'too long',
  request_failed: 'failed',
  evaluation_failed: 'evaluation failed',
};

function countsText(counts: Record<string, number> | undefined): string {
  if (!counts) return '';
  return Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${OUTCOME_LABELS[k] ?? k} ${n}`)
    .join(', ');
}

export class RunsTreeProvider implements vscode.TreeDataProvider<RunsTreeNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<RunsTreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscriptions: vscode.Disposable[] = [];
  private refreshTimer: NodeJS.Timeout | undefined;
  private refreshDue = 0;
  /** Refreshes one after another, so an older listing never lands last. */
  private refreshing: Promise<void> = Promise.resolve();
  /** The last root listing (for tests and commands). */
  private roots: RunNode[] = [];
  /**
   * Roots read by a refresh, handed to the view's next question once, unless
   * something asked for another refresh since (the listing is then stale).
   */
  private prefetchedRoots: { roots: RunNode[]; generation: number } | undefined;
  /** Counts refresh requests: a listing read before the latest one is stale. */
  private generation = 0;
  /**
   * Program rows of each run the view has shown, with the run state they
   * were read at (they change only when a step commits).
   */
  /** The active run's state its row was last refreshed for. */
  private shownState: RunState | undefined;
  private readonly programRows = new Map<string, { readAt: string; rows: RunsTreeNode[] }>();

  constructor(private readonly controller: RunController) {
    // Every refresh re-creates the items (and VS Code drops their click
    // commands), so refresh on what changes the list: a new best, a state
    // change, the run's start and end; step counts at most every few seconds.
    this.subscriptions.push(
      controller.onDidEngineEvent(({ event }) => {
        switch (event.type) {
          case 'run_started':
          case 'new_best':
          case 'paused':
          case 'resumed':
          case 'run_finished':
            this.scheduleRefresh();
            break;
          case 'step_committed':
            this.scheduleRefresh(STEP_REFRESH_MS);
            break;
          default:
            break;
        }
      }),
      controller.onDidCloseRun(() => this.scheduleRefresh()),
      // The active row's menu follows its state (asked to pause or stop, before the engine says so).
      controller.onDidChangeRun((run) => {
        if (run && run.state !== this.shownState) {
          this.shownState = run.state;
          this.scheduleRefresh();
        }
      }),
    );
  }

  get runs(): readonly RunNode[] {
    return this.roots;
  }

  /**
   * Reads what the view shows first, then tells VS Code, which asks again and
   * gets answers from memory. VS Code drops the old rows' click commands as
   * soon as it asks, so a click until the new rows arrive fails with "Actual
   * command not found": answering at once keeps that window to one round trip.
   */
  refresh(): Promise<void> {
    const done = this.refreshing.then(async () => {
      const generation = this.generation;
      try {
        const roots = await this.listRuns();
        const shown = new Set(roots.map((r) => r.dbFile));
        for (const dbFile of this.programRows.keys()) if (!shown.has(dbFile)) this.programRows.delete(dbFile);
        await Promise.all(roots.filter((r) => this.programRows.has(r.dbFile)).map((r) => this.programsOf(r)));
        this.prefetchedRoots = { roots, generation };
      } catch (err) {
        log().warn(`Runs view: ${errorMessage(err)}`);
      }
      this.changed.fire(undefined);
    });
    this.refreshing = done;
    return done;
  }

  /** Coalesce bursts of run events into one refresh. */
  scheduleRefresh(delayMs = 400): void {
    this.generation++;
    const due = Date.now() + delayMs;
    if (this.refreshTimer && this.refreshDue <= due) return;
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshDue = due;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      void this.refresh();
    }, delayMs);
  }

  getTreeItem(node: RunsTreeNode): vscode.TreeItem {
    switch (node.kind) {
      case 'message':
        return new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
      case 'run':
        return this.runItem(node);
      case 'program':
        return this.programItem(node);
    }
  }

  async getChildren(node?: RunsTreeNode): Promise<RunsTreeNode[]> {
    if (!node) {
      const prefetched = this.prefetchedRoots;
      this.prefetchedRoots = undefined;
      return prefetched?.generation === this.generation ? prefetched.roots : this.listRuns();
    }
    if (node.kind === 'run') return this.programsOf(node);
    return [];
  }

  dispose(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    for (const s of this.subscriptions) s.dispose();
    this.changed.dispose();
  }

  private async listRuns(): Promise<RunNode[]> {
    const files = await listRunFiles();
    const active = this.controller.active;
    const nodes = await Promise.all(
      files.map(async (file): Promise<RunNode> => {
        this.controller.registerRun(file.runId, file.dbFile);
        const isActive = active?.dbFile === file.dbFile;
        try {
          const info = await this.controller.query({ kind: 'runInfo', dbFile: file.dbFile });
          return { kind: 'run', runId: file.runId, dbFile: file.dbFile, info, error: null, active: isActive };
        } catch (err) {
          return { kind: 'run', runId: file.runId, dbFile: file.dbFile, info: null, error: errorMessage(err), active: isActive };
        }
      }),
    );
    const createdAt = (n: RunNode): number => n.info?.meta.createdAt ?? 0;
    nodes.sort((a, b) => Number(b.active) - Number(a.active) || createdAt(b) - createdAt(a) || b.runId.localeCompare(a.runId));
    this.roots = nodes;
    return nodes;
  }

  private async programsOf(run: RunNode): Promise<RunsTreeNode[]> {
    if (!run.info) return [{ kind: 'message', label: run.error ?? 'cannot read this run' }];
    // Bans change rows (marked, Unban offered) without a step.
    const readAt = `${run.info.lastStep}/${run.info.summary.programs}/${run.info.banned.join(',')}`;
    const known = this.programRows.get(run.dbFile);
    if (known?.readAt === readAt) return known.rows;
    try {
      const rows = await this.listPrograms(run, run.info);
      this.programRows.set(run.dbFile, { readAt, rows });
      return rows;
    } catch (err) {
      return [{ kind: 'message', label: `cannot read this run: ${errorMessage(err)}` }];
    }
  }

  private async listPrograms(run: RunNode, info: RunInfo): Promise<RunsTreeNode[]> {
    const [improvements, steps] = await Promise.all([
      this.controller.query({ kind: 'improvements', dbFile: run.dbFile }),
      this.controller.query({ kind: 'steps', dbFile: run.dbFile }),
    ]);
    if (improvements.length === 0) return [{ kind: 'message', label: 'no program yet' }];
    const countsOf = new Map(steps.map((s) => [s.step, s.stats.counts as Record<string, number>]));
    const origin = runOrigin(info.meta);
    const direction: Direction = info.meta.direction;
    const objectives = new Map(improvements.map((p) => [p.id, objectiveOf(p, direction)]));
    const previousOf = new Map(improvements.map((p, i) => [p.id, improvements[i - 1]]));
    return programRowOrder(improvements).map((p): ProgramNode => {
      const previous = previousOf.get(p.id);
      const objective = objectives.get(p.id) ?? null;
      const previousObjective = previous ? (objectives.get(previous.id) ?? null) : null;
      return {
        kind: 'program',
        runId: run.runId,
        dbFile: run.dbFile,
        programId: p.id,
        parentId: p.parentId,
        step: p.step,
        stepRank: p.stepRank ?? null,
        score: p.score,
        objective,
        delta: objective !== null && previousObjective !== null ? objective - previousObjective : null,
        previousName: previous ? programName({ step: previous.step, stepRank: previous.stepRank ?? null }) : null,
        parentName: p.parentName ?? null,
        counts: p.step === 0 ? p.outcome : countsText(countsOf.get(p.step)),
        banned: info.banned.includes(p.id),
        live: p.live ?? true,
        extension: origin.extension,
        fileUri: origin.fileUri,
        startCode: origin.startCode,
        direction,
        pinnedBest: p.pinnedBest,
      };
    });
  }

  private runItem(node: RunNode): vscode.TreeItem {
    const item = new vscode.TreeItem(
      node.runId,
      node.active ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed,
    );
    item.id = `run:${node.dbFile}`;
    item.contextValue = node.active ? activeRunContext(this.controller.active?.state ?? 'running') : STORED_RUN_CONTEXT;
    if (node.info && recordsMetaRecommendations(node.info.meta)) item.contextValue += RECOMMENDING_CONTEXT_SUFFIX;
    if (!node.info) {
      item.description = 'unreadable';
      item.iconPath = new vscode.ThemeIcon('warning');
      item.tooltip = node.error ?? undefined;
      return item;
    }
    const best = node.info.summary.best;
    const state = node.active ? (this.controller.active?.state ?? 'running') : undefined;
    // What fits a narrow sidebar first: the best score and the task; the run id and the rest in the tooltip.
    const bestObjective = displayObjective(best?.score ?? null, node.info.meta.direction);
    item.label = `${bestObjective === null ? NO_VALID_PROGRAM : fmt(bestObjective)} · ${node.info.meta.task}`;
    const stepWords = `step ${Math.max(node.info.lastStep, 0)}${bestObjective === null ? '' : ' · best'}`;
    item.description = [stepWords, ...(state ? [state] : []), node.runId].join(' · ');
    item.iconPath = new vscode.ThemeIcon(node.active ? (state === 'paused' ? 'debug-pause' : 'sync~spin') : 'database');
    const { task, programPath: program } = node.info.meta;
    const unprotected = node.info.meta.evaluatorTrust === 'in-sandbox';
    if (unprotected) {
      item.description = `${String(item.description)} · score not protected`;
      item.iconPath = new vscode.ThemeIcon('warning');
    }
    // Names and paths come from the database and the folder (anyone's): as text, never as Markdown.
    const tooltip = new vscode.MarkdownString('', true);
    tooltip.appendMarkdown('**').appendText(node.runId).appendMarkdown('**\n\nTask: ').appendText(task);
    tooltip.appendMarkdown('\n\nProgram: ').appendText(program);
    tooltip
      .appendMarkdown(`\n\nPrograms: ${node.info.summary.programs} · steps: ${node.info.summary.steps}\n\nDatabase: `)
      .appendText(node.dbFile);
    if (unprotected)
      tooltip.appendMarkdown('\n\n$(warning) ').appendText(`Score not protected from a hostile candidate: ${IN_SANDBOX_TRUST_REASON}`);
    item.tooltip = tooltip;
    return item;
  }

  private programItem(node: ProgramNode): vscode.TreeItem {
    // The score first (rows are cut at a narrow sidebar), then its name (step and rank) and the gain; the id and counts in the tooltip.
    const item = new vscode.TreeItem(fmt(node.objective), vscode.TreeItemCollapsibleState.None);
    item.id = programRowId(node.dbFile, node);
    // The gain is over the previous best, while the row opens the diff to the program's parent: each is said as what it is.
    const gain = node.delta === null ? null : `${node.delta >= 0 ? '+' : ''}${formatScore(node.delta, 4)}`;
    item.description = `${node.pinnedBest ? 'best · ' : ''}${programName(node)} · ${gain === null ? 'start' : `${gain} vs previous best`}`;
    item.tooltip =
      `Objective ${formatScore(node.objective)} (${node.direction}), ${programName(node)}: ${programNameDetail({ ...node, id: node.programId })}` +
      `${node.parentId ? `, child of ${node.parentName ?? `program ${node.parentId}`}` : ' (the starting program)'}${node.counts ? `\nStep ${node.step}: ${node.counts}` : ''}` +
      (gain !== null && node.previousName !== null ? `\n${gain}: the gain over the previous best (${node.previousName})` : '') +
      (node.parentId
        ? `\nClick: the diff against its parent (${node.parentName ?? `program ${node.parentId}`}, which it was made from)`
        : '');
    item.contextValue =
      (node.parentId ? PROGRAM_CONTEXT : ROOT_PROGRAM_CONTEXT) +
      (node.banned ? BANNED_CONTEXT_SUFFIX : node.live ? '' : GONE_CONTEXT_SUFFIX);
    item.iconPath = new vscode.ThemeIcon(
      node.banned ? 'circle-slash' : node.pinnedBest ? 'star-full' : node.parentId ? 'arrow-up' : 'circle-outline',
    );
    if (node.banned) item.tooltip += '\nBanned: never a parent, an inspiration or in a rollout (Unban Program lifts it)';
    item.command = node.parentId
      ? { command: 'thetaevolve.showProgramDiff', title: 'Show Diff', arguments: [node] }
      : { command: 'thetaevolve.openProgram', title: 'Open Program', arguments: [node] };
    return item;
  }
}
