// @ts-check
// What each unit test file needs beyond Node.js and `npm ci`. `npm test` and
// `npm run test:unit` run every file whatever this says; this list only
// decides what `npm run test:unit:core` leaves out (scripts/test-unit-core.mjs),
// so a machine without the Debian packages of scripts/setup.sh can still run
// the rest. A file not listed needs nothing: a new test file is in the core
// run until it is listed here, so a missing entry shows as a failure there,
// never as a test silently dropped.
//
// Found by running the suite with each of these hidden (bind mounts over the
// binaries and Python packages in a private mount namespace).

/** Requirement -> what provides it (scripts/setup.sh installs all of them). */
export const REQUIREMENTS = {
  bubblewrap: 'the full sandbox: Debian package bubblewrap (without it the evaluator refuses to run candidates)',
  python3: "python3 itself, standard library only (the candidates' and evaluators' interpreter)",
  'python3-numpy': "numpy and scipy for python3 (the bundled tasks' initial programs and evaluators): Debian python3-numpy python3-scipy",
  'python3-yaml': "PyYAML (OpenEvolve folders' config.yaml): Debian python3-yaml",
  slurm: 'a one-node SLURM cluster: Debian slurmctld slurmd slurm-client munge',
  unzip: 'unzip, to read the packaged .vsix: Debian unzip',
  'code-server': 'code-server in tools/code-server (scripts/setup.sh), for the language configurations VS Code ships',
};

/** @type {Record<string, (keyof typeof REQUIREMENTS)[]>} test/unit file -> what it needs */
export const UNIT_TEST_NEEDS = {
  'bundles.test.ts': ['bubblewrap', 'python3', 'unzip'],
  'cliInput.test.ts': ['bubblewrap', 'python3', 'python3-numpy'],
  'cliSettings.test.ts': ['bubblewrap', 'python3'],
  'conformance.test.ts': ['bubblewrap', 'python3', 'python3-numpy'],
  'dashboardTruth.test.ts': ['bubblewrap', 'python3'],
  'endpointPool.test.ts': ['bubblewrap', 'python3'],
  'endpointRun.test.ts': ['bubblewrap', 'python3'],
  'engineWorker.test.ts': ['bubblewrap', 'python3'],
  'evaluationOutputs.test.ts': ['bubblewrap', 'python3'],
  'evaluator-gaming.test.ts': ['python3', 'python3-numpy'],
  'evaluatorFeedback.test.ts': ['bubblewrap', 'python3', 'python3-numpy', 'python3-yaml'],
  'foreignCompat.test.ts': ['bubblewrap', 'python3', 'python3-numpy', 'python3-yaml'],
  'foreignTasks.test.ts': ['bubblewrap', 'python3', 'python3-numpy', 'python3-yaml'],
  'funsearch.test.ts': ['bubblewrap', 'python3', 'python3-numpy', 'python3-yaml'],
  'loop.test.ts': ['bubblewrap', 'python3'],
  'metaRecommendations.test.ts': ['bubblewrap', 'python3'],
  'mutateSampler.test.ts': ['python3'],
  'newTask.test.ts': ['bubblewrap', 'python3', 'code-server'],
  'notebookCli.test.ts': ['bubblewrap', 'python3'],
  'noValidProgram.test.ts': ['bubblewrap', 'python3'],
  'notebookProgram.test.ts': ['python3'],
  'novelty.test.ts': ['bubblewrap', 'python3'],
  'pipelinedSteps.test.ts': ['bubblewrap', 'python3'],
  'readOnlyRun.test.ts': ['bubblewrap', 'python3'],
  'releaseTasks.test.ts': ['bubblewrap', 'python3', 'python3-yaml'],
  'researcherPython.test.ts': ['bubblewrap', 'python3', 'python3-numpy'],
  'runHealth.test.ts': ['bubblewrap', 'python3'],
  'runComparison.test.ts': ['bubblewrap', 'python3'],
  'runLock.test.ts': ['bubblewrap', 'python3', 'python3-numpy'],
  'sandbox-cli.test.ts': ['bubblewrap', 'python3', 'python3-numpy'],
  'sandbox-containment.test.ts': ['bubblewrap', 'python3'],
  'sandbox-hostile.test.ts': ['bubblewrap', 'python3', 'python3-numpy'],
  'sandbox-host-modes.test.ts': ['bubblewrap', 'python3'],
  'sandbox-warm.test.ts': ['bubblewrap', 'python3', 'python3-numpy', 'python3-yaml'],
  'sandbox.test.ts': ['bubblewrap', 'python3'],
  'slurm.test.ts': ['slurm', 'bubblewrap', 'python3'],
  'slurmInference.test.ts': ['slurm', 'bubblewrap', 'python3'],
  'agentTools-mcp.test.ts': ['bubblewrap', 'python3', 'python3-numpy'],
  'steer-cli.test.ts': ['bubblewrap', 'python3', 'python3-numpy'],
  'steer-live.test.ts': ['bubblewrap', 'python3', 'python3-numpy'],
  'steer-trainer.test.ts': ['bubblewrap', 'python3'],
  'slurmSettings.test.ts': ['slurm'],
  'solutionPicture.test.ts': ['bubblewrap', 'python3', 'python3-numpy'],
  'task.test.ts': ['bubblewrap', 'python3'],
  'trackedRun.test.ts': ['bubblewrap', 'python3'],
  'trainerCli.test.ts': ['bubblewrap', 'python3'],
  'trainerLoop.test.ts': ['bubblewrap', 'python3'],
  'models.test.ts': ['bubblewrap', 'python3'],
  'modelsTrainer.test.ts': ['bubblewrap', 'python3'],
  'trusted-evaluator-limits.test.ts': ['python3', 'python3-numpy', 'python3-yaml'],
};
