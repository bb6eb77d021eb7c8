// EVOLVE-BLOCK awareness in the editor: a CodeLens over each region (Evolve |
// Dashboard | Best so far; a file may hold several regions, and a run evolves
// them all), a faint whole-line decoration with an overview ruler mark, and a
// warning (CodeLens + Problems) for unbalanced markers. Markers are found by text (locateEvolveBlocks), so any
// comment syntax works. Locations are cached per document version and
// decorations follow edits after a short debounce.
import * as vscode from 'vscode';
import { z } from 'zod';
import { EVOLVE_BLOCK_END, EVOLVE_BLOCK_START, type EvolveBlockLocation, locateEvolveBlocks } from '../engine/common/diff';
import { NOTEBOOK_CELL_SCHEME, notebookUriOf } from './notebookCells';

const LENS_COMMANDS = {
  evolve: 'thetaevolve.startRun',
  dashboard: 'thetaevolve.openDashboard',
  best: 'thetaevolve.showBestDiff',
} as const;

// A Jupyter notebook's Python cells too: a cell's lenses evolve its notebook (src/vscode/notebookCells.ts).
const DOCUMENT_SELECTOR: vscode.DocumentSelector = [
  { scheme: 'file' },
  { scheme: 'untitled' },
  { scheme: NOTEBOOK_CELL_SCHEME, language: 'python' },
];
const SCHEMES = new Set(['file', 'untitled', NOTEBOOK_CELL_SCHEME]);
const DEBOUNCE_MS = 250;
const NO_MARKERS: EvolveBlockLocation = {
  regions: [],
  problems: [{ kind: 'no_region', message: `no ${EVOLVE_BLOCK_START} / ${EVOLVE_BLOCK_END} markers`, lines: [] }],
};

// ---------------------------------------------------------------------------
// Locating, cached per document version

const cache = new Map<string, { version: number; location: EvolveBlockLocation }>();

/** The document's regions and problems (cached until its next edit). */
export function evolveBlockLocationOf(document: vscode.TextDocument): EvolveBlockLocation {
  const key = document.uri.toString();
  const hit = cache.get(key);
  if (hit && hit.version === document.version) return hit.location;
  const text = document.getText();
  // Most files have no marker at all: one substring scan, no line split.
  const location = text.includes('EVOLVE-BLOCK') ? locateEvolveBlocks(text) : NO_MARKERS;
  cache.set(key, { version: document.version, location });
  return location;
}

/** Line-comment prefix of common languages, for the "add markers" hint (and where no language configuration says). */
export function commentPrefix(languageId: string): string {
  if (
    [
      'python',
      'shellscript',
      'r',
      'julia',
      'ruby',
      'perl',
      'yaml',
      'toml',
      'makefile',
      'dockerfile',
      'powershell',
      'elixir',
      'nim',
      'coffeescript',
    ].includes(languageId)
  )
    return '#';
  if (['lua', 'haskell', 'sql', 'ada', 'elm', 'purescript'].includes(languageId)) return '--';
  if (['matlab', 'octave', 'latex', 'tex', 'erlang', 'prolog'].includes(languageId)) return '%';
  if (['fortran', 'fortran-modern', 'FortranFreeForm'].includes(languageId)) return '!';
  if (['lisp', 'scheme', 'clojure', 'racket'].includes(languageId)) return ';';
  return '//';
}

function fileNameOf(uri: vscode.Uri): string {
  return uri.path.split('/').pop() ?? uri.toString();
}

/**
 * Why the document cannot be evolved (no region, unbalanced markers: with
 * line numbers), or null when it has well-formed regions (one or more).
 */
export function evolveBlockProblemOf(document: vscode.TextDocument): string | null {
  const { problems } = evolveBlockLocationOf(document);
  if (problems.length === 0) return null;
  const name = fileNameOf(document.uri);
  if (problems.length === 1 && problems[0]?.kind === 'no_region') {
    const c = commentPrefix(document.languageId);
    return `${name} has no EVOLVE-BLOCK region: put the code to evolve between a line holding "${c} ${EVOLVE_BLOCK_START}" and one holding "${c} ${EVOLVE_BLOCK_END}" (any comment syntax works).`;
  }
  return `${name}: ${problems.map((p) => p.message).join('; ')}.`;
}

// ---------------------------------------------------------------------------
// CodeLens

class EvolveBlockLensProvider implements vscode.CodeLensProvider {
  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const { regions, problems } = evolveBlockLocationOf(document);
    const lenses: vscode.CodeLens[] = [];
    for (const region of regions) {
      const range = new vscode.Range(region.startLine, 0, region.endLine, 0);
      const args = [notebookUriOf(document.uri)];
      lenses.push(
        new vscode.CodeLens(range, {
          title: '$(play) Evolve',
          command: LENS_COMMANDS.evolve,
          arguments: args,
          tooltip: "Start a ThetaEvolve run on this file's EVOLVE-BLOCK",
        }),
        new vscode.CodeLens(range, {
          title: '$(graph) Dashboard',
          command: LENS_COMMANDS.dashboard,
          arguments: args,
          tooltip: 'Open the ThetaEvolve dashboard',
        }),
        new vscode.CodeLens(range, {
          title: '$(star) Best so far',
          command: LENS_COMMANDS.best,
          arguments: args,
          tooltip: 'Diff this file (left) against the best program found so far (right)',
        }),
      );
    }
    for (const problem of problems) {
      if (problem.kind !== 'unbalanced') continue;
      const line = problem.lines[problem.lines.length - 1] ?? 0;
      lenses.push(new vscode.CodeLens(new vscode.Range(line, 0, line, 0), { title: `$(warning) ${problem.message}`, command: '' }));
    }
    return lenses;
  }
}

// ---------------------------------------------------------------------------
// Decoration and diagnostics

/** Colour ids the manifest may contribute; without them, built-in theme colours stand in. */
const OWN_COLORS = {
  background: 'thetaevolve.evolveBlockBackground',
  border: 'thetaevolve.evolveBlockBorder',
  ruler: 'thetaevolve.evolveBlockRuler',
} as const;

const ContributedColors = z.object({ contributes: z.object({ colors: z.array(z.object({ id: z.string() })) }) });

function contributedColorIds(packageJSON: unknown): Set<string> {
  const parsed = ContributedColors.safeParse(packageJSON);
  return new Set(parsed.success ? parsed.data.contributes.colors.map((c) => c.id) : []);
}

function regionDecoration(packageJSON: unknown): vscode.TextEditorDecorationType {
  const own = contributedColorIds(packageJSON);
  const color = (id: string, fallback: string): vscode.ThemeColor => new vscode.ThemeColor(own.has(id) ? id : fallback);
  return vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    ...(own.has(OWN_COLORS.background) ? { backgroundColor: new vscode.ThemeColor(OWN_COLORS.background) } : {}),
    borderWidth: '0 0 0 2px',
    borderStyle: 'solid',
    borderColor: color(OWN_COLORS.border, 'editorInfo.foreground'),
    overviewRulerColor: color(OWN_COLORS.ruler, 'editorOverviewRuler.infoForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
  });
}

function diagnosticsOf(document: vscode.TextDocument, location: EvolveBlockLocation): vscode.Diagnostic[] {
  const out: vscode.Diagnostic[] = [];
  for (const problem of location.problems) {
    // A file without markers is just a file: nothing to report.
    if (problem.kind === 'no_region') continue;
    for (const line of problem.lines.slice(-1)) {
      if (line >= document.lineCount) continue;
      const diagnostic = new vscode.Diagnostic(document.lineAt(line).range, problem.message, vscode.DiagnosticSeverity.Warning);
      diagnostic.source = 'ThetaEvolve';
      out.push(diagnostic);
    }
  }
  return out;
}

/**
 * Register the CodeLens, the region decoration and the marker warnings for
 * every file. Lenses run thetaevolve.startRun / thetaevolve.openDashboard /
 * thetaevolve.showBestDiff with the document URI as their argument.
 */
export function registerEvolveBlockLens(context: Pick<vscode.ExtensionContext, 'subscriptions' | 'extension'>): vscode.Disposable {
  const lenses = new EvolveBlockLensProvider();
  const decoration = regionDecoration(context.extension.packageJSON);
  const diagnostics = vscode.languages.createDiagnosticCollection('thetaevolve');
  const timers = new Map<string, ReturnType<typeof setTimeout>>();

  const update = (document: vscode.TextDocument): void => {
    if (!SCHEMES.has(document.uri.scheme)) return;
    const location = evolveBlockLocationOf(document);
    const ranges = location.regions.map((r) => new vscode.Range(r.startLine, 0, r.endLine, 0));
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document === document) editor.setDecorations(decoration, ranges);
    }
    const found = diagnosticsOf(document, location);
    if (found.length > 0) diagnostics.set(document.uri, found);
    else diagnostics.delete(document.uri);
  };
  const updateSoon = (document: vscode.TextDocument): void => {
    const key = document.uri.toString();
    clearTimeout(timers.get(key));
    timers.set(
      key,
      setTimeout(() => {
        timers.delete(key);
        update(document);
      }, DEBOUNCE_MS),
    );
  };
  const forget = (document: vscode.TextDocument): void => {
    const key = document.uri.toString();
    clearTimeout(timers.get(key));
    timers.delete(key);
    cache.delete(key);
    diagnostics.delete(document.uri);
  };

  const registration = vscode.Disposable.from(
    decoration,
    diagnostics,
    vscode.languages.registerCodeLensProvider(DOCUMENT_SELECTOR, lenses),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.contentChanges.length > 0) updateSoon(e.document);
    }),
    vscode.workspace.onDidOpenTextDocument(update),
    vscode.workspace.onDidCloseTextDocument(forget),
    vscode.window.onDidChangeVisibleTextEditors((editors) => {
      for (const document of new Set(editors.map((e) => e.document))) update(document);
    }),
    new vscode.Disposable(() => {
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
    }),
  );
  for (const document of vscode.workspace.textDocuments) update(document);
  context.subscriptions.push(registration);
  return registration;
}
