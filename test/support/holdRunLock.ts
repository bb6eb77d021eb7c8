// A second process that holds a run's lock until its stdin closes (or it is
// killed): prints "held <pid>" once the lock is taken.
import { acquireRunLock } from '../../src/engine/runLock';

const dbFile = process.argv[2];
if (!dbFile) throw new Error('usage: holdRunLock.ts <db-file>');
void acquireRunLock(dbFile).then((lock) => {
  process.stdout.write(`held ${process.pid}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => void lock.release().then(() => process.exit(0)));
});
