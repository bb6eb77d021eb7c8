// The Compare Runs page (browser bundle), for the editor's Compare Runs panel
// and the `thetaevolve report` HTML file alike: the comparison comes embedded
// in the page (a report) or from the editor's messages; either way it is
// checked against the shared schema before anything is drawn. Every text of
// a run (labels, program code) goes in as textContent without control
// characters (forDisplay), never as markup.
import '../zodJitless';
import './compare.css';
import {
  type ComparedRun,
  COMPARED_SETTING_NAMES,
  COMPARED_SETTINGS,
  EMBEDDED_COMPARISON_ID,
  type ProgressPanel,
  progressLayout,
  type RunComparison,
  RunComparisonSchema,
} from '../../../src/engine/common/runComparison';
import { forDisplay } from '../../../src/engine/common/displayText';
import { programLabel } from '../../../src/engine/common/format';
import { zodIssueText } from '../../../src/engine/common/errors';
import { type ComparePageMessage, parseCompareHostMessage } from '../../../src/protocol/compareMessages';
import { applyChartDefaults } from '../charts/setup';
import { el } from '../dom';
import { modelTable } from '../components/modelTable';
import { formatCount, formatDuration, formatValue } from '../format';
import { onThemeChange, readTheme } from '../theme';
import { OutcomeChart, type ProgressAxis, ProgressChart, runColour, ThroughputChart } from './compareCharts';

interface CompareVsCodeApi {
  postMessage(message: ComparePageMessage): void;
}
declare function acquireVsCodeApi(): CompareVsCodeApi;

/** `#picture`: the progress chart alone, for `thetaevolve report --png`. */
const picture = location.hash === '#picture';
let theme = readTheme();
applyChartDefaults(theme);
let axis: ProgressAxis = 'step';
let comparison: RunComparison | null = null;

const app = document.getElementById('app') ?? document.body.appendChild(el('main'));
app.replaceChildren();
document.body.classList.toggle('picture', picture);
const status = el('p', 'compare-status', 'Reading the runs…');
status.setAttribute('role', 'status');
app.append(status);

function canvasBox(className: string, label: string): HTMLCanvasElement {
  const canvas = el('canvas');
  canvas.setAttribute('role', 'img');
  canvas.setAttribute('aria-label', label);
  const box = el('div', `chart-box ${className}`);
  box.append(canvas);
  return canvas;
}

function section(title: string, ...children: HTMLElement[]): HTMLElement {
  const s = el('section', 'compare-section');
  s.append(el('h2', undefined, title), ...children);
  return s;
}

function swatch(index: number): HTMLElement {
  const dot = el('span', 'run-swatch');
  dot.style.backgroundColor = runColour(theme, index);
  return dot;
}

function settingsTable(c: RunComparison): HTMLElement {
  const table = el('table', 'settings-table');
  const head = el('tr');
  head.append(el('th', undefined, 'setting'));
  c.runs.forEach((run, i) => {
    const th = el('th');
    th.append(swatch(i), document.createTextNode(forDisplay(run.runId)));
    head.append(th);
  });
  table.append(head);
  for (const key of COMPARED_SETTINGS) {
    const row = el('tr', c.differing.includes(key) ? 'differs' : undefined);
    row.append(el('td', undefined, COMPARED_SETTING_NAMES[key]));
    for (const run of c.runs) row.append(el('td', undefined, forDisplay(run.settings[key])));
    table.append(row);
  }
  return table;
}

function policyPanel(c: RunComparison): HTMLElement {
  const panel = el('div', 'policy-panel');
  c.runs.forEach((run, i) => {
    const block = el('div', 'policy-run');
    const title = el('h3');
    title.append(swatch(i), document.createTextNode(forDisplay(run.label)));
    block.append(title);
    if (run.policyVersions.length === 0) {
      block.append(el('p', 'muted', 'No policy versions: RL was off, or the run recorded none.'));
      panel.append(block);
      return;
    }
    const table = el('table', 'policy-table');
    const head = el('tr');
    for (const h of ['policy version', 'from step', 'steps', 'samples', 'mean reward', 'valid children'])
      head.append(el('th', undefined, h));
    table.append(head);
    for (const v of run.policyVersions) {
      const row = el('tr', 'policy-change');
      row.dataset.step = String(v.firstStep);
      row.append(
        el('td', undefined, forDisplay(v.version)),
        el('td', undefined, String(v.firstStep)),
        el('td', undefined, formatCount(v.steps)),
        el('td', undefined, formatCount(v.samples)),
        el('td', undefined, formatValue(v.meanReward)),
        el('td', undefined, v.validShare === null ? '–' : `${(100 * v.validShare).toFixed(1)}%`),
      );
      table.append(row);
    }
    block.append(table);
    panel.append(block);
  });
  return panel;
}

/** Each run's spend and per-model table (runs of one unpriced model have none). */
function modelsPanel(c: RunComparison): HTMLElement {
  const panel = el('div', 'models-panel');
  c.runs.forEach((run, i) => {
    if (!run.modelUsage) return;
    const title = el('h3');
    title.append(swatch(i), document.createTextNode(forDisplay(run.label)));
    panel.append(title, modelTable(run.modelUsage));
  });
  return panel;
}

function bestPrograms(c: RunComparison): HTMLElement {
  const list = el('div', 'best-programs');
  c.runs.forEach((run: ComparedRun, i) => {
    const block = el('div', 'best-run');
    const title = el('h3');
    title.append(swatch(i), document.createTextNode(forDisplay(run.label)));
    block.append(title);
    if (!run.best) {
      block.append(el('p', 'muted', 'No valid program yet.'));
      list.append(block);
      return;
    }
    // Programs are named as the Runs view names them ("step 11 #1 · model", "initial"); the id in the tooltip.
    const named = el('p', undefined, `${programLabel(run.best)}, objective ${formatValue(run.best.objective)}`);
    named.title = `program ${forDisplay(run.best.id)}`;
    block.append(named);
    block.append(el('pre', 'program-code', forDisplay(run.best.code)));
    const lineage = el('ol', 'lineage');
    for (const p of run.lineage.programs) {
      const entry = el('li', undefined, `${programLabel(p)} · ${formatValue(p.objective)}`);
      entry.title = `program ${forDisplay(p.id)}`;
      lineage.append(entry);
    }
    if (!run.lineage.complete) lineage.append(el('li', 'muted', 'earlier ancestors were evicted'));
    block.append(el('h4', undefined, 'Lineage (the program first)'), lineage);
    list.append(block);
  });
  return list;
}

function runSummary(c: RunComparison): HTMLElement {
  const list = el('ul', 'run-list');
  // Runs of different directions: each best says which way is better.
  const directions = new Set(c.runs.map((r) => r.direction)).size > 1;
  c.runs.forEach((run, i) => {
    const item = el('li');
    const last = run.steps[run.steps.length - 1];
    const better = directions ? (run.direction === 'minimize' ? ', lower is better' : ', higher is better') : '';
    item.append(
      swatch(i),
      el('strong', undefined, forDisplay(run.label)),
      document.createTextNode(
        ` (run ${forDisplay(run.runId)}: ${run.steps.length} steps, ${formatDuration(last?.elapsedMs ?? 0)}, best ${formatValue(last?.bestSoFar ?? null)}${better})`,
      ),
    );
    list.append(item);
  });
  return list;
}

let progress: ProgressChart[] = [];
let outcomes: OutcomeChart | null = null;
let throughput: ThroughputChart | null = null;
let rendered: RunComparison | null = null;

function axisButtons(): HTMLElement {
  const group = el('div', 'axis-buttons');
  group.setAttribute('role', 'group');
  group.setAttribute('aria-label', 'progress by');
  for (const [value, text] of [
    ['step', 'by step'],
    ['time', 'by elapsed time'],
  ] as const) {
    const button = el('button', undefined, text);
    button.type = 'button';
    button.setAttribute('aria-pressed', String(value === axis));
    button.addEventListener('click', () => {
      axis = value;
      for (const b of group.querySelectorAll('button')) b.setAttribute('aria-pressed', String(b === button));
      if (comparison) for (const chart of progress) chart.update(comparison, axis, theme);
    });
    group.append(button);
  }
  return group;
}

/**
 * The progress charts: one per task and direction (progressLayout), each
 * headed by its task when there are several, after a note saying why.
 */
function progressCharts(c: RunComparison): { parts: HTMLElement[]; charts: () => ProgressChart[] } {
  const layout = progressLayout(c.runs);
  const boxes = layout.panels.map((panel): [ProgressPanel, HTMLCanvasElement] => [panel, canvasBox('progress', 'progress')]);
  const parts: HTMLElement[] = [];
  if (layout.note !== null) {
    const note = el('p', 'compare-note', layout.note);
    note.setAttribute('role', 'note');
    parts.push(note);
  }
  const panels = el('div', 'progress-panels');
  for (const [panel, canvas] of boxes) {
    const figure = el('div', 'progress-panel');
    if (panel.heading !== null) {
      const heading = el('h3');
      for (const i of panel.runIndexes) heading.append(swatch(i));
      heading.append(document.createTextNode(forDisplay(panel.heading)));
      figure.append(heading);
    }
    figure.append(canvas.parentElement as HTMLElement);
    panels.append(figure);
  }
  parts.push(panels);
  // Charts are made once their canvases are in the page (chart.js sizes them from their box).
  return { parts, charts: () => boxes.map(([panel, canvas]) => new ProgressChart(canvas, panel, c, axis, theme)) };
}

/** Builds the page for a comparison of other runs; for the same runs again (a live run's new step), updates the charts and panels. */
function render(c: RunComparison): void {
  comparison = c;
  const sameRuns = rendered !== null && rendered.runs.map((r) => r.file).join('\n') === c.runs.map((r) => r.file).join('\n');
  if (!sameRuns || progress.length === 0) {
    const progressParts = progressCharts(c);
    app.replaceChildren(el('h1', undefined, picture ? 'ThetaEvolve: progress of the runs' : 'Compare runs'));
    if (picture) {
      app.append(...progressParts.parts);
    } else {
      const outcomesCanvas = canvasBox('outcomes', 'outcomes of each run');
      const throughputCanvas = canvasBox('throughput', 'samples per second of each step, per run');
      app.append(
        runSummary(c),
        section('Progress', axisButtons(), ...progressParts.parts),
        section('Policy versions', el('div', 'policy-slot')),
        ...(c.runs.some((r) => r.modelUsage) ? [section('Models and cost', el('div', 'models-slot'))] : []),
        section('Outcomes', outcomesCanvas.parentElement as HTMLElement),
        section('Throughput', throughputCanvas.parentElement as HTMLElement),
        section('Settings', el('div', 'settings-slot')),
        section('Best programs', el('div', 'best-slot')),
      );
      outcomes = new OutcomeChart(outcomesCanvas, c, theme);
      throughput = new ThroughputChart(throughputCanvas, c, theme);
    }
    progress = progressParts.charts();
  } else {
    for (const chart of progress) chart.update(c, axis, theme);
    outcomes?.update(c, theme);
    throughput?.update(c, theme);
  }
  if (!picture) {
    app.querySelector('.run-list')?.replaceWith(runSummary(c));
    app.querySelector('.policy-slot')?.replaceChildren(policyPanel(c));
    app.querySelector('.models-slot')?.replaceChildren(modelsPanel(c));
    app.querySelector('.settings-slot')?.replaceChildren(settingsTable(c));
    app.querySelector('.best-slot')?.replaceChildren(bestPrograms(c));
  }
  rendered = c;
  document.body.dataset.rendered = 'true';
}

function showError(message: string): void {
  status.textContent = message;
  status.classList.add('error');
  if (!status.isConnected) app.prepend(status);
}

onThemeChange(() => {
  theme = readTheme();
  applyChartDefaults(theme);
  if (comparison) {
    rendered = null;
    render(comparison);
  }
});

const embedded = document.getElementById(EMBEDDED_COMPARISON_ID);
if (embedded) {
  let raw: unknown = null;
  try {
    raw = JSON.parse(embedded.textContent ?? '');
  } catch {
    raw = null;
  }
  const parsed = RunComparisonSchema.safeParse(raw);
  if (parsed.success) render(parsed.data);
  else showError(`This report's data is damaged: ${zodIssueText(parsed.error, '(root)')}`);
} else {
  const api = acquireVsCodeApi();
  window.addEventListener('message', (event: MessageEvent<unknown>) => {
    const message = parseCompareHostMessage(event.data);
    if (message instanceof Error) showError(message.message);
    else if (message.type === 'error') showError(message.message);
    else render(message.comparison);
  });
  // Marks that the page's script runs (tests tell a page that never loaded from one that has nothing to show yet).
  document.body.dataset.thetaevolve = 'compare';
  api.postMessage({ type: 'ready' });
}
