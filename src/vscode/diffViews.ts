// Native diff editors over the read-only program documents, old on the left
// and new on the right: parent <-> child ("Show Diff") and the file as it is
// now <-> a program ("Compare with File", "Best so far"; for a notebook, its
// evolved cell: src/vscode/notebookCells.ts).
import * as vscode from 'vscode';
import { formatScore, programName, type StepRank } from '../engine/common/format';
import { compareProgramWithCell, isNotebookUri } from './notebookCells';
import { findProgram, programUri } from './programDocuments';

interface ProgramSummary {
  id: string;
  /** The task's own objective (null: the program has none, an invalid one). */
  objective?: number | null;
  step?: number;
  stepRank?: StepRank | null;
}

/** A program as people know it: its step and rank there (its id only when the step is unknown), with its objective. */
function name(program: ProgramSummary): string {
  return program.step === undefined ? program.id : programName({ step: program.step, stepRank: program.stepRank ?? null });
}

function describe(program: ProgramSummary): string {
  return program.objective === undefined || program.objective === null
    ? name(program)
    : `${name(program)} (${formatScore(program.objective, 4)})`;
}

/** "circle-packing: step 11 #1 (0.9598) <-> step 12 #1 (0.9612)"; `prefix` is usually the task name. The ids are in the documents' paths (the tabs' tooltips). */
export function programDiffTitle(parent: ProgramSummary, child: ProgramSummary, prefix?: string): string {
  return `${prefix ? `${prefix}: ` : ''}${describe(parent)} \u2194 ${describe(child)}`;
}

async function summary(runId: string, programId: string): Promise<ProgramSummary> {
  try {
    const program = await findProgram(runId, programId);
    return program
      ? { id: programId, objective: program.objective, step: program.step, stepRank: program.stepRank ?? null }
      : { id: programId };
  } catch {
    // The document itself says what went wrong; the title just stays short.
    return { id: programId };
  }
}

/** The document's name (its path holds the id). */
function label(program: ProgramSummary): string {
  return name(program);
}

/** Open parent <-> child in a diff editor (read-only virtual documents). */
export async function showProgramDiff(runId: string, parentId: string, childId: string, extension: string, title?: string): Promise<void> {
  const [parent, child] = await Promise.all([summary(runId, parentId), summary(runId, childId)]);
  await vscode.commands.executeCommand(
    'vscode.diff',
    programUri(runId, parentId, label(parent), extension),
    programUri(runId, childId, label(child), extension),
    title ?? programDiffTitle(parent, child),
    { preview: true } satisfies vscode.TextDocumentShowOptions,
  );
}

/** Open the file as it is now (unsaved edits included, on the left: old) <-> the program (right: new) in a diff editor. */
export async function compareProgramWithFile(runId: string, programId: string, fileUri: vscode.Uri, extension: string): Promise<void> {
  const program = await summary(runId, programId);
  if (isNotebookUri(fileUri)) return compareProgramWithCell(runId, programId, label(program), describe(program), fileUri);
  const fileName = fileUri.path.split('/').pop() ?? fileUri.toString();
  await vscode.commands.executeCommand(
    'vscode.diff',
    fileUri,
    programUri(runId, programId, label(program), extension),
    `${fileName} (current) \u2194 ${describe(program)}`,
    { preview: true } satisfies vscode.TextDocumentShowOptions,
  );
}
