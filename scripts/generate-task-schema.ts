// Writes media/task.schema.json, the JSON Schema of task.json, from the zod
// schema in src/engine/task/task.ts (the single source of truth; VS Code
// validates task.json files against it). Run: npx tsx scripts/generate-task-schema.ts
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { taskJsonSchemaText } from '../src/engine/task/schema';

const file = join(__dirname, '..', 'media', 'task.schema.json');
writeFileSync(file, taskJsonSchemaText());
console.log(`${file} written`);
