// Programs of a run as read-only virtual documents:
// thetaevolve:/<runId>/<programId>/<label>.<ext>. The path ends in the
// program's extension so VS Code picks the language (and highlighting) from it.
// Served as a read-only file system, so program tabs and diffs come back after
// a window reload (readOnlyDocuments.ts).
import * as vscode from 'vscode';
import { errorMessage } from '../engine/common/errors';
import { registerReadOnlyDocuments } from './readOnlyDocuments';

export const PROGRAM_SCHEME = 'thetaevolve';

import type { StepRank } from '../engine/common/format';

/** What a program document and its diff titles need of a program. */
export interface ProgramDocumentSource {
  code: string;
  /** The task's own objective (null: an invalid program has none). */
  objective: number | null;
  step: number;
  stepRank?: StepRank | null;
  /** The evaluator's feedback kept for it ('' when none): shown beside the document (programFeedback.ts), never in it. */
  feedback: string;
}

export interface ProgramLookup {
  getProgram(runId: string, programId: string): Promise<ProgramDocumentSource | null>;
}

export interface ProgramRef {
  runId: string;
  programId: string;
}

/** Characters that would break the path or confuse a tab title ('#' is kept in a document's name: "step 12 #1"). */
function pathSafe(text: string, keepHash = false): string {
  const printable = [...text].map((c) => (c.charCodeAt(0) < 32 ? ' ' : c)).join('');
  const cleaned = printable.replace(keepHash ? /[/\\:*?"<>|%]+/g : /[/\\:*?"<>|#%]+/g, '-').trim();
  return cleaned === '' ? 'program' : cleaned;
}

/** thetaevolve:/<runId>/<programId>/<label>.<ext>; `extension` with or without its dot. */
export function programUri(runId: string, programId: string, label: string, extension: string): vscode.Uri {
  const ext = extension.replace(/^\./, '');
  const name = ext === '' ? pathSafe(label, true) : `${pathSafe(label, true)}.${pathSafe(ext)}`;
  return vscode.Uri.from({ scheme: PROGRAM_SCHEME, path: `/${pathSafe(runId)}/${pathSafe(programId)}/${name}` });
}

/** The run and program a thetaevolve: URI names, or undefined for any other URI. */
export function parseProgramUri(uri: vscode.Uri): ProgramRef | undefined {
  if (uri.scheme !== PROGRAM_SCHEME) return undefined;
  const parts = uri.path.split('/').filter((p) => p !== '');
  if (parts.length !== 3) return undefined;
  const [runId, programId] = parts as [string, string, string];
  return { runId, programId };
}

// Lookups registered in this extension host, most recent first: the first
// that knows a program answers.
const lookups: ProgramLookup[] = [];
let provider: vscode.Disposable | undefined;

/** Find a program through the registered lookups (null when none knows it). */
export async function findProgram(runId: string, programId: string): Promise<ProgramDocumentSource | null> {
  for (const lookup of [...lookups]) {
    const program = await lookup.getProgram(runId, programId);
    if (program) return program;
  }
  return null;
}

async function programText(uri: vscode.Uri): Promise<string> {
  const ref = parseProgramUri(uri);
  if (!ref) return `ThetaEvolve: ${uri.toString()} does not name a program (thetaevolve:/<run>/<program>/<name>).\n`;
  try {
    const program = await findProgram(ref.runId, ref.programId);
    if (program) return program.code;
    return `ThetaEvolve: program ${ref.programId} of run ${ref.runId} is not available (is the run's database still there?).\n`;
  } catch (err) {
    return `ThetaEvolve: cannot read program ${ref.programId} of run ${ref.runId}: ${errorMessage(err)}\n`;
  }
}

/** Add a lookup findProgram asks (most recent first): diff titles and blame read programs through it. Disposing removes it. */
export function addProgramLookup(lookup: ProgramLookup): vscode.Disposable {
  lookups.unshift(lookup);
  return new vscode.Disposable(() => {
    const at = lookups.indexOf(lookup);
    if (at >= 0) lookups.splice(at, 1);
  });
}

/**
 * Serve thetaevolve: documents from `lookup` (programs never change, so no
 * change events). Several lookups may be registered; disposing one removes it.
 */
export function registerProgramDocuments(lookup: ProgramLookup): vscode.Disposable {
  const added = addProgramLookup(lookup);
  provider ??= registerReadOnlyDocuments(PROGRAM_SCHEME, programText);
  return new vscode.Disposable(() => {
    added.dispose();
    if (lookups.length === 0) {
      provider?.dispose();
      provider = undefined;
    }
  });
}
