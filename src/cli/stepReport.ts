// What `thetaevolve run` prints beside a step's line: why its requests
// failed (each reason once, with its count) and the server's comings and
// goings. Kept apart from run.ts so any front end can print the same lines.
import type { EndpointServersEvent, EndpointStateEvent, StepCommittedEvent } from '../engine/common/events';
import { inferenceJobText } from '../engine/common/inferenceJobs';

/** A server's words go to a terminal: no control characters (escape sequences could rewrite what it shows), one line. */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ');
}

/** The lines under a step's summary naming why its failed requests failed (none when none failed). */
export function stepFailureLines(event: StepCommittedEvent, limit = 5): string[] {
  const failures = event.failures ?? [];
  const lines = failures.slice(0, limit).map((f) => `  failed: ${f.count} x ${printable(f.message)}`);
  if (failures.length > limit) lines.push(`  failed: ${failures.length - limit} more reason(s)`);
  return lines;
}

/** The line for an endpoint_state event: waiting for the server, or it answers again. */
export function endpointStateLine(event: EndpointStateEvent): string {
  return `thetaevolve run: ${printable(event.message)}`;
}

/**
 * The line for the inference servers run as SLURM jobs: each job's id, state,
 * node and, once its server is in the pool, its requests and throughput;
 * null when the run has none.
 */
export function inferenceJobsLine(event: EndpointServersEvent): string | null {
  if (!event.jobs || event.jobs.length === 0) return null;
  return `thetaevolve run: inference jobs: ${printable(event.jobs.map((job) => inferenceJobText(job, event.servers)).join('; '))}`;
}
