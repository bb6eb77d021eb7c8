// Command-line parsing for `thetaevolve`: each command declares its
// positionals and flags; anything else is a one-line usage error (exit 2).
import { ThetaEvolveError } from '../engine/common/errors';

/** `list`: a string flag that may be given several times (e.g. --set). `url`: an http(s) URL. */
export type FlagKind = 'string' | 'url' | 'integer' | 'number' | 'boolean' | 'list';

export interface FlagSpec {
  kind: FlagKind;
  /** Shown in --help, e.g. "URL". */
  value?: string;
  help: string;
  /** integer and number flags: the least value that means something (a negative step count runs nothing). */
  minimum?: number;
}

export interface CommandSpec {
  name: string;
  summary: string;
  /** `variadic`: the last positional may be given several times (`<name>...`). */
  positionals: { name: string; help: string; optional?: boolean; variadic?: boolean }[];
  flags: Record<string, FlagSpec>;
}

export interface ParsedArgs {
  positionals: string[];
  flags: Record<string, string | number | boolean | string[]>;
}

export class UsageError extends ThetaEvolveError {
  override readonly name = 'UsageError';
}

export function parseArgs(spec: CommandSpec, argv: readonly string[]): ParsedArgs {
  const positionals: string[] = [];
  const flags: Record<string, string | number | boolean | string[]> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const flag = spec.flags[name];
    if (!flag) throw new UsageError(`unknown flag --${name} for '${spec.name}' (see thetaevolve ${spec.name} --help)`);
    if (flag.kind === 'boolean') {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`);
      flags[name] = true;
      continue;
    }
    let raw: string | undefined;
    if (eq !== -1) raw = arg.slice(eq + 1);
    else {
      raw = argv[i + 1];
      i++;
    }
    if (raw === undefined) throw new UsageError(`--${name} needs a value (${flag.value ?? flag.kind})`);
    if (flag.kind === 'list') {
      const previous = flags[name];
      flags[name] = [...(Array.isArray(previous) ? previous : []), raw];
      continue;
    }
    flags[name] = convert(name, flag, raw);
  }
  const required = spec.positionals.filter((p) => !p.optional).length;
  if (positionals.length < required) {
    const missing = spec.positionals[positionals.length];
    throw new UsageError(`'${spec.name}' needs <${missing?.name ?? '?'}> (usage: ${usageLine(spec)})`);
  }
  if (positionals.length > spec.positionals.length && !spec.positionals[spec.positionals.length - 1]?.variadic) {
    throw new UsageError(`'${spec.name}' got an unexpected argument '${positionals[spec.positionals.length]}' (usage: ${usageLine(spec)})`);
  }
  return { positionals, flags };
}

/**
 * A flag's value as its kind says, or a usage error naming the flag: an empty
 * value never stands for a default (`--db ""` is a mistake, not the runs folder).
 */
function convert(name: string, flag: FlagSpec, raw: string): string | number {
  if (flag.kind === 'list') return raw;
  if (raw.trim() === '') throw new UsageError(`--${name} needs a value (${flag.value ?? flag.kind}), got an empty one`);
  if (flag.kind === 'string') return raw;
  if (flag.kind === 'url') {
    if (!/^https?:\/\/[^/\s]/i.test(raw.trim()) || !URL.canParse(raw.trim())) {
      throw new UsageError(`--${name} needs an http:// or https:// URL, got '${raw}'`);
    }
    return raw.trim();
  }
  const n = Number(raw);
  if (!Number.isFinite(n) || (flag.kind === 'integer' && !Number.isInteger(n))) {
    throw new UsageError(`--${name} needs ${flag.kind === 'integer' ? 'an integer' : 'a number'}, got '${raw}'`);
  }
  if (flag.minimum !== undefined && n < flag.minimum) {
    throw new UsageError(
      `--${name} needs ${flag.kind === 'integer' ? 'an integer' : 'a number'} of at least ${flag.minimum}, got '${raw}'`,
    );
  }
  return n;
}

export function usageLine(spec: CommandSpec): string {
  const pos = spec.positionals.map((p) => (p.optional ? `[${p.name}]` : `<${p.name}>`) + (p.variadic ? '...' : '')).join(' ');
  const flags = Object.entries(spec.flags)
    .map(([name, f]) =>
      f.kind === 'boolean' ? `[--${name}]` : `[--${name} ${f.value ?? f.kind.toUpperCase()}]${f.kind === 'list' ? '...' : ''}`,
    )
    .join(' ');
  return `thetaevolve ${spec.name} ${pos} ${flags}`.replace(/\s+/g, ' ').trim();
}

export function commandHelp(spec: CommandSpec): string {
  const lines = [`Usage: ${usageLine(spec)}`, '', spec.summary, ''];
  for (const p of spec.positionals) lines.push(`  ${p.name.padEnd(22)} ${p.help}`);
  for (const [name, f] of Object.entries(spec.flags)) {
    const left = f.kind === 'boolean' ? `--${name}` : `--${name} ${f.value ?? f.kind.toUpperCase()}`;
    lines.push(`  ${left.padEnd(22)} ${f.help}`);
  }
  return lines.join('\n');
}

/** Flags read by name with their declared kind; absent flags give undefined. */
export function stringFlag(args: ParsedArgs, name: string): string | undefined {
  const v = args.flags[name];
  return typeof v === 'string' ? v : undefined;
}
export function numberFlag(args: ParsedArgs, name: string): number | undefined {
  const v = args.flags[name];
  return typeof v === 'number' ? v : undefined;
}
export function listFlag(args: ParsedArgs, name: string): string[] {
  const v = args.flags[name];
  return Array.isArray(v) ? v : [];
}
export function booleanFlag(args: ParsedArgs, name: string): boolean {
  return args.flags[name] === true;
}
