import assert from 'node:assert/strict';
import { codeHash } from '../../src/engine/codeHash';
import { sameCodeIgnoringComments, segmentCode, stripComments } from '../../src/engine/common/codeText';

describe('codeHash: comment stripping', () => {
  it('drops Python # comments but keeps # inside strings, triple-quoted strings included', () => {
    const code = [
      '# leading comment',
      'x = 1  # trailing comment   ',
      'url = "http://a.b/#frag"  # c',
      "s = 'it\\'s # not a comment'",
      'doc = """',
      '# kept: inside a docstring',
      '"""',
      '',
      '   ',
      'y = 2',
    ].join('\n');
    assert.equal(
      stripComments(code, 'py'),
      ['x = 1', 'url = "http://a.b/#frag"', "s = 'it\\'s # not a comment'", 'doc = """', '# kept: inside a docstring', '"""', 'y = 2'].join(
        '\n',
      ),
    );
  });

  it('drops C-like // and /* */ comments but keeps them inside strings', () => {
    const code = [
      '/* header',
      '   spans lines */',
      'int x = 1; // one',
      'const char *u = "http://x // y /* z */";',
      "char c = '/';",
      'double r = /* inline */ 0.5;',
    ].join('\n');
    assert.equal(
      stripComments(code, 'c'),
      ['int x = 1;', 'const char *u = "http://x // y /* z */";', "char c = '/';", 'double r =  0.5;'].join('\n'),
    );
  });

  it('handles JS template literals and Lua/SQL -- comments', () => {
    assert.equal(stripComments('const s = `a // b`; // c', 'ts'), 'const s = `a // b`;');
    assert.equal(stripComments('x = 1 -- note\n--[[ block\n]]\ny = "--"', 'lua'), 'x = 1\ny = "--"');
  });

  it('normalises CRLF, trailing spaces and blank lines, keeps indentation', () => {
    assert.equal(stripComments('def f():\r\n    return 1   \r\n\r\n', 'py'), 'def f():\n    return 1');
  });

  it('leaves unknown languages alone except for blank space', () => {
    assert.equal(stripComments('a # b\n\n', 'txt'), 'a # b');
  });

  it('segments code, comments and strings', () => {
    const kinds = segmentCode('x = "a#b" # c', 'py').map((s) => s.kind);
    assert.deepEqual(kinds, ['code', 'string', 'code', 'comment']);
  });
});

describe('codeHash: hashing', () => {
  it('is equal for programs that differ only in comments and blank space', () => {
    const a = 'def f():\n    return 1\n';
    const b = '# new comment\ndef f():  # why\n    return 1\n\n\n';
    assert.equal(codeHash(a, 'py'), codeHash(b, 'py'));
    assert.ok(sameCodeIgnoringComments(a, b, 'py'));
    assert.match(codeHash(a, 'py'), /^[0-9a-f]{64}$/);
  });

  it('differs for code changes and for changes inside string literals', () => {
    const base = 'x = "a # b"\n';
    assert.notEqual(codeHash(base, 'py'), codeHash('x = "a # c"\n', 'py'));
    assert.notEqual(codeHash('x = 1\n', 'py'), codeHash('x = 2\n', 'py'));
    assert.notEqual(codeHash('    x = 1\n', 'py'), codeHash('x = 1\n', 'py'), 'indentation matters in Python');
  });
});
