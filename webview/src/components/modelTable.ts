// The per-model table (docs/algorithm.md section 12, "Several models and
// cost"): samples, valid share, improvements, mean reward, tokens, cost and
// the chance of the next draw, one row per model. Shared by the dashboard,
// Compare Runs and the report. Model names are shown through forDisplay.
import { forDisplay } from '../../../src/engine/common/displayText';
import { formatUsd, type ModelUsage, trainedModelOnlyText } from '../../../src/engine/common/models';
import { el } from '../dom';

const percent = (x: number | null): string => (x === null ? '–' : `${(100 * x).toFixed(1)}%`);

export function modelTable(usage: ModelUsage, trainedModel: string | null = null): HTMLElement {
  const box = el('div', 'model-usage');
  if (usage.costUsd !== null) box.append(el('p', 'model-spend', `Spent ${formatUsd(usage.costUsd)}`));
  if (usage.models.length === 0) return box;
  const table = el('table', 'model-table');
  const head = el('tr');
  for (const h of ['model', 'format', 'samples', 'valid', 'improved', 'mean reward', 'tokens', 'cost', 'next draw'])
    head.append(el('th', undefined, h));
  table.append(head);
  for (const row of usage.models) {
    const tr = el('tr');
    tr.dataset.model = row.name;
    tr.append(
      el('td', undefined, forDisplay(row.name) + (trainedModel === row.name ? ' (trained)' : '')),
      el('td', undefined, row.editFormat),
      el('td', undefined, String(row.samples)),
      el('td', undefined, percent(row.validShare)),
      el('td', undefined, String(row.improvements)),
      el('td', undefined, row.meanReward === null ? '–' : row.meanReward.toFixed(3)),
      el('td', undefined, `${row.promptTokens + row.completionTokens}${row.estimatedTokens > 0 ? ' (estimated)' : ''}`),
      el('td', undefined, row.costUsd === null ? 'no price' : formatUsd(row.costUsd)),
      el('td', undefined, percent(row.probability)),
    );
    table.append(tr);
  }
  box.append(table);
  if (trainedModel !== null) box.append(el('p', 'muted', trainedModelOnlyText(trainedModel)));
  return box;
}
