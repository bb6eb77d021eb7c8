// Drafts for a new task around an existing program: the meta-information text
// from the program's own docstring or leading comment, used where a folder
// carries no prompt (ShinkaEvolve's, an OpenEvolve folder without
// config.yaml) and by "New Task for This File".

const MAX_DOC_CHARS = 2000;

/** The first documentation text of a program: a Python/Julia docstring, else its leading comment block. */
export function leadingDocText(code: string): string | null {
  const triple = /("""|''')([\s\S]*?)\1/.exec(code);
  if (triple && (triple[2] ?? '').trim() !== '') return dedent(triple[2] as string).slice(0, MAX_DOC_CHARS);
  const block = /\/\*\*?([\s\S]*?)\*\//.exec(code);
  const comment: string[] = [];
  for (const [i, line] of code.split(/\r?\n/).entries()) {
    if (i === 0 && line.startsWith('#!')) continue;
    const m = /^\s*(?:#|\/\/|--|%|;)\s?(.*)$/.exec(line);
    const text = m?.[1];
    if (text?.includes('EVOLVE-BLOCK')) {
      if (comment.length > 0) break;
      continue;
    }
    if (text === undefined) {
      if (comment.length > 0 || line.trim() !== '') break;
      continue;
    }
    comment.push(text);
  }
  const fromLines = comment.join('\n').trim();
  if (fromLines !== '') return fromLines.slice(0, MAX_DOC_CHARS);
  if (block && (block[1] ?? '').trim() !== '') return dedent((block[1] as string).replace(/^\s*\* ?/gm, '')).slice(0, MAX_DOC_CHARS);
  return null;
}

function dedent(text: string): string {
  const [first = '', ...rest] = text.replace(/\r\n?/g, '\n').split('\n');
  const indents = rest.filter((l) => l.trim() !== '').map((l) => /^\s*/.exec(l)?.[0].length ?? 0);
  const cut = indents.length > 0 ? Math.min(...indents) : 0;
  return [first.trim(), ...rest.map((l) => l.slice(cut))].join('\n').trim();
}

/** A meta-information text for the prompt: the program's documentation, and what the model is to do. */
export function draftMetaInformation(code: string, language: string): string {
  const doc = leadingDocText(code);
  const goal =
    `Improve the ${language} program between EVOLVE-BLOCK-START and EVOLVE-BLOCK-END so that its score gets better. ` +
    'Keep the functions the evaluator calls and what they return; the program must finish within {MAX_RUNTIME} seconds.';
  return doc ? `${doc}\n\n${goal}` : goal;
}
