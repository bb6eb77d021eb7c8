// An agent tool's refusal: bad input (an unknown run or id, a program without
// EVOLVE-BLOCK, guidance too long), a change in an untrusted workspace, or a
// run not in the state the tool needs. Its message names the problem; the run
// is unchanged.
import { ThetaEvolveError } from '../common/errors';

export class AgentToolError extends ThetaEvolveError {
  override readonly name = 'AgentToolError';
}
