// The SLURM backend's probe (bundled as dist/nodeProbe.js, staged beside
// cli.js): run once on a compute node at the start of a run, it prints one
// JSON line saying which Node.js runs there and which sandbox ThetaEvolve's
// `evaluate` gets on that node. slurm.ts reads it with NodeProbeSchema.
import { hostname } from 'node:os';
import { z } from 'zod';
import { detectIsolation } from '../sandbox/isolation';

export const NodeProbeSchema = z
  .object({
    node: z.string().regex(/^v\d+\.\d+\.\d+/),
    host: z.string(),
    isolation: z.object({ kind: z.enum(['bwrap', 'fallback', 'sandbox-exec', 'none']), warning: z.string().nullable() }).strict(),
  })
  .strict();
export type NodeProbe = z.infer<typeof NodeProbeSchema>;

export function probeThisNode(): NodeProbe {
  const isolation = detectIsolation();
  return { node: process.version, host: hostname(), isolation: { kind: isolation.kind, warning: isolation.warning } };
}
