// Short-lived signals for the requests made under a long-lived one (a run's
// stop): each request gets a controller of its own, and the long-lived
// signal carries one listener however many requests are in flight (none
// while none is). One listener per request would grow with them (a step's
// novelty judge asks hundreds of questions at once; Node warns past ten), and
// AbortSignal.any keeps a reference on its source for every signal it made,
// for as long as the source lives (Node 20).

export class RequestSignals {
  private readonly inFlight = new Set<AbortController>();
  private readonly onAbort = (): void => {
    const requests = [...this.inFlight];
    this.inFlight.clear();
    for (const request of requests) request.abort(this.parent.reason);
  };

  constructor(private readonly parent: AbortSignal) {}

  /** Runs `work` with a signal of its own, aborted (with the long-lived signal's reason) when the long-lived one is. */
  async run<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const request = new AbortController();
    if (this.parent.aborted) request.abort(this.parent.reason);
    else {
      if (this.inFlight.size === 0) this.parent.addEventListener('abort', this.onAbort, { once: true });
      this.inFlight.add(request);
    }
    try {
      return await work(request.signal);
    } finally {
      if (this.inFlight.delete(request) && this.inFlight.size === 0) this.parent.removeEventListener('abort', this.onAbort);
    }
  }
}
