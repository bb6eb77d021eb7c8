// How an inference server run as a SLURM job is described to people, the same
// in the CLI and on the dashboard: its job, state, node and, once its server
// is in the endpoint pool, that server's requests and throughput.
import type { EndpointServersEvent } from './events';

export type InferenceJobView = NonNullable<EndpointServersEvent['jobs']>[number];

/** "server 0 job 12 RUNNING on gpu-07, 48 requests, 910 tok/s" (with the pending reason, or the resubmits, where there are). */
export function inferenceJobText(job: InferenceJobView, servers: EndpointServersEvent['servers']): string {
  const server = job.baseURL === null ? undefined : servers.find((s) => s.baseURL === job.baseURL);
  const where = job.host ? ` on ${job.host}` : '';
  const why = job.reason && job.reason !== 'None' ? ` (${job.reason})` : '';
  const load = server ? `, ${server.requests} requests, ${Math.round(server.tokensPerSecond)} tok/s` : '';
  const again = job.resubmits > 0 ? `, resubmitted ${job.resubmits}x` : '';
  return `server ${job.index} job ${job.jobId ?? '-'} ${job.state}${why}${where}${load}${again}`;
}
