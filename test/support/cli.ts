// The CLI's `main` run in-process with captured streams, as the binary runs it.
import { main } from '../../src/cli';
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
