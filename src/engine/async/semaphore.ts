// A counting semaphore with a FIFO queue: caps the work in flight (the
// requests of one generate() call, the sandbox's K evaluations). Waiting is
// abortable.

export class Semaphore {
  private available: number;
  private readonly waiters: { grant: () => void; fail: (error: Error) => void }[] = [];
  private held = 0;
  private maxHeldSeen = 0;

  /** capacity: Infinity for no cap. */
  constructor(readonly capacity: number) {
    if (!(capacity >= 1)) throw new RangeError(`Semaphore capacity must be at least 1, got ${capacity}`);
    this.available = capacity;
  }

  /** Most permits held at once so far. */
  get maxHeld(): number {
    return this.maxHeldSeen;
  }

  /** Resolves with a release function once a permit is free; rejects when signal aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new Error('aborted'));
    if (this.available > 0) {
      this.available--;
      return Promise.resolve(this.grantPermit());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.grantPermit());
        },
        fail: reject,
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  private grantPermit(): () => void {
    this.held++;
    this.maxHeldSeen = Math.max(this.maxHeldSeen, this.held);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held--;
      const next = this.waiters.shift();
      if (next) next.grant();
      else this.available++;
    };
  }
}
