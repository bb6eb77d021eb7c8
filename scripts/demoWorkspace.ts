// The workspace `npm run demo` opens: the circle-packing task and settings.
// It sits inside the clone (.demo/, ignored by git), so it is marked for
// VS Code's git not to offer the clone's repository in every window (issue
// 43 item 14); its runs go where any workspace's go (docs/guide.md "Where
// runs are kept").
import { cpSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The workspace settings the demo writes (thetaevolve.endpoint is machine-scoped: user settings). */
export const DEMO_WORKSPACE_SETTINGS: Readonly<Record<string, unknown>> = {
  'thetaevolve.batchSize': 4,
  'thetaevolve.samplesPerPrompt': 4,
  'thetaevolve.evaluationConcurrency': 2,
  'thetaevolve.database.preset': 'small',
  // Without this every window of the workspace, inside the clone, asks about the clone's repository.
  'git.openRepositoryInParentFolders': 'never',
};

/** Write the demo workspace at `workspace`: the bundled circle-packing task of `repoRoot` (once; edits kept) and its settings. */
export function prepareDemoWorkspace(workspace: string, repoRoot: string): void {
  mkdirSync(join(workspace, '.vscode'), { recursive: true });
  const bundled = join(repoRoot, 'tasks', 'circle-packing');
  if (existsSync(bundled) && !existsSync(join(workspace, 'circle-packing')))
    cpSync(bundled, join(workspace, 'circle-packing'), { recursive: true });
  writeFileSync(join(workspace, '.vscode', 'settings.json'), JSON.stringify(DEMO_WORKSPACE_SETTINGS, null, 2) + '\n');
}
