// The command-line contract of docs/architecture.md "Command line": one spec per command; the
// handlers live in one file each and are looked up here.
import { PYTHON_FLAG } from './python';
import type { CommandSpec, ParsedArgs } from './args';
import type { CliIO } from './io';
import { EVALUATOR_FLAG } from './taskPath';

export type CommandHandler = (args: ParsedArgs, io: CliIO) => Promise<number>;

export const RUN_SPEC: CommandSpec = {
  name: 'run',
  summary:
    "Evolve the task's program (or --program FILE) step by step; one JSON object per committed step with --json. Re-running with the same --db resumes after the last committed step.",
  positionals: [
    {
      name: 'task-dir',
      help: 'Task folder: task.json (e.g. tasks/circle-packing), an OpenEvolve or ShinkaEvolve folder as it is, or a ThetaEvolve release folder (examples/<task>, or one of its configs/*.yaml).',
    },
  ],
  flags: {
    program: { kind: 'string', value: 'FILE', help: "Program to start from (default: the task's initial program)." },
    evaluator: EVALUATOR_FLAG,
    endpoint: { kind: 'string', value: 'URL', help: 'OpenAI-compatible base URL (default http://127.0.0.1:8000/v1).' },
    model: { kind: 'string', value: 'NAME', help: 'Model name (default: the only model the server lists).' },
    sampler: { kind: 'string', value: 'llm|mutate', help: 'llm (default) or mutate: the offline sampler, no model.' },
    steps: { kind: 'integer', minimum: 1, value: 'N', help: 'Stop after N steps in this invocation (default: no limit).' },
    batch: { kind: 'integer', minimum: 1, value: 'B', help: 'Parents (prompts) per step (default 32).' },
    samples: { kind: 'integer', minimum: 1, value: 'N', help: 'Responses per prompt (default 16).' },
    'eval-concurrency': { kind: 'integer', minimum: 1, value: 'K', help: 'Evaluations at once (default 16).' },
    db: {
      kind: 'string',
      value: 'FILE',
      help: 'Run database (.sqlite); resumed when it exists (default .thetaevolve/runs/<run-id>.sqlite).',
    },
    seed: { kind: 'integer', minimum: 0, value: 'S', help: 'Seed of every random choice (default 0).' },
    'lazy-penalty-level': {
      kind: 'integer',
      minimum: 0,
      value: '0|1|2',
      help: "The ThetaEvolve release's LAZY_OUTPUT_PENALTY: 2 (default) gives -0.3 to a child equal to any program in the database; 0 and 1 only to one equal to its parent.",
    },
    'reward-process': {
      kind: 'string',
      value: 'NAME',
      help: "The release's REWARD_PROCESS_TYPE for the trainer's rewards: original_reward, rl_normalized_reward, format_reward, validation_reward or improve_reward (default: the task's shaping).",
    },
    trainer: { kind: 'url', value: 'URL', help: "Send each step's rollouts to this RL trainer." },
    'trainer-protocol': { kind: 'string', value: 'atropos|slime', help: 'Trainer protocol (default atropos).' },
    backend: {
      kind: 'string',
      value: 'local|slurm',
      help: 'Evaluate candidates here (local, default) or as SLURM jobs (thetaevolve.slurm.* through --set/--config).',
    },
    'until-step': {
      kind: 'integer',
      minimum: 1,
      value: 'N',
      help: 'Stop once step N is committed, counting the steps a resumed --db already has (a requeued cluster job finishes the same work).',
    },
    config: { kind: 'string', value: 'FILE', help: 'Settings from a JSON object like VS Code\'s settings.json ("thetaevolve.*" keys).' },
    set: {
      kind: 'list',
      value: 'KEY=VALUE',
      help: 'One setting (KEY with or without "thetaevolve."); repeatable. Flags win over --set, which wins over --config.',
    },
    json: { kind: 'boolean', help: 'Machine-readable output: one JSON object per committed step.' },
    'allow-weak-isolation': { kind: 'boolean', help: 'Run candidates even without the full sandbox (no bubblewrap, macOS, Windows).' },
    python: PYTHON_FLAG,
  },
};

export const EVALUATE_SPEC: CommandSpec = {
  name: 'evaluate',
  summary: "Evaluate a program in the sandbox with the task's evaluator. Exit 0 whenever the evaluation ran, even if the candidate failed.",
  positionals: [
    {
      name: 'task-dir',
      help: 'Task folder: task.json, an OpenEvolve or ShinkaEvolve folder as it is, or a ThetaEvolve release folder (or one of its configs/*.yaml).',
    },
    {
      name: 'program-file',
      help: 'Program to evaluate; several (with --result-files) are evaluated at once, each in its own sandbox.',
      repeatable: true,
    },
  ],
  flags: {
    timeout: { kind: 'number', value: 'SECONDS', help: "Override the task's runtime limit." },
    evaluator: EVALUATOR_FLAG,
    json: { kind: 'boolean', help: 'Print status, score, objective, metrics, reason, durationMs as JSON.' },
    'result-files': {
      kind: 'boolean',
      help: "Write each program's --json line to result.json in the program's folder the moment it is done, instead of stdout (SLURM jobs).",
    },
    'done-dir': {
      kind: 'string',
      value: 'DIR',
      help: "With --result-files: also create an empty file in DIR named after each finished program's folder.",
    },
    'python-cache': {
      kind: 'string',
      value: 'DIR',
      help: "With --result-files: keep what the interpreter is (version, prefixes) in DIR, per host, and read it there instead of asking it again (a run's SLURM jobs).",
    },
    'times-file': {
      kind: 'string',
      value: 'FILE',
      help: 'With --result-files: append when Node started, when evaluating began and when each result was written (epoch ms) to FILE: where a SLURM job spends its time.',
    },
    'allow-weak-isolation': { kind: 'boolean', help: 'Run the program even without the full sandbox (no bubblewrap, macOS, Windows).' },
    python: PYTHON_FLAG,
    backend: {
      kind: 'string',
      value: 'local|slurm',
      help: 'Evaluate here (local, default) or as a SLURM job (thetaevolve.slurm.* through --set/--config).',
    },
    config: { kind: 'string', value: 'FILE', help: 'Settings from a JSON object like VS Code\'s settings.json ("thetaevolve.*" keys).' },
    set: { kind: 'list', value: 'KEY=VALUE', help: 'One setting (KEY with or without "thetaevolve."); repeatable.' },
  },
};

export const APPLY_SPEC: CommandSpec = {
  name: 'apply',
  summary: "Apply a model response's SEARCH/REPLACE blocks to a parent program and print the child.",
  positionals: [
    { name: 'parent-file', help: 'The parent program (with an EVOLVE-BLOCK).' },
    { name: 'response-file', help: "The model's response text." },
  ],
  flags: {
    json: { kind: 'boolean', help: 'Print status, child, applied, skipped as JSON.' },
  },
};

export const DB_SPEC: CommandSpec = {
  name: 'db',
  summary: 'Summarise a run database: programs, steps, best, islands, archive; or write its best program with --best.',
  positionals: [{ name: 'db-file', help: 'A run database (.sqlite).' }],
  flags: {
    best: { kind: 'boolean', help: "Print the best program's code (or write it to --output FILE) instead of the summary." },
    output: { kind: 'string', value: 'FILE', help: 'With --best: write the program to FILE instead of stdout.' },
    lineage: {
      kind: 'string',
      value: 'ID|best',
      help: 'The program, then each parent back to the starting program: id, step, score, origin.',
    },
    blame: {
      kind: 'string',
      value: 'ID|best',
      help: 'Each line of the program with the program of its lineage where the line first appeared (id, step, origin).',
    },
    json: { kind: 'boolean', help: 'Print the summary (or the lineage, or the blame) as JSON.' },
  },
};

export const CONVERT_SPEC: CommandSpec = {
  name: 'convert',
  summary:
    "Write task.json into an OpenEvolve folder so that its evaluator runs apart from the candidate, on what the program returns (scores then protected); refused, with the reason, where the evaluator needs the program itself. Or turn a FunSearch specification into a task folder (OpenEvolve's layout): its @funsearch.evolve function is evolved, its @funsearch.run function scores each input.",
  positionals: [
    {
      name: 'folder-or-spec',
      help: 'An OpenEvolve-layout folder (initial_program.* + evaluator.py), a ThetaEvolve release folder or one of its configs/*.yaml, or a FunSearch specification (.py).',
    },
  ],
  flags: {
    evaluator: EVALUATOR_FLAG,
    inputs: {
      kind: 'string',
      value: 'JSON',
      help: "FunSearch: the inputs, a JSON array; the @funsearch.run function is called once per item (a list item is one argument), e.g. '[8]'.",
    },
    reduce: {
      kind: 'string',
      value: 'last|mean|sum',
      help: "FunSearch: how the per-input scores make the score (default last, as FunSearch's own _reduce_score).",
    },
    output: { kind: 'string', value: 'DIR', help: 'FunSearch: the folder to write (default: beside the specification, named after it).' },
    json: { kind: 'boolean', help: 'Print the files written as JSON.' },
  },
};

export const STEER_SPEC: CommandSpec = {
  name: 'steer',
  summary:
    'Steer a run, live or stopped: add a program of your own, give the prompts guidance, ban or pin a program. On a live run it takes effect at the start of the next step; on a stopped one --add evaluates now and the rest applies when it resumes.',
  positionals: [{ name: 'db-file', help: 'The run database (.sqlite).' }],
  flags: {
    add: {
      kind: 'string',
      value: 'FILE',
      help: "Add this program (EVOLVE-BLOCK required): evaluated in the sandbox, marked as the researcher's.",
    },
    island: { kind: 'integer', minimum: 0, value: 'N', help: 'With --add: the island to place it on (default: the smallest).' },
    parent: { kind: 'string', value: 'ID', help: 'With --add: the program it was derived from.' },
    note: { kind: 'string', value: 'TEXT', help: 'With --add: a note recorded with it.' },
    guidance: { kind: 'string', value: 'FILE', help: 'Text added to every prompt from the next step on (replaces earlier guidance).' },
    'clear-guidance': { kind: 'boolean', help: 'No guidance from the next step on.' },
    recommendations: {
      kind: 'string',
      value: 'FILE',
      help: "Replace the model's meta-recommendations with this text (kept as the model's, marked edited; an empty file removes them).",
    },
    ban: { kind: 'string', value: 'ID', help: 'Never a parent, an inspiration or in a rollout again.' },
    descendants: { kind: 'boolean', help: 'With --ban: its descendants too.' },
    unban: { kind: 'string', value: 'ID', help: 'Lift a ban (with the descendants it covered).' },
    pin: { kind: 'string', value: 'ID', help: "Make ID the parent of a share of the next steps' prompts." },
    share: { kind: 'number', value: 'F', help: "With --pin: the share of each step's prompts, in (0, 1] (default 0.25)." },
    steps: { kind: 'integer', minimum: 1, value: 'N', help: 'With --pin: for this many steps (default 5).' },
    json: {
      kind: 'boolean',
      help: 'Print what was done as one JSON line (for --add: id, outcome, score, island; queued: true on a live run).',
    },
    config: { kind: 'string', value: 'FILE', help: 'Settings for evaluating --add on a stopped run (sandbox limits), as for run.' },
    set: { kind: 'list', value: 'KEY=VALUE', help: 'One setting, as for run; repeatable.' },
    'allow-weak-isolation': { kind: 'boolean', help: 'Evaluate --add even without the full sandbox (no bubblewrap, macOS, Windows).' },
    python: PYTHON_FLAG,
  },
};

export const REPORT_SPEC: CommandSpec = {
  name: 'report',
  summary:
    "Compare runs in one self-contained HTML file (no network): each run's progress by step and by time, policy versions with RL, outcomes, throughput, the settings that differ, each run's best program and its lineage.",
  positionals: [
    { name: 'db-file', help: 'Run databases (.sqlite) to compare, two or more (one gives its report alone).', repeatable: true },
  ],
  flags: {
    output: { kind: 'string', value: 'FILE', help: 'Write the report to FILE (.html).' },
    png: { kind: 'string', value: 'FILE', help: 'Draw the progress comparison into FILE (.png) with a headless Chromium from PATH.' },
    json: { kind: 'boolean', help: 'Print the comparison as one JSON object.' },
  },
};

export const MCP_SPEC: CommandSpec = {
  name: 'mcp',
  summary:
    "Serve the agent tools over stdio as an MCP server (VS Code's mcp.json, Claude Code, Codex): list runs, read their programs, lineage and blame, steer them as the researcher does (recorded as the agent's). Live runs are steered at their next step.",
  positionals: [],
  flags: {
    runs: { kind: 'string', value: 'DIR', help: 'The folder of run databases (default .thetaevolve/runs, or thetaevolve.runsDirectory).' },
    db: { kind: 'string', value: 'FILE', help: 'Serve this one run database instead.' },
    config: { kind: 'string', value: 'FILE', help: 'Settings for evaluating add_program on a stopped run (sandbox limits), as for run.' },
    set: { kind: 'list', value: 'KEY=VALUE', help: 'One setting, as for run; repeatable.' },
    'allow-weak-isolation': {
      kind: 'boolean',
      help: 'Evaluate add_program even without the full sandbox (no bubblewrap, macOS, Windows).',
    },
  },
};

export const COMMAND_SPECS: readonly CommandSpec[] = [
  RUN_SPEC,
  EVALUATE_SPEC,
  APPLY_SPEC,
  DB_SPEC,
  STEER_SPEC,
  CONVERT_SPEC,
  REPORT_SPEC,
  MCP_SPEC,
];
