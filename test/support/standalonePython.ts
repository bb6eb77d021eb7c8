// A Python interpreter installed in a folder of its own, as uv, pyenv or a
// module system lays one out (the researcher's Python shapes, the engine
// worker's prefix refusal), built from Debian's python3 in a few ms.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

const DEBIAN_PYTHON = '/usr/bin/python3';

/**
 * A standalone interpreter at `prefix`, laid out as uv (or pyenv, or a
 * module system under /opt) installs one: its own bin/python3.X (a copy of
 * Debian's binary), lib/python3.X whose entries lead to Debian's standard
 * library, and a site folder of its own holding `module` with `VALUE = value`.
 */
export function standalonePython(prefix: string, module: string, value: number): string {
  const [version, stdlib] = execFileSync(
    DEBIAN_PYTHON,
    ['-I', '-c', 'import sys, sysconfig; print("%d.%d" % sys.version_info[:2]); print(sysconfig.get_paths()["stdlib"])'],
    { encoding: 'utf8' },
  )
    .trim()
    .split('\n') as [string, string];
  const lib = join(prefix, 'lib', `python${version}`);
  mkdirSync(join(prefix, 'bin'), { recursive: true });
  mkdirSync(lib, { recursive: true });
  for (const entry of readdirSync(stdlib))
    if (entry !== 'site-packages' && entry !== 'dist-packages') symlinkSync(join(stdlib, entry), join(lib, entry));
  const python = join(prefix, 'bin', `python${version}`);
  copyFileSync(realpathSync(DEBIAN_PYTHON), python);
  chmodSync(python, 0o755);
  // As installers leave them: python3 and python, relative links inside bin.
  symlinkSync(basename(python), join(prefix, 'bin', 'python3'));
  symlinkSync('python3', join(prefix, 'bin', 'python'));
  const site = (
    JSON.parse(
      execFileSync(python, ['-I', '-c', 'import json, site; print(json.dumps(site.getsitepackages()))'], { encoding: 'utf8' }),
    ) as string[]
  ).find((dir) => dir.startsWith(join(prefix, 'lib') + '/')) as string;
  mkdirSync(site, { recursive: true });
  writeFileSync(join(site, `${module}.py`), `VALUE = ${value}\n`);
  // What an interpreter does not need: a dot-entry and another folder of the prefix.
  mkdirSync(join(prefix, '.secrets'));
  writeFileSync(join(prefix, '.secrets', 'key'), 'not for candidates\n');
  mkdirSync(join(prefix, 'etc'));
  writeFileSync(join(prefix, 'etc', 'private.conf'), 'not for candidates\n');
  return python;
}
