// The errors kit: our errors name themselves and keep what they wrap, and one
// formatter names the first problem zod found, with each message's root word.
import assert from 'node:assert/strict';
import { z } from 'zod';
import { errorMessage, fieldPathText, firstZodIssue, ThetaEvolveError, zodIssueText } from '../../src/engine/common/errors';
import { TaskError } from '../../src/engine/task/task';
import { SlurmError } from '../../src/engine/evaluation/slurmCli';
import { RunSetupError } from '../../src/engine/runFactory';

class ProbeError extends ThetaEvolveError {
  override readonly name = 'ProbeError';
}

function zodError(schema: z.ZodType, value: unknown): z.ZodError {
  const parsed = schema.safeParse(value);
  assert.equal(parsed.success, false, 'the value must be refused');
  return parsed.error as z.ZodError;
}

describe('errors kit', () => {
  describe('ThetaEvolveError', () => {
    it('names the subclass and keeps the message as it was', () => {
      const err = new ProbeError('the probe failed');
      assert.equal(err.name, 'ProbeError');
      assert.equal(err.message, 'the probe failed');
      assert.equal(errorMessage(err), 'the probe failed');
      assert.equal(String(err), 'ProbeError: the probe failed');
      assert.equal(new TaskError('x').name, 'TaskError');
      assert.equal(new SlurmError('x').name, 'SlurmError');
      assert.equal(new RunSetupError('x').name, 'RunSetupError');
    });

    it('is an Error and a ThetaEvolveError, and each subclass only itself', () => {
      const err = new TaskError('task.json: field x: bad');
      assert.ok(err instanceof Error);
      assert.ok(err instanceof ThetaEvolveError);
      assert.ok(err instanceof TaskError);
      assert.ok(!(err instanceof SlurmError));
      assert.ok(!(new Error('plain') instanceof ThetaEvolveError));
    });

    it('keeps the chain of causes', () => {
      const root = new SyntaxError('Unexpected token } in JSON');
      const middle = new TaskError('task.json: not valid JSON', { cause: root });
      const top = new ProbeError('cannot load the task', { cause: middle });
      assert.equal(top.cause, middle);
      assert.equal(middle.cause, root);
      assert.equal(new ProbeError('no cause').cause, undefined);
      const setup = new RunSetupError('the endpoint is not ready', 'thetaevolve.endpoint', { cause: 'ECONNREFUSED' });
      assert.equal(setup.cause, 'ECONNREFUSED');
      assert.equal(setup.setting, 'thetaevolve.endpoint');
    });
  });

  describe('zod issue formatter', () => {
    const Schema = z.object({ name: z.string(), steps: z.array(z.object({ score: z.number() })) });

    it("names the top level with the caller's word", () => {
      const error = zodError(Schema, 42);
      assert.equal(firstZodIssue(error, '(root)').path, '(root)');
      assert.match(zodIssueText(error, '(top level)'), /^\(top level\): .+/);
      assert.equal(firstZodIssue(error, '').path, '');
    });

    it('joins a nested path with dots', () => {
      const error = zodError(Schema, { name: 'x', steps: [{ score: 1 }, { score: 'high' }] });
      const issue = firstZodIssue(error, '(root)');
      assert.equal(issue.path, 'steps.1.score');
      assert.equal(issue.message, error.issues[0]?.message);
      assert.equal(zodIssueText(error, '(root)'), `steps.1.score: ${issue.message}`);
    });

    it('writes array indexes dotted or bracketed', () => {
      assert.equal(fieldPathText(['steps', 0, 'score'], '(root)'), 'steps.0.score');
      assert.equal(fieldPathText(['steps', 0, 'score'], '(top level)', 'bracketed'), 'steps[0].score');
      assert.equal(fieldPathText([2, 'id'], '(top level)', 'bracketed'), '[2].id');
      assert.equal(fieldPathText([], '(top level)', 'bracketed'), '(top level)');
      assert.equal(fieldPathText([], '(root)'), '(root)');
    });
  });
});
