// The early checks of a child, before any evaluation (docs/algorithm.md section 4):
// apply the model's diff, then reject what is no diff, no change, too long or
// a duplicate up to comments. Engine-side (the duplicate check hashes with
// node:crypto); the scores themselves live in common/scoring.ts.
import { codeHash } from './codeHash';
import { applyResponse, type ApplyResult } from './common/diff';
import { applyRewrite } from './common/rewrite';
import { OUTCOME_PENALTY } from './common/types';

export type EarlyOutcome = 'no_diff' | 'no_change' | 'duplicate' | 'no_solution';

export type ChildClassification =
  | { kind: 'evaluate'; child: string; codeHash: string; apply: ApplyResult }
  | {
      kind: 'rejected';
      outcome: EarlyOutcome;
      score: number;
      reason: string;
      /** The child when one was built (duplicate, too long, comment-only change), else null. */
      child: string | null;
      codeHash: string | null;
      apply: ApplyResult;
    };

export interface ClassifyChildInput {
  parentCode: string;
  /** The model's answer (reasoning already separated; inline <think> is stripped anyway). */
  answer: string;
  language: string;
  maxCodeLength: number;
  /**
   * Lazy penalty: whether a program with this comment-stripped hash is
   * already in the database. Leave out to switch the penalty off.
   */
  seen?: (hash: string) => boolean;
  /** What the prompt asked for: SEARCH/REPLACE edits (default) or the whole EVOLVE-BLOCK (common/rewrite.ts). */
  editFormat?: 'diff' | 'rewrite';
}

/**
 * The early checks of docs/algorithm.md section 4, in order: no diff block (-0.4),
 * no valid change (-0.3), over-long child (no_solution, -0.2), equal up to
 * comments to a program already in the database (duplicate, -0.3); else
 * the child to evaluate, with its hash.
 */
export function classifyChild(input: ClassifyChildInput): ChildClassification {
  const applyOptions = { language: input.language, maxLength: input.maxCodeLength };
  const apply =
    input.editFormat === 'rewrite'
      ? applyRewrite(input.parentCode, input.answer, applyOptions)
      : applyResponse(input.parentCode, input.answer, applyOptions);
  const reject = (outcome: EarlyOutcome, child: string | null, hash: string | null, reason: string): ChildClassification => ({
    kind: 'rejected',
    outcome,
    score: OUTCOME_PENALTY[outcome],
    reason,
    child,
    codeHash: hash,
    apply,
  });
  switch (apply.status) {
    case 'no_diff_blocks':
      return reject('no_diff', null, null, apply.message);
    case 'no_valid_change':
    case 'outside_evolve_block':
    case 'no_evolve_block':
      return reject('no_change', apply.child, null, apply.message);
    case 'too_long':
      return reject('no_solution', apply.child, null, apply.message);
    case 'applied': {
      const child = apply.child as string;
      const hash = codeHash(child, input.language);
      if (input.seen?.(hash))
        return reject('duplicate', child, hash, 'the child equals, up to comments, a program already in the database');
      return { kind: 'evaluate', child, codeHash: hash, apply };
    }
  }
}
