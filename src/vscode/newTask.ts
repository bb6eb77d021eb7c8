// "ThetaEvolve: New Task for This File": task.json and an evaluator template
// beside the open program (drafted by src/engine/task/scaffold.ts), opened
// next to it, after asking which way is better and what the result
// measures; task.json is validated as you type through the schema the
// extension contributes for our task files. A FunSearch specification
// instead becomes a task folder beside it (src/engine/task/funsearch.ts,
// as `thetaevolve convert spec.py --inputs JSON`), after asking its inputs.
import { readdir, stat } from 'node:fs/promises';
import { writeNewFile } from '../engine/newFiles';
import { basename, dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { askText, pickOne, showInfo } from './notify';
import { z } from 'zod';
import { errorMessage } from '../engine/common/errors';
import type { Direction } from '../engine/common/types';
import { isFunSearchSpecText } from '../engine/task/foreignTasks';
import {
  convertFunSearchSpec,
  FUNSEARCH_FILES,
  FUNSEARCH_REDUCTIONS,
  type FunSearchReduction,
  parseFunSearchInputs,
} from '../engine/task/funsearch';
import { draftTask, inferDirection } from '../engine/task/scaffold';
import { COMMAND_IDS } from './commandIds';
import { fileName, registerCommand } from './commandRegistry';
import { evolveBlockProblemOf } from './evolveBlockLens';

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

async function show(path: string): Promise<void> {
  const document = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
  // The program keeps the focus: marking its region and starting the run come next.
  await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preview: false, preserveFocus: true });
}

interface DirectionItem extends vscode.QuickPickItem {
  direction: Direction;
}

/**
 * Which way is better and what the result measures, asked: the direction the
 * program's own words give comes first, saying why. Undefined when the person
 * cancels (nothing is written then).
 */
async function askGoal(code: string): Promise<{ direction: Direction; objective: string } | undefined> {
  const inferred = inferDirection(code);
  const items: DirectionItem[] = (['maximize', 'minimize'] as const).map((direction) => ({
    direction,
    label: direction === 'maximize' ? 'Maximize: larger results are better' : 'Minimize: smaller results are better',
    ...(direction === inferred.direction
      ? { description: inferred.evidence ? `the program says "${inferred.evidence}"` : 'the default: the program does not say' }
      : {}),
  }));
  items.sort((a, b) => Number(b.direction === inferred.direction) - Number(a.direction === inferred.direction));
  const picked = await pickOne(items, {
    title: 'ThetaEvolve: New Task (1/2): which results are better?',
    placeHolder: 'The evaluator returns an objective; the task says which way is better',
    ignoreFocusOut: true,
  });
  if (!picked) return undefined;
  const objective = await askText({
    title: 'ThetaEvolve: New Task (2/2): what does the result measure?',
    prompt: 'In a few words, for the model\'s prompt (e.g. "the sum of the radii"); leave empty to say nothing',
    ignoreFocusOut: true,
  });
  if (objective === undefined) return undefined;
  return { direction: picked.direction, objective };
}

/**
 * What a caller of the command (a keybinding's `args`) may offer as the
 * answers' first values: a FunSearch specification's inputs (JSON text).
 */
const NewTaskArgsSchema = z.object({ inputs: z.string().optional() }).optional();

/** A FunSearch specification: ask its inputs and reduction, write the task folder beside it; null when the user cancels. */
async function newTaskForFunSearchSpec(
  specPath: string,
  offered: { inputs?: string },
): Promise<{ taskFile: string; evaluatorFile: string | null } | null> {
  const inputsText = await askText({
    value: offered.inputs,
    title: `ThetaEvolve: ${basename(specPath)} is a FunSearch specification`,
    prompt: 'The inputs its @funsearch.run function is called with, one call per item, as a JSON array (a list item is one argument)',
    placeHolder: '[8]   or   [[12, 7], [15, 10]]',
    ignoreFocusOut: true,
    validateInput: (text) => {
      try {
        parseFunSearchInputs(text);
        return null;
      } catch (err) {
        return errorMessage(err);
      }
    },
  });
  if (inputsText === undefined) return null;
  const reductions: Record<FunSearchReduction, string> = {
    last: "the score on the last input (FunSearch's own)",
    mean: 'the mean of the scores (as its forks)',
    sum: 'the sum of the scores',
  };
  const picked = await pickOne(
    FUNSEARCH_REDUCTIONS.map((reduce) => ({ label: reduce, description: reductions[reduce], reduce })),
    { title: "ThetaEvolve: the program's score is", ignoreFocusOut: true },
  );
  if (picked === undefined) return null;
  const converted = await convertFunSearchSpec(specPath, { inputs: parseFunSearchInputs(inputsText), reduce: picked.reduce });
  await show(converted.task.initialProgramPath);
  void showInfo(
    `ThetaEvolve: wrote ${fileName(vscode.Uri.file(converted.dir))}/ (OpenEvolve's layout): ${converted.evolve}() is the EVOLVE-BLOCK and ${converted.run}() runs once per input, in the sandbox with the candidate as in FunSearch, so scores are not protected. Start Run offers it.`,
  );
  const evaluatorFile = join(converted.dir, FUNSEARCH_FILES.evaluator);
  return { taskFile: evaluatorFile, evaluatorFile };
}

/**
 * Writes the task beside the active program; returns the files (also when
 * task.json was already there: then nothing is written), or null when the
 * person cancelled the questions.
 */
export async function newTaskForFile(args?: unknown): Promise<{ taskFile: string; evaluatorFile: string | null } | null> {
  // Only a plain object of known fields: a command argument (a keybinding's, a tree item's) is anyone's.
  const offered = NewTaskArgsSchema.safeParse(args instanceof vscode.Uri ? undefined : args).data ?? {};
  // It writes files into the workspace and drafts an evaluator that runs outside the sandbox.
  if (!vscode.workspace.isTrusted)
    throw new Error('New Task needs a trusted workspace: it writes a task and an evaluator into it (Manage Workspace Trust)');
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.scheme !== 'file') throw new Error('open a saved program file first: the task is written beside it');
  const document = editor.document;
  if (document.isDirty && !(await document.save())) throw new Error(`${fileName(document.uri)} could not be saved`);
  const programPath = document.uri.fsPath;
  if (isFunSearchSpecText(document.getText())) return newTaskForFunSearchSpec(programPath, offered);
  const dir = dirname(programPath);
  const taskFile = join(dir, 'task.json');
  if (await exists(taskFile)) {
    await show(taskFile);
    void showInfo(`ThetaEvolve: ${fileName(document.uri)}'s folder already has a task.json; it is open beside the program.`);
    return { taskFile, evaluatorFile: null };
  }
  const goal = await askGoal(document.getText());
  if (!goal) return null;
  const taken = new Set(await readdir(dir));
  const draft = draftTask({ programFile: basename(programPath), code: document.getText(), taken: (name) => taken.has(name), ...goal });
  const evaluatorFile = join(dir, draft.evaluatorFile);
  await writeNewFile(evaluatorFile, draft.evaluatorText);
  await writeNewFile(taskFile, draft.taskJson);
  await show(evaluatorFile);
  await show(taskFile);
  const problem = evolveBlockProblemOf(document);
  void showInfo(
    problem
      ? `ThetaEvolve: wrote task.json and ${draft.evaluatorFile}. Now select the lines to evolve and run "ThetaEvolve: Mark Selection as EVOLVE-BLOCK".`
      : `ThetaEvolve: wrote task.json and ${draft.evaluatorFile}: make the program write solution.json and the evaluator score it, then Start Run.`,
  );
  return { taskFile, evaluatorFile };
}

export function registerNewTask(context: vscode.ExtensionContext): void {
  registerCommand(context, COMMAND_IDS.newTaskForFile, newTaskForFile);
}
