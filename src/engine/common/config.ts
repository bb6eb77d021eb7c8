// Run configuration: one table of settings is the single source of truth for
// the VS Code settings (`thetaevolve.*`, mirrored in package.json and checked
// by a unit test), the CLI defaults and the zod validation of both.
import { z } from 'zod';
import { firstZodIssue } from './errors';
import { ModelListSchema, type ModelSpec } from './models';

/** `models`: a list of objects (thetaevolve.models), the one setting that is no scalar. */
type SettingType = 'string' | 'number' | 'integer' | 'boolean' | 'modelList';

export interface SettingSpec {
  /** Key under `thetaevolve.`; also the dotted path in RunConfig. */
  key: string;
  type: SettingType;
  default: string | number | boolean | readonly never[];
  description: string;
  enum?: readonly string[];
  enumDescriptions?: readonly string[];
  minimum?: number;
  maximum?: number;
  /** `machine`: User or Remote settings only, never a workspace's (a consent a workspace must not give itself). */
  scope?: 'machine' | 'window' | 'resource';
}

export const SETTINGS = [
  // Window scope (not machine): over Remote-SSH and in code-server the User and Remote settings both apply; a workspace's value is used only with the user's consent (src/vscode/urlConsent.ts), since requests carry the API key.
  {
    key: 'endpoint',
    type: 'string',
    default: 'http://127.0.0.1:8000/v1',
    description:
      "Base URL of the OpenAI-compatible inference server (vLLM: http://127.0.0.1:8000/v1, SGLang: http://127.0.0.1:30000/v1, or a hosted API). Set it in User or Remote settings; a value in a workspace's settings is used only after you allow it. Several servers: their base URLs separated by commas; requests go to the one with the fewest outstanding requests, and a failing one is set aside and retried later.",
  },
  {
    key: 'model',
    type: 'string',
    default: '',
    description: 'Model name to request. Empty: the only model the server lists at /v1/models.',
  },
  {
    key: 'models',
    type: 'modelList',
    default: [],
    description:
      'Several models (empty: the one `thetaevolve.model` at `thetaevolve.endpoint`). Each entry: `{"name", "endpoint"?, "weight"? (default 1), "apiKeyName"? (the secret stored under that name by Set API Key; else the environment variable of that name, read only for a list in your User settings or on the command line), "mode"? ("diff" or "rewrite"), "pricePerMillionInput"?, "pricePerMillionOutput"? (US dollars), "maxTokens"?, "temperature"?}`. Each prompt draws one model (`thetaevolve.modelSelection`); its n responses are that model\'s.',
  },
  {
    key: 'modelSelection',
    type: 'string',
    default: 'weights',
    enum: ['weights', 'ucb'],
    enumDescriptions: [
      "Draw each prompt's model by the weights of thetaevolve.models.",
      'A UCB bandit: models whose children improve on their parents are drawn more, with an exploration term.',
    ],
    description: "How each prompt's model is chosen when thetaevolve.models lists several.",
  },
  {
    key: 'editFormat',
    type: 'string',
    default: 'diff',
    enum: ['diff', 'rewrite'],
    enumDescriptions: [
      'SEARCH/REPLACE edits (the paper).',
      'The whole EVOLVE-BLOCK rewritten in one fenced block (for small models that cannot write exact edits).',
    ],
    description: 'What the model is asked to answer with; a model of thetaevolve.models may set its own `mode`.',
  },
  {
    key: 'maxCostUsd',
    type: 'number',
    default: 0,
    minimum: 0,
    description:
      'Stop the run once its replies cost this many US dollars (0: no limit), from the prices in thetaevolve.models; a step that would pass it is not started.',
  },
  {
    key: 'sampler',
    type: 'string',
    default: 'llm',
    enum: ['llm', 'mutate'],
    enumDescriptions: [
      'The language model at thetaevolve.endpoint.',
      'Offline mutate sampler: no model; perturbs numeric literals inside the EVOLVE-BLOCK. For trying the pipeline and validating a task without a GPU.',
    ],
    description: 'Where candidate edits come from.',
  },
  {
    key: 'batchSize',
    type: 'integer',
    default: 32,
    minimum: 1,
    maximum: 4096,
    description: 'B: parents (prompts) per step. The paper uses 32.',
  },
  {
    key: 'samplesPerPrompt',
    type: 'integer',
    default: 16,
    minimum: 1,
    maximum: 1024,
    description: 'n: responses requested per prompt. The paper uses 16 (B x n = 512 children per step).',
  },
  {
    key: 'temperature',
    type: 'number',
    default: 1.0,
    minimum: 0,
    maximum: 2,
    description: 'Sampling temperature sent with every request.',
  },
  { key: 'topP', type: 'number', default: 1.0, minimum: 0, maximum: 1, description: 'Nucleus sampling top_p sent with every request.' },
  {
    key: 'maxTokens',
    type: 'integer',
    default: 16384,
    minimum: 1,
    maximum: 1048576,
    description: 'Maximum tokens per response (max_tokens). A response cut at this length is recorded as truncated.',
  },
  {
    key: 'maxRequestsInFlight',
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 65536,
    description: 'Cap on concurrent requests to the endpoint. 0: B x n, the whole step at once (what vLLM and SGLang batch best).',
  },
  {
    key: 'useNParameter',
    type: 'boolean',
    default: false,
    description:
      'Ask for the n responses of a prompt in one request with `n` instead of n separate requests (separate requests behave the same on vLLM and SGLang).',
  },
  {
    key: 'requestTimeoutSeconds',
    type: 'integer',
    default: 900,
    minimum: 1,
    maximum: 86400,
    description: 'Per-request timeout; a timed-out request is retried within the retry budget.',
  },
  {
    key: 'maxRetries',
    type: 'integer',
    default: 6,
    minimum: 0,
    maximum: 100,
    description: 'Retries per request for 429, 5xx, resets, timeouts and malformed replies (jittered exponential backoff).',
  },
  {
    key: 'serverRetrySeconds',
    type: 'integer',
    default: 300,
    minimum: 0,
    maximum: 86400,
    description:
      'How long a server that is unreachable, loading, restarting or pausing generation (503, closed port, SGLang finish_reason "abort") is waited for, retrying with backoff, before its requests count as failed. Also how long a run waits for the server to come up at its start.',
  },
  {
    key: 'maxFailedSteps',
    type: 'integer',
    default: 1,
    minimum: 1,
    maximum: 1000,
    description:
      'Stop the run with an error after this many consecutive steps in which no request succeeded (such a step is redone, never committed empty).',
  },
  {
    key: 'pipelineDepth',
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 4,
    description:
      "Steps whose generation may start while earlier steps are still being evaluated. `0` is the paper's synchronous loop: a step plans its parents only after the one before it is committed. `1` starts the next step as soon as a step has all its responses, so the model server generates while the sandbox evaluates (a step then takes about the longer of the two, not their sum); its parents are drawn from the database as committed one step earlier. With the RL trainer on in `sync` mode steps never overlap (a step is handed to the trainer once committed, before the next one generates).",
  },
  {
    key: 'evaluationConcurrency',
    type: 'integer',
    default: 16,
    minimum: 1,
    maximum: 1024,
    description: 'K: candidate evaluations running at once.',
  },
  {
    key: 'sandbox.memoryLimitMb',
    type: 'integer',
    default: 4096,
    minimum: 64,
    maximum: 1048576,
    scope: 'machine',
    description: 'Memory limit of one candidate evaluation, in MiB. Machine-wide, so a workspace cannot raise it.',
  },
  {
    key: 'sandbox.outputLimitKb',
    type: 'integer',
    default: 64,
    minimum: 1,
    maximum: 65536,
    scope: 'machine',
    description: 'Candidate output kept per evaluation, in KiB (the rest is truncated). Machine-wide, so a workspace cannot raise it.',
  },
  {
    key: 'sandbox.allowWeakIsolation',
    type: 'boolean',
    default: false,
    scope: 'machine',
    description:
      'Run candidate programs even where the full sandbox (bubblewrap with seccomp, Linux) is not available: without bubblewrap, on macOS (sandbox-exec) or on Windows (no isolation). Off: ThetaEvolve refuses to evaluate and says how to get a sandbox. Machine-wide, so a workspace cannot turn it on.',
  },
  {
    key: 'python',
    type: 'string',
    default: '',
    scope: 'machine',
    description:
      "The Python interpreter that runs everything of a run: candidates, the task's evaluator, other systems' folders and the sandbox's launcher (a venv's or conda environment's bin/python). Empty: the Python extension's interpreter for the program's folder, then python.defaultInterpreterPath, an activated environment (VIRTUAL_ENV, CONDA_PREFIX), then python3 on PATH. Machine-wide, so a workspace cannot choose what runs.",
  },
  {
    key: 'evaluation.backend',
    type: 'string',
    default: 'local',
    enum: ['local', 'slurm'],
    enumDescriptions: [
      'Evaluate candidates on this machine, in the sandbox (K at once).',
      'Evaluate candidates as SLURM jobs on a cluster (the sandbox runs on the compute node); see the thetaevolve.slurm.* settings.',
    ],
    description: 'Where candidate programs are evaluated.',
  },
  {
    key: 'slurm.partition',
    type: 'string',
    default: '',
    scope: 'machine',
    description: "SLURM partition for evaluation jobs (sbatch --partition). Empty: the cluster's default partition.",
  },
  {
    key: 'slurm.account',
    type: 'string',
    default: '',
    scope: 'machine',
    description: 'SLURM account charged for evaluation jobs (sbatch --account). Empty: your default account.',
  },
  {
    key: 'slurm.sbatchArguments',
    type: 'string',
    default: '',
    scope: 'machine',
    description: 'More sbatch options for every evaluation job, separated by spaces (quotes group words), e.g. `--mem=8G --qos=short`.',
  },
  {
    key: 'slurm.exportVariables',
    type: 'string',
    default: '',
    scope: 'machine',
    description:
      "Names of environment variables, separated by spaces, that evaluation jobs get besides PATH, HOME, LANG and SLURM's own, e.g. `PYTHONPATH CUDA_HOME`. Nothing else of ThetaEvolve's environment reaches a job: never an API key.",
  },
  {
    key: 'slurm.setupCommands',
    type: 'string',
    default: '',
    scope: 'machine',
    description:
      'Shell commands run at the start of every evaluation job before Node and the task start, e.g. `module load nodejs/20 python/3.11`. Separate several with newlines or `;`.',
  },
  {
    key: 'slurm.nodeCommand',
    type: 'string',
    default: 'node',
    scope: 'machine',
    description: "Command that starts Node.js (>= 20) on the compute nodes; evaluation jobs run ThetaEvolve's own `evaluate` with it.",
  },
  {
    key: 'slurm.python',
    type: 'string',
    default: '',
    scope: 'machine',
    description:
      "The Python interpreter evaluation jobs use on the compute nodes. Empty: the same path as the run's interpreter on this machine.",
  },
  {
    key: 'slurm.stagingDirectory',
    type: 'string',
    default: '',
    scope: 'machine',
    description:
      "Folder on a filesystem shared by this machine and the compute nodes where candidates, the task and the CLI are staged for the jobs. Empty: the run's own folder.",
  },
  {
    key: 'slurm.maxJobs',
    type: 'integer',
    default: 512,
    minimum: 1,
    maximum: 100000,
    description: "Most evaluation jobs of one run in the SLURM queue at once (also the job array's % limit).",
  },
  {
    key: 'slurm.pollSeconds',
    type: 'number',
    default: 5,
    minimum: 0.1,
    maximum: 3600,
    description: 'Seconds between two looks at the queue (one squeue call for all jobs of the run).',
  },
  {
    key: 'slurm.maxResubmits',
    type: 'integer',
    default: 2,
    minimum: 0,
    maximum: 100,
    description:
      "Times a lost, preempted or node-failed evaluation job is resubmitted before its sample ends as evaluation_failed (no score; not the model's fault).",
  },
  {
    key: 'slurm.candidatesPerJob',
    type: 'string',
    default: 'auto',
    scope: 'machine',
    description:
      "Candidates one evaluation job runs at once (each in its own sandbox, one CPU each, each result kept on its own): a number, or `auto`, which packs short candidates (about 10 for candidates of a second, 1 from 10 s up) from the run's recent evaluation times, or the task's runtime limit before any.",
  },
  {
    key: 'slurm.inference.count',
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 256,
    scope: 'machine',
    description:
      'Inference servers to start as SLURM jobs for the run (named thetaevolve-<run>-server-<k>); each joins the endpoint pool once its /v1/models answers, beside the servers of thetaevolve.endpoint unless that is left at its default. 0: none.',
  },
  {
    key: 'slurm.inference.command',
    type: 'string',
    default: '',
    scope: 'machine',
    description:
      'Command an inference job runs, with {port} (a free port the job picked) and {host} (the node), e.g. `vllm serve MODEL --host {host} --port {port} --max-num-seqs 512`. The servers get a random key of the run, never your API key: `--api-key {token}` is added at the end unless the command places {token} itself; a server that answers without it is not used.',
  },
  {
    key: 'slurm.inference.sbatchArguments',
    type: 'string',
    default: '',
    scope: 'machine',
    description: 'More sbatch options for the inference jobs, e.g. `--gres=gpu:1 --time=24:00:00 --mem=64G`.',
  },
  {
    key: 'slurm.inference.setupCommands',
    type: 'string',
    default: '',
    scope: 'machine',
    description: 'Shell commands run at the start of every inference job, e.g. `module load cuda/12.4; source ~/venvs/vllm/bin/activate`.',
  },
  {
    key: 'slurm.inference.maxResubmits',
    type: 'integer',
    default: 3,
    minimum: 0,
    maximum: 100,
    scope: 'machine',
    description: 'Times an inference job that ended or was preempted is submitted again before that server is given up.',
  },
  {
    key: 'database.preset',
    type: 'string',
    default: 'large',
    enum: ['small', 'medium', 'large'],
    enumDescriptions: [
      'OpenEvolve: population 70, archive 25, 5 islands.',
      'Population 1,000, archive 100, 10 islands.',
      'The paper: population 10,000, archive 1,000, 10 islands.',
    ],
    description: 'Program database size preset. The fields below override single numbers when non-zero.',
  },
  {
    key: 'database.populationSize',
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 1000000,
    description: 'Programs kept before eviction. 0: from the preset.',
  },
  {
    key: 'database.archiveSize',
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 100000,
    description: 'Elite archive size. 0: from the preset.',
  },
  {
    key: 'database.numIslands',
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 1000,
    description: 'Number of islands. 0: from the preset.',
  },
  {
    key: 'database.migrationInterval',
    type: 'integer',
    default: 50,
    minimum: 1,
    maximum: 1000000,
    description: 'Island generations between ring migrations.',
  },
  {
    key: 'database.migrationRate',
    type: 'number',
    default: 0.1,
    minimum: 0,
    maximum: 1,
    description: 'Fraction of each island (its best) copied to its ring neighbours at a migration.',
  },
  {
    key: 'database.explorationRatio',
    type: 'number',
    default: 0.2,
    minimum: 0,
    maximum: 1,
    description: 'Probability that a parent is a uniform program of the current island.',
  },
  {
    key: 'database.exploitationRatio',
    type: 'number',
    default: 0.6,
    minimum: 0,
    maximum: 1,
    description: 'Probability that a parent is a uniform member of the elite archive (the rest: uniform over the whole database).',
  },
  {
    key: 'topPrograms',
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 32,
    description: 'Extra best programs from the database shown in each prompt (0: only the parent, as in the paper).',
  },
  {
    key: 'feedbackChars',
    type: 'integer',
    default: 4000,
    minimum: 0,
    maximum: 20480,
    description:
      "Characters of the evaluator's feedback on the parent shown in each prompt (OpenEvolve's artifacts, ShinkaEvolve's text_feedback, a note of our own evaluator), as those systems do; 0: none.",
  },
  {
    key: 'lazyPenalty',
    type: 'boolean',
    default: true,
    description:
      "Give -0.3 without evaluation to a child equal (comments ignored) to any program ever in the database: the ThetaEvolve release's lazy output penalty level 2 (`--lazy-penalty-level`). Off: levels 0 and 1, where only a child equal to its parent gets -0.3, as it always does.",
  },
  // Operators beyond the paper (docs/algorithm.md section 12): each off by default; a run records the values it started with.
  {
    key: 'stopAfterStepsWithoutImprovement',
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 1000000,
    description:
      'Patience: end the run (reason `no_improvement`) once this many committed steps in a row brought no new best program. 0: never.',
  },
  {
    key: 'crossover.share',
    type: 'number',
    default: 0,
    minimum: 0,
    maximum: 1,
    description:
      "Crossover: the share of prompts that also show a second parent from another island and ask for a child combining both (ShinkaEvolve's `cross` patches). 0: none, as the paper.",
  },
  {
    key: 'novelty.enabled',
    type: 'boolean',
    default: false,
    description:
      "Novelty rejection (ShinkaEvolve's novelty judge): a child whose EVOLVE-BLOCK embedding is more than `thetaevolve.novelty.threshold` similar (cosine) to a program of its island is not evaluated; its outcome is `not_novel`, with the lazy penalty's -0.3. Off: every new child is evaluated, as the paper.",
  },
  {
    key: 'novelty.threshold',
    type: 'number',
    default: 0.99,
    minimum: 0,
    maximum: 1,
    description:
      'Novelty rejection: the cosine similarity above which a child counts as a repeat of a program of its island (ShinkaEvolve: 0.99); one exactly at it is novel.',
  },
  {
    key: 'novelty.embeddingEndpoint',
    type: 'string',
    default: '',
    description:
      "Novelty rejection: base URL of the OpenAI-compatible server whose `/v1/embeddings` embeds the code (empty: the run's `thetaevolve.endpoint`, the first of a list). A value in a workspace's settings is used only after you allow it. The run's API key goes only to the run's own endpoint.",
  },
  {
    key: 'novelty.embeddingModel',
    type: 'string',
    default: '',
    description: 'Novelty rejection: the embedding model to request (empty: the only model the embedding server lists at /v1/models).',
  },
  {
    key: 'novelty.judge',
    type: 'boolean',
    default: false,
    description:
      "Novelty rejection: ask the run's model one yes/no question about a child over the threshold (is it meaningfully different from its closest program?); a yes lets it be evaluated.",
  },
  {
    key: 'meta.everySteps',
    type: 'integer',
    default: 0,
    minimum: 0,
    description:
      "Meta-recommendations: every this many committed steps the model reads a summary of the run's recent gains and failures and writes short recommendations that later prompts carry, marked as the model's (ShinkaEvolve's meta_rec_interval). Not a rollout. 0: never, as the paper.",
  },
  {
    key: 'rewardShaping.mode',
    type: 'string',
    default: 'task',
    enum: ['task', 'on', 'off'],
    enumDescriptions: [
      'As the task file says.',
      'Always shape rewards (task parameters unless overridden below).',
      'Never shape: reward = score.',
    ],
    description: 'Reward shaping for RL rollouts (docs/algorithm.md section 5).',
  },
  { key: 'rewardShaping.lower', type: 'number', default: 0, description: 'L of the shaping. Used only when rewardShaping.override is on.' },
  { key: 'rewardShaping.upper', type: 'number', default: 1, description: 'U of the shaping. Used only when rewardShaping.override is on.' },
  {
    key: 'rewardShaping.alpha',
    type: 'number',
    default: 1,
    minimum: 0,
    description: 'Exponent a of the shaping. Used only when rewardShaping.override is on.',
  },
  {
    key: 'rewardShaping.scale',
    type: 'number',
    default: 1,
    minimum: 0,
    description: 'Scale k of the shaping. Used only when rewardShaping.override is on.',
  },
  { key: 'rewardShaping.override', type: 'boolean', default: false, description: "Use the L, U, a, k above instead of the task's." },
  {
    key: 'rewardShaping.process',
    type: 'string',
    default: 'task',
    enum: ['task', 'original_reward', 'rl_normalized_reward', 'format_reward', 'validation_reward', 'improve_reward'],
    enumDescriptions: [
      'The reward as rewardShaping.mode says: the score, or its shaping.',
      "The ThetaEvolve release's original_reward: the score (penalties included), clipped to [-10, 10].",
      "The release's rl_normalized_reward: the shaping of a valid child's objective (on whatever rewardShaping.mode says); penalties pass; clipped to [-10, 10].",
      "The release's format_reward: -0.4 (no diff) and -0.3 (no change, duplicate) pass; every other child gets 1.",
      "The release's validation_reward: every penalty passes; a valid child gets 1.",
      "The release's improve_reward: every penalty passes; a valid child gets 1 when its score beats its parent's by more than 1e-6, else 0.",
    ],
    description:
      "How a scored child's reward for the RL trainer is computed: ours (`task`), or one of the ThetaEvolve release's reward processes (its run.sh REWARD_PROCESS_TYPE; docs/algorithm.md section 5).",
  },
  { key: 'maxSteps', type: 'integer', default: 0, minimum: 0, maximum: 1000000, description: 'Stop after this many steps (0: no limit).' },
  {
    key: 'maxTotalTokens',
    type: 'integer',
    default: 0,
    minimum: 0,
    description: 'Stop once this many completion tokens were generated (0: no limit).',
  },
  {
    key: 'seed',
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 4294967295,
    description: 'Seed of every random choice (parent sampling, meta-information, request seeds).',
  },
  { key: 'followBest', type: 'boolean', default: false, description: 'Apply each new best program to the file automatically (undoable).' },
  {
    key: 'runsDirectory',
    type: 'string',
    default: '.thetaevolve/runs',
    description: 'Where run databases are kept, relative to the workspace folder.',
  },
  { key: 'trainer.enabled', type: 'boolean', default: false, description: "Send each step's scored rollouts to the RL trainer." },
  {
    key: 'trainer.model',
    type: 'string',
    default: '',
    description:
      'With several models (thetaevolve.models): the one the trainer trains; only its rollouts are sent (empty: the first model). The others stay in the database.',
  },
  {
    key: 'trainer.url',
    type: 'string',
    default: '',
    description:
      "Base URL of the trainer (an atropos API server or a slime rollout buffer). A value in a workspace's settings is used only after you allow it.",
  },
  {
    key: 'trainer.protocol',
    type: 'string',
    default: 'atropos',
    enum: ['atropos', 'slime'],
    enumDescriptions: [
      'NousResearch atropos API server: /register-env, /scored_data (needs token ids from the endpoint).',
      'THUDM slime rollout buffer: /buffer/write (messages only).',
    ],
    description: 'Trainer protocol.',
  },
  {
    key: 'trainer.mode',
    type: 'string',
    default: 'sync',
    enum: ['sync', 'async'],
    enumDescriptions: [
      'Wait for the trainer to take each step before sampling the next (as in the paper).',
      'Keep sampling with bounded policy staleness.',
    ],
    description: 'Synchronous or asynchronous RL.',
  },
  {
    key: 'trainer.maxStaleness',
    type: 'integer',
    default: 1,
    minimum: 0,
    maximum: 1000,
    description: 'Asynchronous mode: most policy versions the sampler may run ahead of the trainer.',
  },
  {
    key: 'trainer.syncTimeoutSeconds',
    type: 'integer',
    default: 1800,
    minimum: 1,
    description: 'Synchronous mode: longest wait for the trainer to advance before going on with a warning.',
  },
  {
    key: 'trainer.requestTimeoutSeconds',
    type: 'integer',
    default: 30,
    minimum: 1,
    maximum: 3600,
    description:
      'Longest wait for one reply of the trainer (headers and body); a trainer that accepts the connection and never answers is named and retried with backoff, its rollouts kept in the spool.',
  },
  {
    key: 'trainer.resampleRounds',
    type: 'integer',
    default: 2,
    minimum: 0,
    maximum: 10,
    description:
      'RL trainer on: rounds of asking the endpoint again for the responses of a prompt whose requests failed after retries (trainers need whole groups of n; a group still short is not sent).',
  },
  {
    key: 'trainer.filterEqualRewards',
    type: 'boolean',
    default: false,
    description: 'Skip groups whose rewards are all equal (no GRPO signal). Off: every group is sent.',
  },
] as const satisfies readonly SettingSpec[];

export type SettingKey = (typeof SETTINGS)[number]['key'];

type ValueOf<S> = S extends { type: 'modelList' }
  ? ModelSpec[]
  : S extends { type: 'boolean' }
    ? boolean
    : S extends { type: 'number' | 'integer' }
      ? number
      : S extends { enum: readonly (infer E)[] }
        ? E
        : string;

/** Flat settings, keyed exactly as under `thetaevolve.`. */
export type Settings = { [S in (typeof SETTINGS)[number] as S['key']]: ValueOf<S> };

function zodOf(spec: SettingSpec): z.ZodType {
  switch (spec.type) {
    case 'boolean':
      return z.boolean();
    case 'number':
    case 'integer': {
      let n = spec.type === 'integer' ? z.number().int() : z.number();
      n = n.finite();
      if (spec.minimum !== undefined) n = n.min(spec.minimum);
      if (spec.maximum !== undefined) n = n.max(spec.maximum);
      return n;
    }
    case 'string':
      return spec.enum ? z.enum(spec.enum as [string, ...string[]]) : z.string();
    case 'modelList':
      return ModelListSchema;
  }
}

/** zod schema of the flat settings; every key optional, defaults filled in. */
export const SettingsSchema = z.object(
  Object.fromEntries(SETTINGS.map((s: SettingSpec) => [s.key, zodOf(s).default(s.default as never)])),
) as unknown as z.ZodType<Settings, Partial<Settings>>;

export function defaultSettings(): Settings {
  return SettingsSchema.parse({});
}

/** The settings of the operators beyond the paper (src/engine/operators/): recorded in the run database, so a resume uses them. */
export const OPERATOR_SETTING_KEYS: readonly SettingKey[] = [
  'stopAfterStepsWithoutImprovement',
  'crossover.share',
  'novelty.enabled',
  'novelty.threshold',
  'novelty.embeddingModel',
  'novelty.judge',
  'meta.everySteps',
];

/**
 * The Settings editor's categories, in order: a dotted key goes by its first
 * part, an undotted one by the list here, anything else under "Run".
 */
const SETTING_CATEGORIES: readonly { title: string; prefix?: string; keys?: readonly string[] }[] = [
  {
    title: 'Inference server',
    keys: [
      'endpoint',
      'model',
      'models',
      'modelSelection',
      'editFormat',
      'maxCostUsd',
      'sampler',
      'temperature',
      'topP',
      'maxTokens',
      'maxRequestsInFlight',
      'useNParameter',
      'requestTimeoutSeconds',
      'maxRetries',
      'serverRetrySeconds',
    ],
  },
  { title: 'Run' },
  // The embedding server's address is where requests go, not how the run searches: shown with the operators, never recorded.
  { title: 'Search operators', keys: [...OPERATOR_SETTING_KEYS, 'novelty.embeddingEndpoint'] },
  { title: 'Evaluation and sandbox', prefix: 'sandbox', keys: ['evaluationConcurrency', 'evaluation.backend'] },
  { title: 'SLURM', prefix: 'slurm' },
  { title: 'Program database', prefix: 'database' },
  { title: 'Reward shaping', prefix: 'rewardShaping' },
  { title: 'RL trainer', prefix: 'trainer' },
];

function categoryOf(key: string): string {
  const named = SETTING_CATEGORIES.find((c) => c.keys?.includes(key) || (c.prefix !== undefined && key.startsWith(`${c.prefix}.`)));
  return named?.title ?? 'Run';
}

/** One setting as package.json contributes it (descriptions are Markdown: they quote values in backticks). */
function contributedSetting(s: SettingSpec, order: number): Record<string, unknown> {
  const entry: Record<string, unknown> =
    s.type === 'modelList'
      ? { type: 'array', items: { type: 'object', required: ['name'] }, default: s.default, markdownDescription: s.description, order }
      : { type: s.type, default: s.default, markdownDescription: s.description, order };
  if (s.enum) entry.enum = [...s.enum];
  if (s.enumDescriptions) entry.enumDescriptions = [...s.enumDescriptions];
  if (s.minimum !== undefined) entry.minimum = s.minimum;
  if (s.maximum !== undefined) entry.maximum = s.maximum;
  if (s.scope) entry.scope = s.scope;
  return entry;
}

/** `contributes.configuration` as package.json must hold it (checked by a unit test): titled categories, each setting in table order. */
export function contributedConfiguration(): { title: string; order: number; properties: Record<string, Record<string, unknown>> }[] {
  return SETTING_CATEGORIES.map((category, index) => {
    const members = SETTINGS.filter((s: SettingSpec) => categoryOf(s.key) === category.title);
    return {
      title: category.title,
      order: index,
      properties: Object.fromEntries(members.map((s: SettingSpec, order) => [`thetaevolve.${s.key}`, contributedSetting(s, order)])),
    };
  });
}

/**
 * The settings VS Code takes from an untrusted workspace's settings only once it is trusted
 * (package.json capabilities.untrustedWorkspaces.restrictedConfigurations): where runs are written, where requests
 * and rollouts go, and how and how much is evaluated (docs/guide.md "What the editor trusts").
 */
export function restrictedConfigurations(): string[] {
  const restricted = (key: string): boolean =>
    [
      'runsDirectory',
      'endpoint',
      // Each model's own endpoint receives a key (docs/guide.md "What the editor trusts").
      'models',
      'novelty.embeddingEndpoint',
      'trainer.url',
      'evaluation.backend',
      'evaluationConcurrency',
    ].includes(key) || key.startsWith('sandbox.');
  return SETTINGS.filter((s: SettingSpec) => restricted(s.key)).map((s: SettingSpec) => `thetaevolve.${s.key}`);
}

/** Every contributed setting by its full name (thetaevolve.KEY), whatever its category. */
export function contributedSettings(): Record<string, Record<string, unknown>> {
  return Object.assign({}, ...contributedConfiguration().map((c) => c.properties)) as Record<string, Record<string, unknown>>;
}

/**
 * Validate untrusted settings (VS Code configuration, CLI flags). The error
 * names the bad setting and what is wrong with it.
 */
export function parseSettings(raw: Record<string, unknown>): Settings {
  const result = SettingsSchema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (issue?.path[0] === 'models') {
    // A list's problem names the entry (by position and name) and the field.
    const [, index, field] = issue.path;
    const list = Array.isArray(raw.models) ? (raw.models as unknown[]) : [];
    const entry = typeof index === 'number' ? (list[index] as Record<string, unknown> | undefined) : undefined;
    const name = entry && typeof entry.name === 'string' ? ` ("${entry.name}")` : '';
    const where = typeof index === 'number' ? `entry ${index + 1}${name}${field !== undefined ? `, ${String(field)}` : ''}: ` : '';
    const got = field !== undefined && entry ? ` (got ${JSON.stringify(entry[String(field)])})` : '';
    throw new Error(`Setting thetaevolve.models is invalid: ${where}${issue.message}${got}.`);
  }
  const { path: key, message } = firstZodIssue(result.error, '');
  throw new Error(`Setting thetaevolve.${key} is invalid: ${message} (got ${JSON.stringify(raw[key])}).`);
}

export const DATABASE_PRESETS = {
  small: { populationSize: 70, archiveSize: 25, numIslands: 5 },
  medium: { populationSize: 1000, archiveSize: 100, numIslands: 10 },
  large: { populationSize: 10000, archiveSize: 1000, numIslands: 10 },
} as const;
