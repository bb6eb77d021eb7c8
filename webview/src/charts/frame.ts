// Coalesce redraws to one per animation frame: a burst of messages (a
// snapshot followed by queued steps) draws once.
export function frameScheduler(draw: () => void): () => void {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      draw();
    });
  };
}
