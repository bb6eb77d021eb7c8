// The LLM response source: chat completions against any OpenAI-compatible
// server (vLLM, SGLang, hosted APIs) through the `openai` SDK, with our own
// retry policy (the SDK's is off so accounting is exact), a cap on requests in
// flight across all jobs of a generate() call, abort on stop, token ids and
// logprobs for RL where the server offers them, and per-call accounting.
// It adapts to the server: error bodies in any shape, max_tokens fitted to
// the context the server lists (max_model_len), a server that restarts or
// loads waited for (retrySeconds) and reported to status listeners.
// The parts: the server probe (serverProbe.ts), the context budget
// (contextBudget.ts) and the request runner (requestRunner.ts); this class
// holds one call's bookkeeping (every sample delivered once, stop, stats).
import { setMaxListeners } from 'node:events';
import type { Settings } from '../common/config';
import { percentile } from '../common/stats';
import type { GenerationJob, GenerationStats, ResponseSource, Sample, ServerCheckOptions, SourceStatus } from '../common/types';
import { Semaphore } from '../async/semaphore';
import { ContextBudget } from './contextBudget';
import { EndpointConnection, type EndpointOptions } from './endpointConnection';
import { type CallState, RequestRunner, unitsOf } from './requestRunner';
import { ServerProbe, type TokenSupport } from './serverProbe';

// The option and token-support types callers name with the client.
export type { EndpointOptions } from './endpointConnection';
export type { TokenSupport } from './serverProbe';

/** The API key from the environment (OPENAI_API_KEY), or undefined. */
export function apiKeyFromEnvironment(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const key = env.OPENAI_API_KEY?.trim();
  return key ? key : undefined;
}

export function endpointOptionsFromSettings(
  settings: Settings,
  apiKey: string | undefined,
  extra: { requestTokenIds?: boolean; onWarning?: (message: string) => void } = {},
): EndpointOptions {
  return {
    baseURL: settings.endpoint,
    model: settings.model,
    apiKey,
    temperature: settings.temperature,
    topP: settings.topP,
    maxTokens: settings.maxTokens,
    maxInFlight: settings.maxRequestsInFlight,
    useNParameter: settings.useNParameter,
    requestTimeoutMs: settings.requestTimeoutSeconds * 1000,
    maxRetries: settings.maxRetries,
    retrySeconds: settings.serverRetrySeconds,
    // The atropos trainer needs token ids; slime re-tokenises.
    requestTokenIds: extra.requestTokenIds ?? (settings['trainer.enabled'] && settings['trainer.protocol'] === 'atropos'),
    onWarning: extra.onWarning,
  };
}

export interface EndpointGenerationStats extends GenerationStats {
  samples: number;
  /** Completion tokens per second of wall time. */
  tokensPerSecond: number;
  /** Most requests this call had in flight at once. */
  maxInFlight: number;
  aborted: boolean;
}

export class EndpointClient implements ResponseSource {
  readonly kind = 'llm' as const;
  private readonly connection: EndpointConnection;
  private readonly probe: ServerProbe;
  private readonly context: ContextBudget;
  private readonly runner: RequestRunner;
  private resolvedModel: string | null = null;

  constructor(private readonly options: EndpointOptions) {
    this.connection = new EndpointConnection(options);
    this.probe = new ServerProbe(this.connection);
    this.context = new ContextBudget(this.connection, this.probe);
    this.runner = new RequestRunner(this.connection, this.probe, this.context);
  }

  get label(): string {
    const model = this.resolvedModel ?? (this.options.model || 'the served model');
    return `${model} at ${this.connection.baseURL}`;
  }

  /** The model requests go to, once check() resolved it. */
  get model(): string | null {
    return this.resolvedModel;
  }

  get tokenSupport(): TokenSupport {
    return this.probe.tokenSupport;
  }

  /** The served model's context length (max_model_len) once known, else null. */
  get serverContextLength(): number | null {
    return this.context.serverContextLength;
  }

  addStatusListener(listener: (status: SourceStatus) => void): () => void {
    return this.connection.addStatusListener(listener);
  }

  /**
   * Health check: /v1/models reachable, the model present (or the only one);
   * probes token ids when asked. With waitForServer, a server that is
   * unreachable or loading is retried for retrySeconds.
   */
  async check(signal?: AbortSignal, options: ServerCheckOptions = {}): Promise<void> {
    const served = await this.probe.servedModel(signal, options);
    this.resolvedModel = served.model;
    this.context.learnListedContext(served.contextLength);
    if (this.probe.tokenSupport.status === 'unknown') await this.probe.probeTokenIds(served.model, signal);
  }

  async generate(jobs: GenerationJob[], signal: AbortSignal, onSample: (sample: Sample) => void): Promise<EndpointGenerationStats> {
    const started = performance.now();
    const stats: CallState['stats'] = { requests: 0, retries: 0, promptTokens: 0, completionTokens: 0, latencies: [] };
    const delivered = new Map<string, boolean[]>();
    for (const job of jobs) delivered.set(job.key, new Array<boolean>(job.n).fill(false));
    const total = jobs.reduce((n, job) => n + job.n, 0);
    let failures = 0;
    let finished = false;
    let callbackError: unknown = null;

    // Our own controller: stopped by the caller's signal or by a throwing onSample.
    const internal = new AbortController();
    setMaxListeners(0, internal.signal); // one listener per request in flight and per queued request
    const onCallerAbort = () => internal.abort();
    if (signal.aborted) internal.abort();
    else signal.addEventListener('abort', onCallerAbort, { once: true });

    const deliver = (sample: Sample) => {
      if (finished || callbackError !== null) return;
      const flags = delivered.get(sample.jobKey);
      if (!flags || flags[sample.index] !== false) return;
      flags[sample.index] = true;
      if (!sample.ok) failures++;
      try {
        onSample(sample);
      } catch (error) {
        callbackError = error;
        internal.abort();
      }
    };
    const failRest = (error: string) => {
      for (const job of jobs) {
        const flags = delivered.get(job.key) as boolean[];
        flags.forEach((done, index) => {
          if (!done) deliver({ ok: false, jobKey: job.key, index, latencyMs: 0, retries: 0, error });
        });
      }
    };

    let maxInFlight = 0;
    try {
      if (total > 0 && !internal.signal.aborted) {
        let ready = true;
        if (this.resolvedModel === null) {
          try {
            await this.check(internal.signal, { waitForServer: true });
          } catch (error) {
            ready = false;
            if (!internal.signal.aborted) failRest(this.connection.redact((error as Error).message));
          }
        }
        if (ready && !internal.signal.aborted) {
          const units = unitsOf(jobs, this.options.useNParameter);
          const capacity = this.options.maxInFlight > 0 ? Math.min(this.options.maxInFlight, units.length) : units.length;
          const semaphore = new Semaphore(Math.max(1, capacity));
          const state: CallState = {
            stats,
            signal: internal.signal,
            semaphore,
            model: this.resolvedModel as string,
            deliver,
            promptCounts: new Map(),
          };
          const stopped = new Promise<void>((resolve) => {
            if (internal.signal.aborted) resolve();
            else internal.signal.addEventListener('abort', () => resolve(), { once: true });
          });
          // Stop returns at once: in-flight requests are aborted and their late results ignored.
          await Promise.race([Promise.all(units.map((unit) => this.runner.run(unit, state))), stopped]);
          maxInFlight = semaphore.maxHeld;
        }
      }
      if (internal.signal.aborted && callbackError === null) failRest('aborted: the run was stopped before the endpoint answered');
    } finally {
      finished = true;
      signal.removeEventListener('abort', onCallerAbort);
      if (!internal.signal.aborted) internal.abort(); // nothing of this call may outlive it
    }
    if (callbackError !== null) throw callbackError;

    const wallMs = performance.now() - started;
    const latencyOr0 = (p: number) => (stats.latencies.length > 0 ? percentile(stats.latencies, p) : 0);
    return {
      requests: stats.requests,
      retries: stats.retries,
      failures,
      promptTokens: stats.promptTokens,
      completionTokens: stats.completionTokens,
      latencyMsP50: latencyOr0(50),
      latencyMsP95: latencyOr0(95),
      wallMs,
      samples: total,
      tokensPerSecond: wallMs > 0 ? (stats.completionTokens * 1000) / wallMs : 0,
      maxInFlight,
      aborted: signal.aborted,
    };
  }
}
