// Imported first by the entry: zod decides whether it may compile parsers
// with `new Function` while the protocol's schemas are built, and the
// webview's CSP has no 'unsafe-eval' (the probe would be a CSP violation).
import { z } from 'zod';

z.config({ jitless: true });
