// A run's guidance as a document (docs/algorithm.md section 11): Edit
// Guidance opens `thetaevolve-guidance:/<run>/guidance.md`, whose text is the
// guidance in force read from the run's database; saving it sends the text
// as a steer request (empty: clear the guidance), so it applies from the
// run's next step. While a saved text waits in the live run's steering inbox,
// the document reads that text, under a first line saying it is queued and
// from which step (the line is not part of the guidance: a save drops it).
// Nothing is kept outside the database and the inbox.
// Edit Model Recommendations opens `.../recommendations.md` the same way: the
// model's meta-recommendations in force (docs/algorithm.md section 12) under
// a first line saying who wrote them; saving sends a `recommendations`
// request, so they stay the model's, marked as edited by the researcher.
import * as vscode from 'vscode';
import type { RecommendationsInForce } from '../engine/common/snapshot';
import type { SteerRequest, SteerResult } from '../engine/common/steering';
import { DocumentFileSystem } from './readOnlyDocuments';
import type { RunController } from './runController';

export const GUIDANCE_SCHEME = 'thetaevolve-guidance';

/** The first line of a guidance document whose text waits for the run's next step. */
export function queuedLine(step: number, cleared: boolean): string {
  return `<!-- ThetaEvolve: queued, ${cleared ? 'clears the guidance' : 'applies'} at step ${step} -->`;
}
const QUEUED_LINE = /^<!-- ThetaEvolve: queued, [^\n]*-->\r?\n?/;

/** The first line of a recommendations document: who wrote what follows (not part of the text: a save drops it). */
export function recommendationsLine(recommendations: RecommendationsInForce | null): string {
  if (!recommendations) return '<!-- ThetaEvolve: no recommendations from the model in force; text saved here becomes them -->';
  const { afterStep, editedBy, step } = recommendations;
  const who =
    afterStep === null
      ? `written in the model's section by the ${editedBy ?? 'model'}`
      : `written by the model after step ${afterStep}${editedBy ? `, edited by the ${editedBy}` : ''}`;
  return `<!-- ThetaEvolve: ${who}, in force from step ${step} -->`;
}
const RECOMMENDATIONS_LINE = /^<!-- ThetaEvolve: [^\n]*-->\r?\n?/;
const RECOMMENDATIONS_FILE = 'recommendations.md';

export interface GuidanceRun {
  runId: string;
  dbFile: string;
}

/** Sends a steer request and says what became of it; undefined: refused (and said). */
export type SendSteer = (run: GuidanceRun, request: SteerRequest) => Promise<SteerResult | undefined>;

/** The guidance document of a run (the database's path rides in the query, so a restored editor still finds it). */
export function guidanceUri(run: GuidanceRun): vscode.Uri {
  return vscode.Uri.from({ scheme: GUIDANCE_SCHEME, path: `/${run.runId}/guidance.md`, query: run.dbFile });
}

/** The document of the model's meta-recommendations of a run. */
export function recommendationsUri(run: GuidanceRun): vscode.Uri {
  return vscode.Uri.from({ scheme: GUIDANCE_SCHEME, path: `/${run.runId}/${RECOMMENDATIONS_FILE}`, query: run.dbFile });
}

const isRecommendations = (uri: vscode.Uri): boolean => uri.path.split('/')[2] === RECOMMENDATIONS_FILE;

function runOfUri(uri: vscode.Uri): GuidanceRun {
  const runId = uri.path.split('/')[1];
  if (!runId || uri.query === '') throw vscode.FileSystemError.FileNotFound(uri);
  return { runId, dbFile: uri.query };
}

class GuidanceFileSystem extends DocumentFileSystem {
  constructor(
    private readonly controller: RunController,
    private readonly send: SendSteer,
  ) {
    super();
  }

  // A fixed time and size: the guidance is read whole on open, and a save is never taken for a conflict.
  stat(uri: vscode.Uri): vscode.FileStat {
    runOfUri(uri);
    return { type: vscode.FileType.File, ctime: 0, mtime: 0, size: 0 };
  }

  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    const run = runOfUri(uri);
    if (isRecommendations(uri)) {
      const { recommendations } = await this.controller.query({ kind: 'snapshot', dbFile: run.dbFile });
      return new TextEncoder().encode(`${recommendationsLine(recommendations ?? null)}\n${recommendations?.text ?? ''}`);
    }
    const queued = await this.controller.query({ kind: 'queuedGuidance', dbFile: run.dbFile });
    if (queued) return new TextEncoder().encode(`${queuedLine(queued.step, queued.text === null)}\n${queued.text ?? ''}`);
    const snapshot = await this.controller.query({ kind: 'snapshot', dbFile: run.dbFile });
    return new TextEncoder().encode(snapshot.guidance?.text ?? '');
  }

  async writeFile(uri: vscode.Uri, content: Uint8Array): Promise<void> {
    const run = runOfUri(uri);
    if (isRecommendations(uri)) {
      const text = new TextDecoder().decode(content).replace(RECOMMENDATIONS_LINE, '').trim();
      if (!(await this.send(run, { kind: 'recommendations', text })))
        throw vscode.FileSystemError.NoPermissions(`the recommendations of run ${run.runId} were not saved`);
      return;
    }
    const text = new TextDecoder().decode(content).replace(QUEUED_LINE, '');
    const request: SteerRequest = text.trim() === '' ? { kind: 'clearGuidance' } : { kind: 'guidance', text };
    const result = await this.send(run, request);
    // Refused (said already): the document stays unsaved, its text kept.
    if (!result) throw vscode.FileSystemError.NoPermissions(`the guidance of run ${run.runId} was not saved`);
  }
}

export function registerGuidanceDocuments(controller: RunController, send: SendSteer): vscode.Disposable {
  const provider = new GuidanceFileSystem(controller, send);
  return vscode.Disposable.from(
    provider,
    vscode.workspace.registerFileSystemProvider(GUIDANCE_SCHEME, provider, { isCaseSensitive: true }),
  );
}
