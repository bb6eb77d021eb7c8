// What every entry point of the command line shares: the io of a real
// process (stdout, stderr, the stop signal), stderr filtered for people, and
// how a command's errors become its exit code. src/cli.ts (every command) and
// src/evaluateJob.ts (a SLURM job's `evaluate` alone) start through here.
import { forMessage } from '../engine/common/displayText';
import { errorMessage } from '../engine/common/errors';
import { type CommandSpec, parseArgs, UsageError } from './args';
import type { CommandHandler } from './commands';
import { type CliIO, InputError } from './io';
import { REWRITE_LINE } from './progress';
import { withFlagNames } from './settingsSources';

/**
 * `io` whose stderr, the CLI's lines for people, passes forMessage: task titles, model ids, warnings, reasons,
 * quoted evaluator stderr and every database string may hold OSC 8 links, OSC 52 clipboard writes, cursor moves or
 * `[label](command:ID)` links (live once an editor or an agent's chat renders the text). The progress line's own
 * rewrite is kept. Stdout carries the --json lines and programs, exact; its lines for people filter their own.
 */
export function forPeople(io: CliIO): CliIO {
  const stderr = (text: string): void =>
    io.stderr(text.startsWith(REWRITE_LINE) ? REWRITE_LINE + forMessage(text.slice(REWRITE_LINE.length)) : forMessage(text));
  return { ...io, stderr };
}

/** Run one command: 2 for bad usage, 1 for bad input or a failure (one line on stderr each), else the handler's code. */
export async function runHandler(spec: CommandSpec, handler: CommandHandler, args: readonly string[], io: CliIO): Promise<number> {
  try {
    return await handler(parseArgs(spec, args), io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`thetaevolve ${spec.name}: ${err.message}\n`);
      return 2;
    }
    if (err instanceof InputError) {
      io.stderr(`thetaevolve ${spec.name}: ${withFlagNames(err.message)}\n`);
      return 1;
    }
    const message = errorMessage(err);
    io.stderr(`thetaevolve ${spec.name}: ${message.split('\n')[0]}\n`);
    return 1;
  }
}

/** Run `main` with this process's arguments and io; the first SIGINT or SIGTERM asks it to stop, a second Ctrl-C quits. */
export function startProcess(main: (argv: readonly string[], io: CliIO) => Promise<number>): void {
  const controller = new AbortController();
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    // Ctrl-C again quits now. A repeated SIGTERM is the same request: timeout(1) and schedulers send it to the process and its group.
    if (stopping) {
      if (signal === 'SIGINT') process.exit(130);
      return;
    }
    stopping = true;
    process.stderr.write('thetaevolve: stopping after the current step is settled (Ctrl-C again to quit now)\n');
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const io: CliIO = {
    stdout: (t) => void process.stdout.write(t),
    stderr: (t) => void process.stderr.write(t),
    stderrIsTTY: Boolean(process.stderr.isTTY),
    signal: controller.signal,
    cwd: process.cwd(),
    env: process.env,
  };
  main(process.argv.slice(2), io).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`thetaevolve: ${forMessage(errorMessage(err))}\n`);
      process.exitCode = 1;
    },
  );
}
