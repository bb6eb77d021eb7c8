// Novelty rejection put together for a run (docs/algorithm.md section 12):
// the embedding client (the run's endpoint unless novelty.embeddingEndpoint
// names another; the run's API key goes only to the run's own endpoint) and
// the judge, one yes/no question through the run's response source.
import type { Settings } from '../../common/config';
import type { GenerationJob, ResponseSource, Sample } from '../../common/types';
import { RequestSignals } from '../../async/requestSignals';
import type { ProgramDatabase } from '../../database/programDatabase';
import { EmbeddingClient } from './embeddingClient';
import { NoveltyGate, type NoveltyJudge } from './noveltyGate';

/** The base URL embeddings are asked of, and whether it is the run's own endpoint. */
export function embeddingEndpointOf(settings: Pick<Settings, 'endpoint' | 'novelty.embeddingEndpoint'>): { url: string; own: boolean } {
  const own = (settings.endpoint.split(',')[0] ?? '').trim().replace(/\/+$/, '');
  const named = settings['novelty.embeddingEndpoint'].trim().replace(/\/+$/, '');
  return named === '' || named === own ? { url: own, own: true } : { url: named, own: false };
}

export interface NoveltySetup {
  settings: Settings;
  db: ProgramDatabase;
  source: ResponseSource;
  apiKey?: string;
  signal: AbortSignal;
  warn: (message: string) => void;
}

/** The run's novelty gate, or null when novelty rejection is off. */
export function noveltyGateFor(setup: NoveltySetup): NoveltyGate | null {
  const { settings, source } = setup;
  if (!settings['novelty.enabled']) return null;
  const endpoint = embeddingEndpointOf(settings);
  const embedder = new EmbeddingClient({
    baseURL: endpoint.url,
    model: settings['novelty.embeddingModel'],
    apiKey: endpoint.own ? setup.apiKey : undefined,
    requestTimeoutMs: settings.requestTimeoutSeconds * 1000,
  });
  let judge: NoveltyJudge | null = null;
  if (settings['novelty.judge'] && source.kind !== 'llm')
    setup.warn(
      'thetaevolve.novelty.judge needs a model, and the mutate sampler has none: children over the threshold are not_novel unasked',
    );
  else if (settings['novelty.judge']) judge = modelJudge(source, setup.signal);
  return new NoveltyGate({ embedder, threshold: settings['novelty.threshold'], judge, warn: setup.warn, signal: setup.signal }, setup.db);
}

/**
 * The judge: each question one request to the run's source, with a signal of its own that the run's stop aborts
 * (a step asks about all its children over the threshold at once; the run's signal keeps one listener for them all).
 */
export function modelJudge(source: ResponseSource, runSignal: AbortSignal): NoveltyJudge {
  const requests = new RequestSignals(runSignal);
  return async (messages, { job, sampleIndex }) => {
    const question: GenerationJob = {
      key: `${job.key}-novelty-${sampleIndex}`,
      messages,
      n: 1,
      seed: job.seed + job.n + sampleIndex,
      parentId: job.parentId,
      parentCode: job.parentCode,
      ...(job.model !== undefined ? { model: job.model } : {}),
    };
    let answer: Sample | null = null;
    await requests.run((signal) =>
      source.generate([question], signal, (sample) => {
        answer = sample;
      }),
    );
    const got = answer as Sample | null;
    if (got === null) throw new Error('the model gave no answer');
    if (!got.ok) throw new Error(got.error);
    return { question, reply: got };
  };
}
