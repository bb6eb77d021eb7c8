// Why a step ends uncommitted: nothing of an abandoned step reaches the database.
import { ThetaEvolveError } from '../common/errors';

/** The run was stopped: the in-flight step is abandoned and the run ends. */
export class StopSignal extends ThetaEvolveError {
  override readonly name = 'StopSignal';
}

/** A step in which no request succeeded: abandoned uncommitted, redone or ending the run (settings.maxFailedSteps). */
export class FailedStep extends ThetaEvolveError {
  override readonly name = 'FailedStep';
}
