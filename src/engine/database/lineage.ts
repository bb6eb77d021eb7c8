// Where a program came from (docs/algorithm.md section 11): its lineage, the
// program and each parent back to the starting program, and the blame of
// its lines, for each line the program of that lineage where it first
// appeared. Read queries over the programs and lineage tables; a lineage
// stops early only where a database written before the lineage table lost
// an evicted ancestor (`complete: false`).
import { splitLines } from '../common/diff';
import { keptLines } from '../common/lineDiff';
import type { ProgramOrigin } from '../common/steering';
import type { ProgramDatabase, ProgramRecord } from './programDatabase';
import { secondParentOf } from '../operators/crossover';

export interface LineageEntry {
  id: string;
  parentId: string | null;
  step: number;
  score: number;
  origin: ProgramOrigin;
  /** A researcher's note on a program they added. */
  note: string | null;
  /** A crossover child's second parent (operators/crossover.ts); absent otherwise. */
  secondParentId?: string;
}

export interface Lineage {
  /** The program first, then its parent, and so on. */
  programs: LineageEntry[];
  /** Whether it reaches a program without a parent (an ancestor evicted before schema version 3 can be gone). */
  complete: boolean;
}

export interface BlameLine {
  /** 1-based. */
  line: number;
  text: string;
  /** The program of the lineage where the line first appeared. */
  id: string;
  step: number;
  origin: ProgramOrigin;
}

export interface Blame {
  id: string;
  lines: BlameLine[];
  /** As Lineage.complete: when false, lines of the oldest program found are counted as its own. */
  complete: boolean;
}

/** The program `id` names: a program id, or `best` for the run's best. */
export function resolveProgram(db: ProgramDatabase, id: string): ProgramRecord | null {
  return id === 'best' ? db.best() : db.get(id);
}

function entryOf(program: ProgramRecord): LineageEntry {
  const secondParentId = secondParentOf(program.metrics);
  return {
    id: program.id,
    parentId: program.parentId,
    step: program.step,
    score: program.score,
    origin: program.origin,
    note: program.note,
    ...(secondParentId !== null ? { secondParentId } : {}),
  };
}

function lineageRecords(db: ProgramDatabase, program: ProgramRecord): { records: ProgramRecord[]; complete: boolean } {
  const records = [program, ...db.ancestors(program.id)];
  return { records, complete: (records[records.length - 1] as ProgramRecord).parentId === null };
}

export function lineageOf(db: ProgramDatabase, program: ProgramRecord): Lineage {
  const { records, complete } = lineageRecords(db, program);
  return { programs: records.map(entryOf), complete };
}

/** The program's lines as `db --best --output` writes them (a final line ending ends the last line). */
export function programLines(code: string): string[] {
  const lines = splitLines(code);
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** A line-level diff along the lineage, from the oldest program down: each line keeps the program that brought it. */
export function blameOf(db: ProgramDatabase, program: ProgramRecord): Blame {
  const { records, complete } = lineageRecords(db, program);
  const oldestFirst = records.reverse();
  const first = oldestFirst[0] as ProgramRecord;
  let lines = programLines(first.code);
  let authors: ProgramRecord[] = lines.map(() => first);
  for (const next of oldestFirst.slice(1)) {
    const nextLines = programLines(next.code);
    const kept = keptLines(lines, nextLines);
    // A crossover child: a line it did not keep from its parent but shares with its second parent came from that one.
    const secondId = secondParentOf(next.metrics);
    const second = secondId !== null ? db.get(secondId) : null;
    const fromSecond = second ? keptLines(programLines(second.code), nextLines) : null;
    authors = kept.map((from, i) => {
      if (from !== -1) return authors[from] as ProgramRecord;
      return second && fromSecond && fromSecond[i] !== -1 ? second : next;
    });
    lines = nextLines;
  }
  return {
    id: program.id,
    complete,
    lines: lines.map((text, i) => {
      const author = authors[i] as ProgramRecord;
      return { line: i + 1, text, id: author.id, step: author.step, origin: author.origin };
    }),
  };
}
