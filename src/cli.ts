#!/usr/bin/env node
// `thetaevolve`: the headless runner. Shares src/engine with the extension.
import { commandHelp } from './cli/args';
import { forPeople, runHandler, startProcess } from './cli/entry';
import { type CommandHandler, COMMAND_SPECS } from './cli/commands';
import type { CliIO } from './cli/io';
import { runCommand } from './cli/run';
import { evaluateCommand } from './cli/evaluate';
import { applyCommand } from './cli/apply';
import { dbCommand } from './cli/db';
import { convertCommand } from './cli/convert';
import { steerCommand } from './cli/steer';
import { reportCommand } from './cli/report';
import { mcpCommand } from './cli/mcp';

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
  return runHandler(spec, handler, rest, io);
}

declare const __THETAEVOLVE_VERSION__: string | undefined;
const VERSION = typeof __THETAEVOLVE_VERSION__ === 'string' ? __THETAEVOLVE_VERSION__ : 'dev';

if (require.main === module) startProcess(main);
