import { type MemoryNote, recordOf } from "./notes.ts";

/**
 * What a run's prompt recalled: the notes its MEMORY block carried, read back
 * from the kept prompt (`roster runs recall`, the public roster's memory-recall
 * trace), with the block's own status lines (notes left out, lines skipped).
 */
export type Recall =
  | { kind: "run"; notes: MemoryNote[]; status: string[] }
  | { kind: "session" }
  | { kind: "none" };

export function recallOf(blocks: ReadonlyArray<{ label: string; content: string }>): Recall {
  const block = blocks.find((one) => one.label === "MEMORY");
  if (!block) return { kind: "none" };
  const lines = block.content.split("\n");
  if (lines.some((line) => line.includes('{"block":"memory"} line'))) return { kind: "session" };
  const notes: MemoryNote[] = [];
  const status: string[] = [];
  for (const line of lines) {
    if (line.startsWith("{")) {
      const record = recordOf(line);
      if (record?.kind === "note") notes.push(record.note);
    } else if (line.startsWith("(") && line !== "(no notes yet)") status.push(line);
  }
  return { kind: "run", notes, status };
}
