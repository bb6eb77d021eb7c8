// dist/evaluateJob.js: what a SLURM evaluation job runs on a compute node,
// `thetaevolve evaluate` and nothing else of the CLI. A quarter of cli.js's
// bundle, so each job's Node is evaluating sooner (bench slurm-step-overhead,
// its cliLoad phase). Arguments as `thetaevolve evaluate ARGS`. Started by
// dist/jobStart.js (with V8's code cache), so it runs as soon as it is loaded.
import { EVALUATE_SPEC } from './cli/commands';
import { forPeople, runHandler, startProcess } from './cli/entry';
import { evaluateCommand } from './cli/evaluate';

startProcess((argv, io) => runHandler(EVALUATE_SPEC, evaluateCommand, argv, forPeople(io)));
