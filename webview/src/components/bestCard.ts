// The best program so far: objective, step, lineage depth, its EVOLVE-BLOCK code, the evaluator's feedback on it, Show Diff / Lineage / Apply to File.
import type { BestView, RunView } from '../../../src/protocol/dashboardMessages';
import { el } from '../dom';
import { formatValue } from '../format';
import type { ThemeColours } from '../theme';
import { drawSolutionPicture } from './solutionPicture';
import { type ButtonControl, createButton } from './toolkit';

export class BestCard {
  readonly element = el('section', 'panel best-card');
  private readonly value = el('div', 'best-value', '–');
  private readonly facts = el('dl', 'best-facts');
  private readonly empty = el('p', 'empty', 'No valid program yet.');
  /** The best program's EVOLVE-BLOCK, as text (never as markup). */
  private readonly code = el('pre', 'best-code');
  /** The evaluator's feedback on it, as text (never as markup). */
  private readonly feedback = el('pre', 'best-code best-feedback');
  /** Its solution, drawn (packing, step function, matrix). */
  private readonly picture = el('canvas', 'best-picture');
  private readonly showDiff: ButtonControl;
  private readonly apply: ButtonControl;
  private readonly lineage: ButtonControl;
  private best: BestView | null = null;

  constructor(onShowDiff: (id: string) => void, onApply: (id: string) => void, onLineage: (id: string) => void) {
    this.showDiff = createButton('Show Diff', {
      title: 'Open the diff parent <-> best program',
      onClick: () => this.best && onShowDiff(this.best.id),
    });
    this.apply = createButton('Apply to File', {
      appearance: 'primary',
      title: "Replace the file's EVOLVE-BLOCK with the best program's (undoable)",
      onClick: () => this.best && onApply(this.best.id),
    });
    this.lineage = createButton('Lineage', {
      title: 'Its ancestors back to the starting program, each opening the diff to its parent',
      onClick: () => this.best && onLineage(this.best.id),
    });
    const actions = el('div', 'button-group');
    actions.append(this.showDiff.element, this.lineage.element, this.apply.element);
    this.code.title = "The best program's EVOLVE-BLOCK (Show Diff compares it with its parent)";
    this.picture.setAttribute('role', 'img');
    this.feedback.title = "The evaluator's feedback on the best program (its children's prompts get it)";
    this.element.append(
      el('h2', undefined, 'Best program'),
      this.value,
      this.empty,
      this.facts,
      actions,
      this.picture,
      this.code,
      this.feedback,
    );
    this.set(null, null);
  }

  set(best: BestView | null, run: RunView | null, theme: ThemeColours | null = null): void {
    this.best = best;
    this.picture.hidden = !best?.picture || theme === null;
    if (best?.picture && theme) drawSolutionPicture(this.picture, best.picture, theme);
    this.showDiff.setDisabled(!best);
    this.apply.setDisabled(!best);
    this.lineage.setDisabled(!best);
    this.empty.hidden = best !== null;
    this.facts.replaceChildren();
    this.code.textContent = best?.code ?? '';
    this.code.hidden = !best?.code;
    this.feedback.textContent = best?.feedback ? `Evaluator feedback:\n${best.feedback}` : '';
    this.feedback.hidden = !best?.feedback;
    if (!best) {
      this.value.textContent = '–';
      return;
    }
    this.value.textContent = formatValue(best.objective ?? best.score);
    this.value.title = run ? `objective (${run.directionLabel})` : 'objective';
    const fact = (term: string, value: string, title?: string) => {
      const dd = el('dd', undefined, value);
      if (title) dd.title = title;
      this.facts.append(el('dt', undefined, term), dd);
    };
    fact('objective', run ? run.directionLabel : '');
    if (run?.direction === 'minimize') fact('combined score', `${formatValue(best.score)} (1/objective)`);
    fact('found at step', String(best.step));
    fact('lineage depth', `${best.lineageDepth} ancestor${best.lineageDepth === 1 ? '' : 's'}`);
    // Its step and rank there ("step 12 #1"); the opaque id in the tooltip.
    fact('program', best.name ?? best.id, best.nameDetail ?? `program ${best.id}`);
  }
}
