// dist/evaluateJob.js: what a SLURM evaluation job runs on a compute node,
// `thetaevolve evaluate` and nothing else of the CLI. A quarter of cli.js's
// bundle, so each job's Node is evaluating sooner (bench slurm-step-overhead,
// its cliLoad phase). Arguments as `thetaevolve evaluate ARGS`.
import { EVALUATE_SPEC } from './cli/commands';
import { forPeople, runHandler, startProcess } from './cli/entry';
import { evaluateCommand } from './cli/evaluate';

if (require.main === module) startProcess((argv, io) => runHandler(EVALUATE_SPEC, evaluateCommand, argv, forPeople(io)));
