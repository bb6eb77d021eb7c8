// Finding an executable by name: the sandbox's tools (system folders first)
// and the Python interpreter (PATH's order) search different folders the
// same way.
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';

/** The first `dir/name` this process may execute, in the order of `dirs`; null when there is none. */
export function firstExecutable(name: string, dirs: Iterable<string>): string | null {
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return null;
}
