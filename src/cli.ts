#!/usr/bin/env node
// `thetaevolve`: the headless runner. Shares src/engine with the extension.
import { commandHelp, parseArgs, UsageError } from './cli/args';
import { type CommandHandler, COMMAND_SPECS } from './cli/commands';
import { type CliIO, InputError } from './cli/io';
import { runCommand } from './cli/run';
import { withFlagNames } from './cli/settingsSources';
import { evaluateCommand } from './cli/evaluate';
import { applyCommand } from './cli/apply';
import { dbCommand } from './cli/db';
import { convertCommand } from './cli/convert';
import { steerCommand } from './cli/steer';
import { reportCommand } from './cli/report';
import { mcpCommand } from './cli/mcp';
import { errorMessage } from './engine/common/errors';
import { forDisplay } from './engine/common/displayText';
import { REWRITE_LINE } from './cli/progress';

const HANDLERS: Record<string, CommandHandler> = {
  run: runCommand,
  evaluate: evaluateCommand,
  apply: applyCommand,
  db: dbCommand,
  steer: steerCommand,
  convert: convertCommand,
  report: reportCommand,
  mcp: mcpCommand,
};

export function mainHelp(): string {
  const lines = [
    'thetaevolve: evolve programs with a language model (ThetaEvolve), from the command line.',
    '',
    'Usage:',
    ...COMMAND_SPECS.map((s) => `  ${commandSynopsis(s.name)}`),
    '',
    'Commands:',
    ...COMMAND_SPECS.map((s) => `  ${s.name.padEnd(9)} ${s.summary}`),
    '',
    'Exit codes: 0 the command did its job; 1 bad input (one line on stderr); 2 bad usage.',
    "Run 'thetaevolve <command> --help' for a command's flags.",
  ];
  return lines.join('\n');
}

function commandSynopsis(name: string): string {
  const spec = COMMAND_SPECS.find((s) => s.name === name);
  if (!spec) return name;
  const help = commandHelp(spec).split('\n')[0] ?? '';
  return help.replace(/^Usage: /, '');
}

/**
 * `io` whose stderr, the CLI's lines for people, passes forDisplay: task titles, model ids, warnings, reasons and
 * every database string may hold OSC 8 links, OSC 52 clipboard writes or cursor moves. The progress line's own
 * rewrite is kept. Stdout carries the --json lines and programs, exact; its lines for people filter their own.
 */
function forPeople(io: CliIO): CliIO {
  const stderr = (text: string): void =>
    io.stderr(text.startsWith(REWRITE_LINE) ? REWRITE_LINE + forDisplay(text.slice(REWRITE_LINE.length)) : forDisplay(text));
  return { ...io, stderr };
}

export async function main(argv: readonly string[], given: CliIO): Promise<number> {
  const io = forPeople(given);
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    io.stdout(mainHelp() + '\n');
    return command === undefined ? 2 : 0;
  }
  if (command === '--version') {
    io.stdout(`${VERSION}\n`);
    return 0;
  }
  const spec = COMMAND_SPECS.find((s) => s.name === command);
  const handler = HANDLERS[command];
  if (!spec || !handler) {
    io.stderr(
      `thetaevolve: unknown command '${command}' (commands: ${COMMAND_SPECS.map((s) => s.name).join(', ')}; see thetaevolve --help)\n`,
    );
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout(commandHelp(spec) + '\n');
    return 0;
  }
  try {
    return await handler(parseArgs(spec, rest), io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`thetaevolve ${command}: ${err.message}\n`);
      return 2;
    }
    if (err instanceof InputError) {
      io.stderr(`thetaevolve ${command}: ${withFlagNames(err.message)}\n`);
      return 1;
    }
    const message = errorMessage(err);
    io.stderr(`thetaevolve ${command}: ${message.split('\n')[0]}\n`);
    return 1;
  }
}

declare const __THETAEVOLVE_VERSION__: string | undefined;
const VERSION = typeof __THETAEVOLVE_VERSION__ === 'string' ? __THETAEVOLVE_VERSION__ : 'dev';

if (require.main === module) {
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
      process.stderr.write(`thetaevolve: ${forDisplay(errorMessage(err))}\n`);
      process.exitCode = 1;
    },
  );
}
