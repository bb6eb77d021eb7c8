// The dashboard page (browser bundle). It renders the saved state at once,
// says `ready`, and from then on applies the host's messages: a snapshot
// replaces everything; a step appends to the charts (chart.update('none'),
// no rebuild). Every message is validated against the shared protocol.
import './zodJitless';
import './dashboard.css';
import {
  type DashboardAction,
  type DashboardState,
  DASHBOARD_STATE_VERSION,
  type DatabaseView,
  emptyDashboardState,
  type BackendView,
  type HostMessage,
  parseHostMessage,
  parseSavedState,
  reduceDashboardState,
  type SummaryView,
} from '../../src/protocol/dashboardMessages';
import { BarChart, HeatMaps } from './charts/databaseCharts';
import { SeriesCharts } from './charts/seriesCharts';
import { applyChartDefaults } from './charts/setup';
import { BestCard } from './components/bestCard';
import { Header } from './components/header';
import { registerComponents } from './components/toolkit';
import { el, tile } from './dom';
import { modelTable } from './components/modelTable';
import { trainedModelOnlyText } from '../../src/engine/common/models';
import { NO_VALID_PROGRAM } from '../../src/engine/common/format';
import { binLabels, formatCompact, formatCount, formatDuration, formatValue } from './format';
import { onThemeChange, readTheme } from './theme';
import { vscodeApi } from './vscodeApi';

registerComponents();

const api = vscodeApi();
// Until the host's first snapshot, the page shows what it saved (or that it waits),
// never "No run yet" while a run may be going.
let state: DashboardState = parseSavedState(api.getState()) ?? {
  ...emptyDashboardState(),
  runState: { state: 'idle', message: 'Waiting for the extension…' },
};
let theme = readTheme();
applyChartDefaults(theme);

// ---------------------------------------------------------------- layout

const app = document.getElementById('app') ?? document.body.appendChild(el('main'));
app.replaceChildren();

const header = new Header(
  (action: DashboardAction) => api.postMessage({ type: 'action', action }),
  (enabled: boolean) => api.postMessage({ type: 'setRl', enabled }),
);
const notice = el('div', 'notice');
notice.setAttribute('role', 'status');
notice.hidden = true;

const tiles = {
  step: tile('step'),
  best: tile('best objective'),
  target: tile('target'),
  programs: tile('programs in database'),
  samples: tile('samples'),
  tokens: tile('completion tokens'),
  elapsed: tile('elapsed'),
};
const summary = el('section', 'summary');
summary.append(...Object.values(tiles).map((t) => t.element));
// Several models and cost (docs/algorithm.md section 12): the spend and one row per model; hidden otherwise.
const modelsPanel = el('section', 'panel models-panel');
modelsPanel.hidden = true;
// An evaluator cascade (docs/algorithm.md section 12): how many children reached and stopped at each stage; hidden otherwise.
const cascadePanel = el('section', 'panel cascade-panel');
cascadePanel.hidden = true;

function chartPanel(title: string, className = ''): { panel: HTMLElement; canvas: HTMLCanvasElement; note: HTMLElement } {
  const panel = el('section', `panel chart-panel ${className}`.trim());
  const box = el('div', 'chart-box');
  const canvas = el('canvas');
  canvas.setAttribute('role', 'img');
  canvas.setAttribute('aria-label', title);
  box.append(canvas);
  const note = el('p', 'panel-note');
  panel.append(el('h2', undefined, title), note, box);
  return { panel, canvas, note };
}

const progress = chartPanel('Progress', 'wide tall');
const outcomes = chartPanel('Outcomes per step');
const throughput = chartPanel('Throughput');
const latency = chartPanel('Request latency');
const stepTime = chartPanel('Step time: generation and evaluation');
const bestCard = new BestCard(
  (programId) => api.postMessage({ type: 'showDiff', programId }),
  (programId) => api.postMessage({ type: 'applyToFile', programId }),
  (programId) => api.postMessage({ type: 'showLineage', programId }),
);

const dbFacts = el('dl', 'db-facts');
const dbPanel = el('section', 'panel db-panel');
dbPanel.append(el('h2', undefined, 'Database'), dbFacts);
const islands = chartPanel('Island sizes');
const hist = chartPanel('Score histogram');
const heatPanel = el('section', 'panel wide heat-panel');
const heatGrid = el('div', 'heat-grid');
const heatCaption = el('p', 'panel-note');
const heatLegend = el('canvas', 'heat-legend');
const legendRow = el('div', 'legend-row');
legendRow.append(el('span', undefined, 'worse'), heatLegend, el('span', undefined, 'better'));
heatPanel.append(el('h2', undefined, 'MAP-Elites occupancy per island'), heatCaption, legendRow, heatGrid);

const sectionTitle = (text: string) => el('h2', 'section-title', text);
const grid = (...children: HTMLElement[]) => {
  const g = el('div', 'grid');
  g.append(...children);
  return g;
};
/** Panels one above the other in one grid cell, each its own height. */
const stack = (...children: HTMLElement[]) => {
  const column = el('div', 'stack');
  column.append(...children);
  return column;
};
/** The SLURM queue and the inference servers (when there are several): shown only when there is something to show. */
const backendPanel = el('section', 'panel backend');
backendPanel.hidden = true;

function renderBackend(backend: BackendView | undefined): void {
  backendPanel.replaceChildren();
  const parts: HTMLElement[] = [];
  if (backend?.queue) parts.push(el('p', 'backend-queue', backend.queue));
  if (backend && backend.servers.length > 0) {
    const list = el('ul', 'backend-servers');
    for (const server of backend.servers) {
      const text = `${server.url}: ${server.healthy ? 'up' : 'set aside'} · ${server.requests} requests${server.failures > 0 ? `, ${server.failures} failed` : ''} · ${formatValue(server.tokensPerSecond)} tokens/s${server.lastError && !server.healthy ? ` · ${server.lastError}` : ''}`;
      list.append(el('li', server.healthy ? undefined : 'warning', text));
    }
    parts.push(el('h2', undefined, 'Inference servers'), list);
  }
  if (backend?.jobs && backend.jobs.length > 0) {
    const list = el('ul', 'backend-jobs');
    for (const job of backend.jobs) list.append(el('li', job.up ? undefined : 'warning', job.text));
    parts.push(el('h2', undefined, 'Inference jobs (SLURM)'), list);
  }
  backendPanel.append(...parts);
  backendPanel.hidden = parts.length === 0;
}

app.append(
  header.element,
  notice,
  backendPanel,
  summary,
  modelsPanel,
  cascadePanel,
  grid(progress.panel),
  // The per-step bar charts share a column beside the best program, which is tall (picture, code): alone, the
  // outcomes panel was stretched to its height, half of it empty.
  grid(stack(outcomes.panel, stepTime.panel), bestCard.element),
  sectionTitle('Throughput'),
  grid(throughput.panel, latency.panel),
  sectionTitle('Database state'),
  grid(dbPanel, islands.panel, hist.panel),
  grid(heatPanel),
);

progress.note.textContent =
  'Best so far, best of each step, mean and 10th–90th percentiles of the valid scores, the target, and with RL where the policy changed.';
outcomes.note.textContent = 'Samples per outcome, with the score each penalty gives.';
throughput.note.textContent = 'Rates per second of step wall time.';
stepTime.note.textContent = 'Where each step’s time went (generation and evaluation may overlap).';

/**
 * The charts. Making them is most of the script's time (chart.js lays out and
 * draws each), so they are made once the header and numbers have painted: a
 * page restored after Reload Window shows its run that much sooner.
 */
interface Charts {
  series: SeriesCharts;
  islands: BarChart;
  hist: BarChart;
  heat: HeatMaps;
}

function makeCharts(): Charts {
  return {
    series: new SeriesCharts(
      {
        progress: progress.canvas,
        outcomes: outcomes.canvas,
        throughput: throughput.canvas,
        latency: latency.canvas,
        stepTime: stepTime.canvas,
      },
      theme,
    ),
    islands: new BarChart(islands.canvas, theme, { x: 'island', y: 'programs' }, (t) => t.blue),
    hist: new BarChart(hist.canvas, theme, { x: 'objective', y: 'programs' }, (t) => t.green),
    heat: new HeatMaps(heatGrid, heatCaption, heatLegend, theme),
  };
}

// ---------------------------------------------------------------- rendering

const LATENCY_NOTE = 'Endpoint request latency, 50th and 95th percentile.';
function renderLatencyNote(): void {
  const reported = state.series.points.some((p) => p.latencyMsP95 !== null || p.latencyMsP50 !== null);
  const offline = state.run?.source.kind === 'mutate';
  latency.note.textContent =
    reported || state.series.points.length === 0
      ? LATENCY_NOTE
      : offline
        ? 'No requests: the offline mutate sampler uses no model.'
        : 'No latency reported yet.';
}

function renderSummary(s: SummaryView): void {
  renderLatencyNote();
  const run = state.run;
  tiles.step.value.textContent = s.lastStep < 0 ? '–' : formatCount(s.lastStep);
  tiles.best.value.textContent = formatValue(s.bestEver);
  // Steps committed and nothing valid: said, not left as a dash (a penalty is no objective).
  tiles.best.note.textContent = s.bestEver === null && s.lastStep >= 0 ? NO_VALID_PROGRAM : run ? run.directionLabel : '';
  const target = run?.targetValue ?? null;
  tiles.target.value.textContent = formatValue(target);
  let targetNote = '';
  if (target !== null && s.bestEver !== null && run) {
    const reached = run.direction === 'maximize' ? s.bestEver >= target : s.bestEver <= target;
    targetNote = reached ? 'reached' : `gap ${formatValue(Math.abs(target - s.bestEver))}`;
  }
  tiles.target.note.textContent = targetNote;
  tiles.programs.value.textContent = formatCount(s.dbSize);
  tiles.samples.value.textContent = formatCompact(s.samples);
  tiles.tokens.value.textContent = formatCompact(s.completionTokens);
  tiles.elapsed.value.textContent = s.elapsedMs > 0 ? formatDuration(s.elapsedMs) : '–';
  // Samples, tokens and elapsed time are the whole run's; a resumed run says what its latest session took.
  tiles.elapsed.note.textContent = s.session ? `this session ${formatDuration(s.session.elapsedMs)} · ${s.session.count} sessions` : '';
  renderModels(s);
  renderCascade(s);
}

function renderCascade(s: SummaryView): void {
  cascadePanel.hidden = !s.cascade;
  if (!s.cascade) return cascadePanel.replaceChildren();
  const list = el('ul', 'cascade-stages');
  // A child ends at the stage that stopped it, or at the last (the full evaluator) when none did.
  for (const { stage, reached, stopped } of s.cascade)
    list.append(el('li', undefined, `stage ${stage}: ${formatCount(reached)} reached, ${formatCount(stopped)} ended there`));
  cascadePanel.replaceChildren(el('h2', undefined, 'Evaluator cascade'), list);
}

function renderModels(s: SummaryView): void {
  modelsPanel.hidden = !s.modelUsage;
  if (!s.modelUsage) return modelsPanel.replaceChildren();
  // With RL on, only the trained model's rollouts are sent (thetaevolve.trainer.model, default the first model).
  const rl = state.trainer.enabled && s.modelUsage.models.length > 1;
  modelsPanel.replaceChildren(el('h2', undefined, 'Models and cost'), modelTable(s.modelUsage));
  if (rl) modelsPanel.append(el('p', 'model-note', trainedModelOnlyText(null)));
}

function renderDatabase(db: DatabaseView | null, charts: Charts | undefined): void {
  dbFacts.replaceChildren();
  const fact = (term: string, value: string) => dbFacts.append(el('dt', undefined, term), el('dd', undefined, value));
  if (!db) {
    fact('programs', '–');
    charts?.islands.set([], []);
    charts?.hist.set([], []);
    heatCaption.textContent = 'No database yet.';
    return;
  }
  fact('programs', `${formatCount(db.programs)} of ${formatCount(db.populationSize)}`);
  fact('archive', `${formatCount(db.archive.size)} of ${formatCount(db.archive.capacity)}`);
  fact(
    'archive objective range',
    db.archive.worst === null ? '–' : `${formatValue(db.archive.worst)} … ${formatValue(db.archive.best)} (worst … best)`,
  );
  fact('islands', `${db.islands.length} (sampling island ${db.currentIsland} next)`);
  const m = db.migrations;
  fact(
    'migrations',
    `${formatCount(m.count)}${m.lastStep !== null ? `, last at step ${m.lastStep}` : ''} (every ${m.interval} generations, rate ${m.rate})`,
  );
  // Text a researcher wrote: set as text, never markup.
  const guidance = db.guidance ? (db.guidance.text.length > 300 ? `${db.guidance.text.slice(0, 300)}…` : db.guidance.text) : null;
  fact('guidance', db.guidance ? `since step ${db.guidance.step}: ${guidance}` : 'none');
  // The model's meta-recommendations (docs/algorithm.md section 12): text a model wrote, set as text, marked as the model's.
  const rec = db.recommendations;
  if (rec) {
    const by = `from the model${rec.afterStep !== null ? ` after step ${rec.afterStep}` : ''}${rec.editedBy ? `, edited by the ${rec.editedBy}` : ''}`;
    const text = rec.text.length > 300 ? `${rec.text.slice(0, 300)}…` : rec.text;
    fact('recommendations', `${by}, since step ${rec.step}: ${text}`);
  }
  hist.note.textContent = db.histogram ? `Objective of the ${db.histogram.label}.` : 'No valid program yet.';
  if (!charts) return;
  charts.islands.set(
    db.islands.map((i) => String(i.island)),
    db.islands.map((i) => i.size),
    db.islands.findIndex((i) => i.island === db.currentIsland),
  );
  if (db.histogram) {
    const { min, max, counts } = db.histogram;
    charts.hist.set(binLabels(min, (max - min) / counts.length, counts.length), counts, null, `objective (${db.histogram.label})`);
  } else {
    charts.hist.set([], [], null, 'objective (no valid program yet)');
  }
  charts.heat.set(db, state.run);
}

/** Everything from the state; the charts once they are made. */
function renderAll(charts: Charts | undefined): void {
  header.setRun(state.run);
  header.setRunState(state.runState);
  header.setTrainer(state.trainer);
  if (charts) {
    charts.series.setRun(state.run);
    charts.series.reset(state.series, state.summary.meanExact);
  }
  renderSummary(state.summary);
  bestCard.set(state.best, state.run, theme);
  renderDatabase(state.database, charts);
  renderBackend(state.backend);
}

function showNotice(level: 'info' | 'warning' | 'error', text: string): void {
  notice.textContent = text;
  notice.dataset.level = level;
  notice.hidden = false;
}

/** Incremental rendering of one message (the state is already reduced); messages come once the charts are made. */
function render(message: HostMessage, charts: Charts): void {
  switch (message.type) {
    case 'snapshot':
      notice.hidden = true;
      renderAll(charts);
      return;
    case 'step':
      if (!charts.series.step(message.bucketSteps, message.point, message.replaceLast, message.summary.meanExact)) {
        charts.series.reset(state.series, state.summary.meanExact);
      }
      renderSummary(message.summary);
      return;
    case 'series':
      charts.series.reset(message.series, message.summary.meanExact);
      renderSummary(message.summary);
      return;
    case 'database':
      renderDatabase(message.database, charts);
      return;
    case 'best':
      bestCard.set(message.best, state.run, theme);
      return;
    case 'trainer':
      header.setTrainer(message.trainer);
      return;
    case 'runState':
      header.setRunState(message.runState);
      return;
    case 'backend':
      renderBackend(message.backend);
      return;
    case 'notice':
      showNotice(message.level, message.text);
      return;
  }
}

// Saving is throttled: a step can arrive many times a second in a fast run.
let saveTimer: ReturnType<typeof setTimeout> | undefined;
function saveSoon(): void {
  if (saveTimer !== undefined) return;
  saveTimer = setTimeout(() => {
    saveTimer = undefined;
    api.setState(state);
  }, 500);
}

/** Make the charts, draw the state in them, then listen to the host and say `ready`. */
function startCharts(): void {
  const charts = makeCharts();
  renderAll(charts);
  window.addEventListener('message', (event: MessageEvent<unknown>) => {
    let message: HostMessage;
    try {
      message = parseHostMessage(event.data);
    } catch (err) {
      console.warn(`dashboard: ignored ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    state = reduceDashboardState(state, message);
    render(message, charts);
    // Marks that the page shows the host's state, not a saved or empty one.
    if (message.type === 'snapshot') document.body.dataset.synced = 'true';
    if (message.type !== 'notice') saveSoon();
  });

  onThemeChange(() => {
    const next = readTheme();
    if (JSON.stringify(next) === JSON.stringify(theme)) return;
    theme = next;
    applyChartDefaults(theme);
    charts.series.applyTheme(theme);
    charts.islands.applyTheme(theme);
    charts.hist.applyTheme(theme);
    charts.heat.applyTheme(theme);
    renderDatabase(state.database, charts);
    bestCard.set(state.best, state.run, theme);
  });

  api.postMessage({ type: 'ready', stateVersion: DASHBOARD_STATE_VERSION });
}

// The header, numbers and best program first, from the saved state; the charts after that frame has painted
// (a hidden page paints nothing, so it need not wait).
renderAll(undefined);
document.body.dataset.thetaevolve = 'dashboard';
if (document.visibilityState === 'hidden') startCharts();
else requestAnimationFrame(() => setTimeout(startCharts, 0));
