// The one interface every evaluation backend implements (docs/architecture.md "Evaluation backends"): `local` is the sandbox on this machine
// (src/engine/sandbox/evaluator.ts), `slurm` runs the same sandbox as SLURM
// jobs on a cluster (./slurm.ts). The loop sees only this shape.
import type { IsolationKind } from '../sandbox/isolation';
import type { EvaluationResult } from '../common/types';

export type EvaluationBackendKind = 'local' | 'slurm';

export interface EvaluateOptions {
  /** Aborting cancels the evaluation (a queued one never starts, a running one is killed); it then resolves as cancelled. */
  signal?: AbortSignal;
  /** Called once when the candidate starts running (a slot was free, or the job left the queue for a node). */
  onStart?: () => void;
  /** Called with the scheduler's job id each time the candidate is submitted as a job (SLURM only; again on a resubmit). */
  onSubmitted?: (jobId: string) => void;
}

export interface EvaluationBackend {
  readonly kind: EvaluationBackendKind;
  /** The sandbox candidates run in (on the compute node for SLURM), with its one plain warning when weaker than bubblewrap. */
  readonly isolation: { kind: IsolationKind; warning: string | null };
  /** One line for people: "local sandbox (bubblewrap), 16 at once" or "SLURM partition gpu, ...". */
  readonly description: string;
  /**
   * Never throws for candidate or infrastructure failures: every call ends in
   * one result. `evaluation_failed` (no score) only when the backend itself
   * could not evaluate the candidate.
   */
  evaluate(code: string, options?: EvaluateOptions): Promise<EvaluationResult>;
  /** Cancel queued and running evaluations (SLURM: scancel the run's jobs) and wait until they are gone. */
  close(): Promise<void>;
}
