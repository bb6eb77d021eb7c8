// The response source of a run whose inference servers are SLURM jobs
// (thetaevolve.slurm.inference.*): an EndpointPool that starts with the
// servers of thetaevolve.endpoint (unless that is left at its default) and
// that job servers join as they come up (slurmInferenceJobs.ts).
import { randomBytes } from 'node:crypto';
import { type Settings, SETTINGS } from '../common/config';
import type { EndpointServersEvent, EngineEvent } from '../common/events';
import { slurmInferenceOptionsFromSettings, type SlurmInferenceOptions, slurmOptionsFromSettings } from '../evaluation/slurmSettings';
import { endpointOptionsFromSettings } from './endpointClient';
import { EndpointPool, parseEndpointList } from './endpointPool';
import { SlurmInferenceJobs } from './slurmInferenceJobs';

export interface SlurmInferencePool {
  pool: EndpointPool;
  jobs: SlurmInferenceJobs;
  /** The pool's per-server share with the jobs' state (job id, state, node). */
  serversEvent(): EndpointServersEvent;
  /** scancel the jobs (waits until the queue shows none), then stop the pool's health checks. */
  close(): Promise<void>;
}

export interface SlurmInferencePoolContext {
  runId: string;
  /** The run's own folder: the default staging place. */
  runFolder: string;
  apiKey: string | undefined;
  signal: AbortSignal;
  env?: NodeJS.ProcessEnv;
  onEvent: (event: EngineEvent) => void;
  onWarning: (message: string) => void;
}

/** Whether `baseURL`'s /models answers a request that carries no key (a server started without --api-key). */
async function answersWithoutKey(baseURL: string, signal: AbortSignal): Promise<boolean> {
  try {
    const response = await fetch(`${baseURL}/models`, { signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

/** The inference jobs the settings ask for, validated; null when none (or the offline sampler). Throws one message naming the bad setting. */
export function inferenceJobsRequested(settings: Settings): SlurmInferenceOptions | null {
  return settings.sampler === 'mutate' ? null : slurmInferenceOptionsFromSettings(settings);
}

const DEFAULT_ENDPOINT = SETTINGS.find((s) => s.key === 'endpoint')?.default;

/**
 * A run's key for its job servers: 64 hex digits. Never base64url: one key in 64 began with '-', which a server's
 * argument parser (vLLM's argparse, Node's parseArgs) reads as an option, so `--api-key <key>` failed every job of
 * that run at once and it was given up.
 */
export function newRunToken(): string {
  return randomBytes(32).toString('hex');
}

/**
 * Submit the inference jobs and wait until the run has a server: one of
 * thetaevolve.endpoint's, or the first job server that answers (said in
 * endpoint_state events: which job waits, and why). Stop aborts the wait
 * and cancels the jobs.
 */
export async function startSlurmInferencePool(
  settings: Settings,
  inference: SlurmInferenceOptions,
  context: SlurmInferencePoolContext,
): Promise<SlurmInferencePool> {
  // Left at its default, thetaevolve.endpoint names no server of the user's: the jobs are the servers.
  const staticURLs = settings.endpoint === DEFAULT_ENDPOINT ? [] : parseEndpointList(settings.endpoint);
  const { baseURL: _list, ...endpointOptions } = endpointOptionsFromSettings(settings, context.apiKey, { onWarning: context.onWarning });
  const pool = new EndpointPool({ ...endpointOptions, baseURLs: staticURLs });
  let jobs: SlurmInferenceJobs | null = null;
  // The jobs' first report comes from inside SlurmInferenceJobs.start, before `jobs` is set: it passes its states.
  const serversEvent = (states = jobs?.states()): EndpointServersEvent => ({ ...pool.serversEvent(), ...(states ? { jobs: states } : {}) });
  let waiting = false;
  // Random per run: the job servers' key (slurmInferenceJobs.ts writes it for them), sent to them instead of the user's.
  const token = newRunToken();
  /** Job servers that answered without the run's token, said once each. */
  const open = new Set<string>();
  jobs = await SlurmInferenceJobs.start({
    ...inference,
    runId: context.runId,
    token,
    cluster: slurmOptionsFromSettings(settings, context.runFolder),
    ...(context.env ? { env: context.env } : {}),
    onServerUp: async (baseURL) => {
      // A server that answers without the run's token is not the job's (another user's process on that port, or
      // a command that dropped --api-key): it would get the prompts, so it is not joined.
      if (await answersWithoutKey(baseURL, context.signal)) {
        if (!open.has(baseURL)) {
          open.add(baseURL);
          context.onWarning(
            `SLURM: the server at ${baseURL} answers without this run's token: not joined (slurm.inference.command must pass {token} as the server's --api-key)`,
          );
        }
        throw new Error(`${baseURL} does not require the run's token`);
      }
      await pool.addServer(baseURL, context.signal, token);
    },
    onServerDown: (baseURL) => pool.removeServer(baseURL),
    onChange: (states) => {
      context.onEvent(serversEvent(states));
      if (waiting && jobs) context.onEvent({ type: 'endpoint_state', time: Date.now(), waiting: true, message: jobs.waitingLine() });
    },
    // A server joining is news, not a problem: said as the endpoint's state, as a server coming back is.
    onNotice: (message, level) =>
      level === 'info'
        ? context.onEvent({ type: 'endpoint_state', time: Date.now(), waiting: false, message: `SLURM: ${message}` })
        : context.onWarning(`SLURM: ${message}`),
  });
  const started = jobs;
  try {
    if (staticURLs.length === 0) {
      waiting = true;
      context.onEvent({ type: 'endpoint_state', time: Date.now(), waiting: true, message: started.waitingLine() });
      await started.firstReady(context.signal);
      waiting = false;
      context.onEvent({ type: 'endpoint_state', time: Date.now(), waiting: false, message: 'a SLURM inference job answers' });
    }
  } catch (err) {
    await started.close();
    pool.dispose();
    throw err;
  }
  return {
    pool,
    jobs: started,
    serversEvent: () => serversEvent(),
    close: async () => {
      await started.close();
      pool.dispose();
    },
  };
}
