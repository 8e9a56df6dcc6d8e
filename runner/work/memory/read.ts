import { openStoreFile, StoreFileMissing } from "../../boundary/store/copy.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { type ParsedMemory, parseMemory } from "./notes.ts";

/**
 * Reads a worker's memory file on the host, as data from an untrusted store:
 * opened through the store's own folders without following a symlink (a
 * memory/ or memory.jsonl planted as a link to a host file is not read), only
 * a regular file (a FIFO can't hang it), and only its last
 * MEMORY_READ_BYTES, so a 10 GB file costs what a 1 MB one does. Nothing
 * here throws: a file that can't be read is no notes, and the reason is kept
 * for the prompt to say.
 */

/** Where the notes live, inside the worker's store (~/store/memory/memory.jsonl in the box). */
export const MEMORY_FILE = "memory/memory.jsonl";

/** The most of memory.jsonl a prompt reads: its tail, where the newest notes are. */
export const MEMORY_READ_BYTES = 1024 * 1024;

export interface MemoryRead extends ParsedMemory {
  /** The file's size, when it was larger than MEMORY_READ_BYTES and only its tail was read. */
  tailOf?: number;
  /** Why the file was not read at all. */
  unread?: string;
}

export async function readMemory(paths: RosterPaths, worker: string): Promise<MemoryRead> {
  let file: Awaited<ReturnType<typeof openStoreFile>>;
  try {
    file = await openStoreFile(paths, worker, MEMORY_FILE);
  } catch (error) {
    if (error instanceof StoreFileMissing) return { notes: [], skipped: 0 };
    // the reason is the host's (it may name host paths); the worker is told only what to fix
    return {
      notes: [],
      skipped: 0,
      unread: `~/store/${MEMORY_FILE} was not read: it must be a regular file in the folder ~/store/memory (not a symlink, a FIFO or a folder)`,
    };
  }
  try {
    const { size } = await file.stat();
    const start = Math.max(0, size - MEMORY_READ_BYTES);
    const buffer = Buffer.alloc(size - start);
    let got = 0;
    while (got < buffer.length) {
      const { bytesRead } = await file.read(buffer, got, buffer.length - got, start + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    let text = buffer.subarray(0, got).toString("utf8");
    // a tail starts mid-line: that torn piece is not a record, and not the worker's mistake
    if (start > 0) {
      const torn = text.indexOf("\n");
      text = torn < 0 ? "" : text.slice(torn + 1);
    }
    return { ...parseMemory(text), ...(start > 0 ? { tailOf: size } : {}) };
  } catch {
    return { notes: [], skipped: 0, unread: `~/store/${MEMORY_FILE} could not be read` };
  } finally {
    await file.close();
  }
}
