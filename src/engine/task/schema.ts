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

/**
 * What editors validate every task.json against: the schema applies only to a
 * file that holds one of our own fields, so another tool's task.json (Azure
 * Pipelines' tasks, say) is left alone.
 */
export function editorTaskJsonSchema(): Record<string, unknown> {
  const { $schema, title, ...rules } = taskJsonSchema();
  const ours = ['initialProgram', 'evaluator', 'candidate', 'metaInformation'].map((field) => ({ required: [field] }));
  return { $schema, title, if: { anyOf: ours }, then: rules };
}

/** The exact text of media/task.schema.json. */
export function taskJsonSchemaText(): string {
  return JSON.stringify(editorTaskJsonSchema(), null, 2) + '\n';
}
