// The editor's order for the run's interpreter (docs/architecture.md "The
// researcher's Python"): the machine setting thetaevolve.python, the Python
// extension's active environment for the program's folder (its public API,
// read at run start; the extension may be absent), python.defaultInterpreterPath,
// then what the command line would find (VIRTUAL_ENV, CONDA_PREFIX, PATH).
import * as vscode from 'vscode';
import { z } from 'zod';
import type { Settings } from '../engine/common/config';
import { errorMessage } from '../engine/common/errors';
import { interpreterPath, type PythonChoice, pythonFromEnvironment } from '../engine/python/interpreter';
import { log } from './log';

export const PYTHON_EXTENSION_ID = 'ms-python.python';
/** How long the Python extension may take to activate and answer before the run goes on without it. */
const EXTENSION_ANSWER_MS = 15000;
/** python.defaultInterpreterPath's own default: nothing was chosen. */
const UNCHOSEN_DEFAULT = 'python';

// The part of ms-python.python's exported API used here (npm @vscode/python-extension has the full types), checked at the boundary.
const EnvironmentsApiSchema = z.object({
  environments: z.object({
    getActiveEnvironmentPath: z.custom<(resource?: vscode.Uri) => unknown>((v) => typeof v === 'function'),
    resolveEnvironment: z.custom<(environment: unknown) => unknown>((v) => typeof v === 'function'),
  }),
});
const EnvironmentPathSchema = z.object({ id: z.string(), path: z.string() });
const ResolvedEnvironmentSchema = z.object({ executable: z.object({ uri: z.object({ fsPath: z.string().min(1) }).optional() }) }).nullish();

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms / 1000} s`)), ms)),
  );
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** The Python extension's interpreter for `resource`, or null (not installed, no answer, no environment). */
async function pythonExtensionInterpreter(resource: vscode.Uri | undefined): Promise<string | null> {
  const extension = vscode.extensions.getExtension(PYTHON_EXTENSION_ID);
  if (!extension) return null;
  try {
    const exported: unknown = extension.isActive
      ? extension.exports
      : await within(Promise.resolve(extension.activate()), EXTENSION_ANSWER_MS, 'the Python extension');
    const api = EnvironmentsApiSchema.safeParse(exported);
    if (!api.success) {
      log().warn(`the Python extension exports no environments API this version of ThetaEvolve knows; its interpreter is not used`);
      return null;
    }
    const { environments } = api.data;
    const active = EnvironmentPathSchema.safeParse(environments.getActiveEnvironmentPath(resource));
    if (!active.success) return null;
    const resolved = ResolvedEnvironmentSchema.safeParse(
      await within(Promise.resolve(environments.resolveEnvironment(active.data)), EXTENSION_ANSWER_MS, 'the Python extension'),
    );
    return (resolved.success ? resolved.data?.executable.uri?.fsPath : undefined) ?? (active.data.path || null);
  } catch (err) {
    log().warn(`the Python extension's interpreter could not be read: ${errorMessage(err)}`);
    return null;
  }
}

/** The interpreter a run of `fileUri` uses, by the editor's order. */
export async function editorPythonChoice(fileUri: vscode.Uri | undefined, settings: Pick<Settings, 'python'>): Promise<PythonChoice> {
  const folder = fileUri ? vscode.workspace.getWorkspaceFolder(fileUri) : undefined;
  const cwd = folder?.uri.fsPath ?? process.cwd();
  if (settings.python.trim() !== '')
    return { path: interpreterPath(settings.python.trim(), process.env, cwd), source: 'thetaevolve.python' };
  const fromExtension = await pythonExtensionInterpreter(fileUri);
  if (fromExtension) return { path: interpreterPath(fromExtension, process.env, cwd), source: 'python extension' };
  const configured = vscode.workspace.getConfiguration('python', fileUri).get<string>('defaultInterpreterPath')?.trim() ?? '';
  if (configured !== '' && configured !== UNCHOSEN_DEFAULT) {
    const path = configured.replace(/\$\{workspaceFolder\}/g, cwd);
    return { path: interpreterPath(path, process.env, cwd), source: 'python.defaultInterpreterPath' };
  }
  return pythonFromEnvironment(process.env);
}
