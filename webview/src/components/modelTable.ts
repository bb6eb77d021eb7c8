// The per-model table (docs/algorithm.md section 12, "Several models and
// cost"): samples, valid share, improvements, mean reward, tokens, cost and
// the chance of the next draw, one row per model. Shared by the dashboard,
// Compare Runs and the report; its columns and cells are the CLI's
// (src/engine/common/models.ts), model names through forDisplay there.
import { formatUsd, MODEL_TABLE_HEADER, modelTableCells, type ModelUsage, trainedModelOnlyText } from '../../../src/engine/common/models';
import { el } from '../dom';
import './modelTable.css';

export function modelTable(usage: ModelUsage, trainedModel: string | null = null): HTMLElement {
  const box = el('div', 'model-usage');
  if (usage.costUsd !== null) box.append(el('p', 'model-spend', `Spent ${formatUsd(usage.costUsd)}`));
  if (usage.models.length === 0) return box;
  const table = el('table', 'model-table');
  const head = el('tr');
  for (const h of MODEL_TABLE_HEADER) head.append(el('th', undefined, h));
  table.append(head);
  for (const row of usage.models) {
    const tr = el('tr');
    tr.dataset.model = row.name;
    const [name, ...rest] = modelTableCells(row);
    tr.append(
      el('td', undefined, `${name ?? ''}${trainedModel === row.name ? ' (trained)' : ''}`),
      ...rest.map((cell) => el('td', undefined, cell)),
    );
    table.append(tr);
  }
  box.append(table);
  if (trainedModel !== null) box.append(el('p', 'model-note', trainedModelOnlyText(trainedModel)));
  return box;
}
