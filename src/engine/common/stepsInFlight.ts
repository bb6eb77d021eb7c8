// The steps a run has in flight and what each is doing, folded from the
// engine events: with steps overlapping (settings.pipelineDepth) a step is
// evaluated while the next one generates, and the CLI's progress line and
// the dashboard's status say so ("step 7 evaluating, step 8 generating").
import type { EngineEvent } from './events';

export type StepPhase = 'generating' | 'evaluating';

export interface StepInFlightView {
  step: number;
  /** generating until the step has all its responses, then evaluating until it commits. */
  phase: StepPhase;
  /** Responses whose outcome is known (one evaluation_finished each). */
  finished: number;
}

export class StepsInFlight {
  private readonly steps = new Map<number, StepInFlightView>();

  /** Folds one event; says whether the steps or their phases changed (a finished evaluation only counts). */
  apply(event: EngineEvent): boolean {
    switch (event.type) {
      case 'step_started':
        // A step started again (redone after a failed try) replaces itself and the steps planned after it.
        for (const step of [...this.steps.keys()]) if (step >= event.step) this.steps.delete(step);
        this.steps.set(event.step, { step: event.step, phase: 'generating', finished: 0 });
        return true;
      case 'generation_finished': {
        const view = this.steps.get(event.step);
        if (!view) return false;
        view.phase = 'evaluating';
        return true;
      }
      case 'evaluation_finished': {
        const view = this.steps.get(event.step);
        if (view) view.finished++;
        return false;
      }
      case 'step_committed':
        return this.steps.delete(event.step);
      case 'paused':
      case 'run_finished': {
        const had = this.steps.size > 0;
        this.steps.clear();
        return had;
      }
      default:
        return false;
    }
  }

  /** Oldest step first. */
  get current(): StepInFlightView[] {
    return [...this.steps.values()].sort((a, b) => a.step - b.step);
  }

  /** "step 7 evaluating, step 8 generating"; with `samplesPerStep`, each with its count ("step 7 evaluating 30/32"); empty when none. */
  text(samplesPerStep?: number): string {
    return this.current
      .map((view) => `step ${view.step} ${view.phase}${samplesPerStep !== undefined ? ` ${view.finished}/${samplesPerStep}` : ''}`)
      .join(', ');
  }
}
