// The hash of a program up to comments (docs/algorithm.md section 4): the lazy
// penalty's key. Engine-side (node:crypto); the comment stripping it hashes is
// browser-safe, in common/codeText.ts.
import { createHash } from 'node:crypto';
import { stripComments } from './common/codeText';

/** sha256 (hex) of the comment-stripped program: equal for programs that differ only in comments or blank space. */
export function codeHash(code: string, language: string): string {
  return createHash('sha256').update(stripComments(code, language), 'utf8').digest('hex');
}
