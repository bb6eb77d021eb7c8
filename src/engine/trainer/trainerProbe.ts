// Whether anything answers at a trainer URL, asked when RL is switched on
// with no run in progress (a run's own start connects to it): one GET of
// the base URL, a few seconds at most, any HTTP answer counting.
import { describeNetworkError } from '../networkErrors';
import { JsonHttpClient, TransportError } from './http';

/** Seconds a probe waits for an answer. */
export const TRAINER_PROBE_TIMEOUT_MS = 5_000;

export async function probeTrainer(url: string, timeoutMs = TRAINER_PROBE_TIMEOUT_MS): Promise<{ answers: boolean; message: string }> {
  let client: JsonHttpClient;
  try {
    client = new JsonHttpClient(url, { timeoutMs });
  } catch (err) {
    return { answers: false, message: err instanceof Error ? err.message : String(err) };
  }
  try {
    const reply = await client.request('GET', '', undefined, AbortSignal.timeout(timeoutMs + 1000));
    return { answers: true, message: `the trainer at ${url} answers (HTTP ${reply.status})` };
  } catch (err) {
    const why = err instanceof TransportError ? err.message : describeNetworkError(err);
    return { answers: false, message: `nothing answers at ${url} (${why}): start the trainer there, or set thetaevolve.trainer.url` };
  } finally {
    client.close();
  }
}
