// Error bodies and context-length refusals as vLLM (current and <= 0.10.0)
// and SGLang word them, read into one shape with the numbers they give.
import assert from 'node:assert/strict';
import { contextRejectionOf, normalizedErrorBody, rejectsTokenFields, serverErrorOf } from '../../src/engine/llm/serverErrors';

describe('server error bodies', () => {
  it('reads nested, flat, plain-string and FastAPI detail bodies', () => {
    assert.deepEqual(serverErrorOf({ error: { message: 'bad', type: 'BadRequestError', param: null, code: 400 } }), {
      message: 'bad',
      type: 'BadRequestError',
      code: 400,
      param: null,
    });
    assert.deepEqual(serverErrorOf({ object: 'error', message: 'flat', type: 'BadRequestError', param: null, code: 400 }), {
      message: 'flat',
      type: 'BadRequestError',
      code: 400,
      param: null,
    });
    assert.equal(
      serverErrorOf({ error: 'The model is currently scaling. Please try again later.' })?.message,
      'The model is currently scaling. Please try again later.',
    );
    assert.equal(
      serverErrorOf({ detail: [{ msg: 'field required' }, { msg: 'value too large' }] })?.message,
      'field required; value too large',
    );
    assert.equal(serverErrorOf({ choices: [] }), null);
    assert.equal(serverErrorOf('plain text'), null);
  });

  it('hands the SDK the nested shape it reads, and other bodies unchanged', () => {
    assert.deepEqual(normalizedErrorBody({ object: 'error', message: 'm', type: 't', code: 503 }), {
      error: { message: 'm', type: 't', code: 503, param: null },
    });
    assert.deepEqual(normalizedErrorBody({ unrelated: 1 }), { unrelated: 1 });
  });

  it("reads the context and prompt tokens of each server version's context-length 400", () => {
    const cases: [string, number | null, number | null][] = [
      // vLLM >= 0.19 (engine/serving.py)
      [
        "This model's maximum context length is 32768 tokens. However, you requested 32000 output tokens and your prompt contains at least 769 input tokens, for a total of at least 32769 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=769)",
        32768,
        769,
      ],
      // vLLM 0.10.x - 0.11 (serving_engine.py)
      [
        "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778).",
        4096,
        2778,
      ],
      [
        "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input messages.",
        4096,
        5000,
      ],
      // vLLM <= 0.10.0
      [
        "This model's maximum context length is 16384 tokens. However, you requested 20000 tokens (3616 in the messages, 16384 in the completion). Please reduce the length of the messages or completion.",
        16384,
        3616,
      ],
      [
        "This model's maximum context length is 1024 tokens. However, you requested 1500 tokens in the messages, Please reduce the length of the messages.",
        1024,
        1500,
      ],
      // SGLang (tokenizer_manager.py)
      [
        "Requested token count exceeds the model's maximum context length of 32768 tokens. You requested a total of 34000 tokens: 30000 tokens from the input messages and 4000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
        32768,
        30000,
      ],
      ["The input (40000 tokens) is longer than the model's context length (32768 tokens).", 32768, 40000],
      // Wording without numbers: still a context refusal
      ['Request exceeds the context window.', null, null],
    ];
    for (const [message, contextLength, promptTokens] of cases)
      assert.deepEqual(contextRejectionOf(message), { contextLength, promptTokens }, message);
    assert.equal(contextRejectionOf('temperature must be in [0, 2]'), null);
  });

  it('takes only a refusal naming the RL fields as the server not accepting them', () => {
    assert.ok(rejectsTokenFields('Unrecognized request argument supplied: return_token_ids'));
    assert.ok(!rejectsTokenFields('temperature must be in [0, 2]'));
  });
});
