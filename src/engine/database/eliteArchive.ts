// The elite archive of docs/algorithm.md section 6: up to archiveSize of the
// best programs, whole and split by island (exploitation draws from the
// turn's island), with a heap that finds the worst member to replace.
import { MinHeap } from './minHeap';
import { type PopulationNode, worseFirst } from './populationNode';

export class EliteArchive {
  /** Members in insertion order (members that left stay until settle()). */
  private all: PopulationNode[] = [];
  /** `all` split by island, in the same order. */
  private byIsland: PopulationNode[][];
  private size = 0;
  private readonly heap = new MinHeap<PopulationNode>(worseFirst);

  constructor(
    private readonly capacity: number,
    numIslands: number,
  ) {
    this.byIsland = Array.from({ length: numIslands }, () => []);
  }

  get count(): number {
    return this.size;
  }

  get members(): PopulationNode[] {
    return this.all;
  }

  get islandMembers(): PopulationNode[][] {
    return this.byIsland;
  }

  /** A live program read back on open, in sequence order, that is a member. */
  restore(node: PopulationNode): void {
    this.all.push(node);
    (this.byIsland[node.island] as PopulationNode[]).push(node);
    this.heap.push(node);
    this.size++;
  }

  /** Join while there is room, else replace the worst member when better. Returns the member it displaced, or null. */
  offer(node: PopulationNode): PopulationNode | null {
    let displaced: PopulationNode | null = null;
    if (this.size >= this.capacity) {
      let worst = this.heap.peek();
      while (worst && !worst.inArchive) {
        this.heap.pop();
        worst = this.heap.peek();
      }
      if (!worst || !(node.score > worst.score)) return null;
      this.heap.pop();
      worst.inArchive = false;
      this.size--;
      displaced = worst;
    }
    node.inArchive = true;
    this.size++;
    this.heap.push(node);
    this.all.push(node);
    (this.byIsland[node.island] as PopulationNode[]).push(node);
    return displaced;
  }

  /** An evicted program leaves. */
  remove(node: PopulationNode): void {
    if (!node.inArchive) return;
    node.inArchive = false;
    this.size--;
  }

  /** After a step is written: drop those that left, keeping insertion order. */
  settle(): void {
    this.all = this.all.filter((n) => n.inArchive);
    this.byIsland = this.byIsland.map((nodes) => nodes.filter((n) => n.inArchive));
    if (this.heap.length > 2 * this.capacity + 64) this.heap.retain((n) => n.inArchive);
  }
}
