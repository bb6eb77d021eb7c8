// The CLI's `main` run in-process with captured streams, as the binary runs it;
// and the built CLI as the unprivileged user.
import { spawn } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../../src/cli';
import { findExecutable } from '../../src/engine/sandbox/isolation';
import { tempDir } from './tempDirs';
import type { CliIO } from '../../src/cli/io';

export async function runCli(
  args: string[],
  cwd: string,
  env: Record<string, string | undefined> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
    stderrIsTTY: false,
    signal: new AbortController().signal,
    cwd,
    env,
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

/**
 * The built CLI (`npm run build`) as the unprivileged user (uid 65534, through
 * setpriv), from a copy everyone can read: the checkout may sit below a
 * private folder that user cannot enter. Null where that cannot be had (not
 * root, no setpriv): the caller skips.
 */
export function runBuiltCliAsNobody(
  args: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> | null {
  const setpriv = findExecutable('setpriv');
  if (process.getuid?.() !== 0 || setpriv === null) return null;
  const built = join(__dirname, '..', '..', 'dist');
  if (!existsSync(join(built, 'cli.js'))) throw new Error(`${built}/cli.js is missing: run \`npm run build\` first (npm test does)`);
  const copy = tempDir('thetaevolve-as-nobody-', { mode: 0o755 });
  cpSync(built, join(copy, 'dist'), { recursive: true });
  const command = [
    setpriv,
    '--reuid=65534',
    '--regid=65534',
    '--clear-groups',
    '--',
    process.execPath,
    join(copy, 'dist', 'cli.js'),
    ...args,
  ];
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command[0] as string, command.slice(1), { cwd, env: { PATH: '/usr/bin:/bin', HOME: '/tmp', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
  });
}
