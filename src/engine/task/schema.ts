// The JSON Schema of task.json, generated from the zod schema so that the
// file editors validate against (media/task.schema.json) never drifts from
// what loadTask accepts.
import { z } from 'zod';
import { TaskFileSchema } from './task';

/** The schema as editors see task.json: input form, so fields with defaults are optional. */
export function taskJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(TaskFileSchema, { io: 'input', target: 'draft-7' }) as Record<string, unknown>;
  return { ...schema, title: 'ThetaEvolve task (task.json)' };
}

/** The exact text of media/task.schema.json. */
export function taskJsonSchemaText(): string {
  return JSON.stringify(taskJsonSchema(), null, 2) + '\n';
}
