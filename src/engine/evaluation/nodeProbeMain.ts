// dist/nodeProbe.js: what a SLURM probe job runs on a compute node. Its own
// entry point, so that bundles which import nodeProbe.ts (the CLI, the worker)
// never print the probe.
import { probeThisNode } from './nodeProbe';

process.stdout.write(`${JSON.stringify(probeThisNode())}\n`);
