// A run's guidance as a document (docs/algorithm.md section 11): Edit
// Guidance opens `thetaevolve-guidance:/<run>/guidance.md`, whose text is the
// guidance in force read from the run's database; saving it sends the text
// as a steer request (empty: clear the guidance), so it applies from the
// run's next step. While a saved text waits in the live run's steering inbox,
// the document reads that text, under a first line saying it is queued and
// from which step (the line is not part of the guidance: a save drops it).
// Nothing is kept outside the database and the inbox.
import * as vscode from 'vscode';
import type { SteerRequest, SteerResult } from '../engine/common/steering';
import { DocumentFileSystem } from './readOnlyDocuments';
import type { RunController } from './runController';

export const GUIDANCE_SCHEME = 'thetaevolve-guidance';

/** The first line of a guidance document whose text waits for the run's next step. */
export function queuedLine(step: number, cleared: boolean): string {
  return `<!-- ThetaEvolve: queued, ${cleared ? 'clears the guidance' : 'applies'} at step ${step} -->`;
}
const QUEUED_LINE = /^<!-- ThetaEvolve: queued, [^\n]*-->\r?\n?/;

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
    const queued = await this.controller.query({ kind: 'queuedGuidance', dbFile: run.dbFile });
    if (queued) return new TextEncoder().encode(`${queuedLine(queued.step, queued.text === null)}\n${queued.text ?? ''}`);
    const snapshot = await this.controller.query({ kind: 'snapshot', dbFile: run.dbFile });
    return new TextEncoder().encode(snapshot.guidance?.text ?? '');
  }

  async writeFile(uri: vscode.Uri, content: Uint8Array): Promise<void> {
    const run = runOfUri(uri);
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
