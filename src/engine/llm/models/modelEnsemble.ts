// Several models as one response source (docs/algorithm.md section 12,
// "Several models and cost"): each model has its own endpoint client (or
// pool, for a comma list of servers), its own key, temperature and
// max_tokens; a job goes to the model its plan drew (GenerationJob.model).
import type { Settings } from '../../common/config';
import type { ModelSpec } from '../../common/models';
import type { GenerationJob, GenerationStats, ResponseSource, Sample, ServerCheckOptions, SourceStatus } from '../../common/types';
import { type EndpointClient, endpointOptionsFromSettings, type TokenSupport } from '../endpointClient';
import { EndpointPool, endpointSource } from '../endpointPool';

export interface EnsembleMember {
  spec: ModelSpec;
  source: EndpointClient | EndpointPool;
}

/**
 * The API key of a model: the key its apiKeyName names, else the run's key.
 * `keys` are those the caller resolved by name, each only where the user named
 * it (docs/guide.md "What the editor trusts"): the editor from SecretStorage,
 * and from the environment only for models of the User settings; the CLI
 * from the environment only for models its command line names.
 */
export function apiKeyOfModel(spec: ModelSpec, runKey: string | undefined, keys: Readonly<Record<string, string>>): string | undefined {
  if (spec.apiKeyName === undefined) return runKey;
  const key = keys[spec.apiKeyName];
  if (!key)
    throw new Error(
      `the API key of model "${spec.name}" is missing: no key named ${spec.apiKeyName} (in the editor: ThetaEvolve: Set API Key, name ${spec.apiKeyName}; ` +
        `or the environment variable ${spec.apiKeyName}, read for a model of your User settings or of the command line's --set models=..., never of a workspace's or a file's)`,
    );
  return key;
}

/** One client (or pool) per model of settings.models. */
export function ensembleMembers(
  settings: Settings,
  keyOf: (spec: ModelSpec) => string | undefined,
  extra: { requestTokenIds?: boolean; onWarning?: (message: string) => void },
): EnsembleMember[] {
  return settings.models.map((spec) => {
    const options = endpointOptionsFromSettings(settings, keyOf(spec), extra);
    return {
      spec,
      source: endpointSource({
        ...options,
        baseURL: spec.endpoint ?? settings.endpoint,
        model: spec.name,
        temperature: spec.temperature ?? options.temperature,
        maxTokens: spec.maxTokens ?? options.maxTokens,
      }),
    };
  });
}

export class ModelEnsemble implements ResponseSource {
  readonly kind = 'llm' as const;
  private readonly byName: Map<string, EnsembleMember>;

  constructor(
    readonly members: readonly EnsembleMember[],
    /** The model the RL trainer trains (its token support decides atropos). */
    private readonly trainedModel: string,
  ) {
    this.byName = new Map(members.map((m) => [m.spec.name, m]));
  }

  get label(): string {
    return this.members.map((m) => m.source.label).join('; ');
  }

  get tokenSupport(): TokenSupport {
    return (this.byName.get(this.trainedModel) ?? (this.members[0] as EnsembleMember)).source.tokenSupport;
  }

  addStatusListener(listener: (status: SourceStatus) => void): () => void {
    const off = this.members.map((m) => m.source.addStatusListener(listener));
    return () => off.forEach((f) => f());
  }

  /** Every model's server checked; a model its server does not list fails naming thetaevolve.models and what the server has. */
  async check(signal?: AbortSignal, options: ServerCheckOptions = {}): Promise<void> {
    for (const m of this.members) {
      try {
        await m.source.check(signal, options);
      } catch (err) {
        const message = (err as Error).message.replace(/ Set thetaevolve\.model to one of them\.$/, '');
        throw new Error(`thetaevolve.models: ${message}`, { cause: err });
      }
    }
  }

  async generate(jobs: GenerationJob[], signal: AbortSignal, onSample: (sample: Sample) => void): Promise<GenerationStats> {
    const started = performance.now();
    const first = this.members[0] as EnsembleMember;
    const groups = new Map<EnsembleMember, GenerationJob[]>();
    for (const job of jobs) {
      const member = (job.model !== undefined ? this.byName.get(job.model) : undefined) ?? first;
      groups.set(member, [...(groups.get(member) ?? []), job]);
    }
    const all = await Promise.all([...groups].map(([member, group]) => member.source.generate(group, signal, onSample)));
    const sum = (f: (s: GenerationStats) => number) => all.reduce((a, s) => a + f(s), 0);
    return {
      requests: sum((s) => s.requests),
      retries: sum((s) => s.retries),
      failures: sum((s) => s.failures),
      promptTokens: sum((s) => s.promptTokens),
      completionTokens: sum((s) => s.completionTokens),
      latencyMsP50: Math.max(0, ...all.map((s) => s.latencyMsP50)),
      latencyMsP95: Math.max(0, ...all.map((s) => s.latencyMsP95)),
      wallMs: performance.now() - started,
    };
  }

  /** Pools' health timers stopped. */
  dispose(): void {
    for (const m of this.members) if (m.source instanceof EndpointPool) m.source.dispose();
  }
}
