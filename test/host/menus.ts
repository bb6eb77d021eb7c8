// What package.json's menus offer in a given context: its `when` clauses read
// with the context keys a test names (the subset of VS Code's when-clause
// language the manifest uses: ||, &&, ==, !=, =~ /regex/, true, false, a bare key).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './support';

interface MenuEntry {
  command: string;
  when?: string;
}

type Context = Record<string, string | boolean | undefined>;

function term(text: string, context: Context): boolean {
  const t = text.trim();
  if (t === 'true') return true;
  if (t === 'false') return false;
  const regex = /^([\w.]+)\s*=~\s*\/(.*)\/([a-z]*)$/.exec(t);
  if (regex) return new RegExp(regex[2] as string, regex[3]).test(String(context[regex[1] as string] ?? ''));
  const compare = /^([\w.]+)\s*(==|!=)\s*(.+)$/.exec(t);
  if (compare) {
    const equal = String(context[compare[1] as string]) === (compare[3] as string).trim().replace(/^'(.*)'$/, '$1');
    return compare[2] === '==' ? equal : !equal;
  }
  const negated = /^!\s*([\w.]+)$/.exec(t);
  if (negated) return !context[negated[1] as string];
  assert.match(t, /^[\w.]+$/, `a when clause the test cannot read: ${t}`);
  return Boolean(context[t]);
}

/** Whether a `when` clause holds in `context` (no clause: always). */
export function whenHolds(when: string | undefined, context: Context): boolean {
  if (when === undefined) return true;
  assert.ok(!/[()]/.test(when.replace(/\/[^/]*\//g, '')), `a when clause with parentheses: ${when}`);
  return when.split('||').some((conjunction) => conjunction.split('&&').every((part) => term(part, context)));
}

function menus(): Record<string, MenuEntry[]> {
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
    contributes: { menus: Record<string, MenuEntry[]> };
  };
  return manifest.contributes.menus;
}

/** The ThetaEvolve commands the Command Palette lists with these context keys. */
export function paletteCommands(commands: readonly string[], context: Context): string[] {
  const entries = menus().commandPalette ?? [];
  return commands.filter((command) => entries.filter((e) => e.command === command).every((e) => whenHolds(e.when, context)));
}

/** The commands a Runs view row's context menu (inline actions included) offers. */
export function rowMenuCommands(contextValue: string, context: Context): string[] {
  const offered = (menus()['view/item/context'] ?? []).filter((e) =>
    whenHolds(e.when, { ...context, view: 'thetaevolve.runs', viewItem: contextValue }),
  );
  return [...new Set(offered.map((e) => e.command))].sort();
}
