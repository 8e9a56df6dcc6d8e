/**
 * What `roster memory …` and `roster runs recall` do. The CLI only declares
 * the commands; this module is loaded when one runs.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { rosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import { operatorName } from "../../ground/operator.ts";
import type { MemoryChange } from "../../work/memory/edit.ts";
import { checkName } from "./worker.ts";

const out = (text: string) => process.stdout.write(`${text}\n`);

/** The worker must exist: a typo never makes a store. */
function workerPaths(worker: string) {
  checkName(worker);
  const paths = rosterPaths();
  if (!existsSync(join(paths.config, "workers", worker, "worker.toml")))
    throw new RosterError(`no worker ${worker}: roster worker ls lists them`, { exitCode: 2 });
  return paths;
}

/** The one scope kept here is the worker's own. */
function checkScope(flags: { scope?: string; scopeId?: string }): void {
  if (flags.scope === undefined || flags.scope === "worker") {
    if (flags.scopeId !== undefined)
      throw new RosterError("--scope-id names a channel or a user: the worker scope has none", {
        exitCode: 2,
      });
    return;
  }
  if (flags.scope === "channel" || flags.scope === "user")
    throw new RosterError(
      `--scope ${flags.scope}: this roster keeps one memory per worker (~/store/memory/memory.jsonl), not one per ${flags.scope}; leave --scope out`,
      { exitCode: 2 },
    );
  throw new RosterError(`--scope ${flags.scope} is not a scope: worker is the one kept here`, {
    exitCode: 2,
  });
}

const clip = (text: string, max = 100) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export async function listMemoryCommand(
  worker: string,
  flags: { scope?: string; scopeId?: string; json?: boolean },
): Promise<void> {
  checkScope(flags);
  const paths = workerPaths(worker);
  const { readMemory } = await import("../../work/memory/read.ts");
  const read = await readMemory(paths, worker);
  if (read.unread) throw new RosterError(read.unread, { exitCode: 1 });
  if (flags.json) {
    out(
      JSON.stringify({
        worker,
        notes: read.notes,
        skipped: read.skipped,
        ...(read.tailOf !== undefined ? { tail_of_bytes: read.tailOf } : {}),
      }),
    );
    return;
  }
  if (!read.notes.length) out(`${worker} has no notes`);
  for (const note of read.notes)
    out(`${note.pinned ? "📌 " : "   "}${note.id}  ${clip(note.text.replaceAll("\n", " "))}`);
  if (read.skipped)
    out(`(${read.skipped} line${read.skipped === 1 ? " is" : "s are"} not a note and skipped)`);
  if (read.tailOf !== undefined)
    out(`(the file is ${read.tailOf} bytes: only its newest part was read)`);
}

export async function showNoteCommand(
  worker: string,
  id: string,
  flags: { json?: boolean },
): Promise<void> {
  const paths = workerPaths(worker);
  const { liveNotes, noteHistory, readMemoryFile } = await import("../../work/memory/edit.ts");
  const { lines } = await readMemoryFile(paths, worker);
  const history = noteHistory(lines, id);
  if (!history.length)
    throw new RosterError(`no note "${id}" in ${worker}'s memory: roster memory ls lists them`, {
      exitCode: 2,
    });
  const live = liveNotes(lines).find((one) => one.note.id === id)?.note;
  if (flags.json) {
    out(JSON.stringify({ worker, id, live: live ?? null, history }));
    return;
  }
  out(live ? `${id}${live.pinned ? " (pinned)" : ""}: ${live.text}` : `${id}: forgotten`);
  out("");
  for (const entry of history) {
    const who = entry.by ? ` by ${entry.by}` : " by the worker";
    const when = entry.at ? ` at ${entry.at}` : "";
    out(
      entry.kind === "forget"
        ? `- forgotten${who}${when}`
        : `- ${entry.pinned ? "pinned: " : ""}${clip(entry.text ?? "", 200)}${who}${when}`,
    );
  }
}

const DONE: Record<MemoryChange["op"], string> = {
  correct: "corrected",
  rm: "forgotten",
  pin: "pinned",
  unpin: "unpinned",
  disable: "disabled",
  enable: "enabled",
};

export async function changeNoteCommand(
  worker: string,
  id: string,
  change: MemoryChange,
  flags: { json?: boolean },
): Promise<void> {
  const paths = workerPaths(worker);
  const { changeNote } = await import("../../work/memory/edit.ts");
  const line = await changeNote(paths, worker, id, change, operatorName());
  if (flags.json) out(line);
  else out(`${worker}'s note ${id}: ${DONE[change.op]} (a line naming you was appended)`);
}

export async function compactMemoryCommand(worker: string, flags: { json?: boolean }) {
  const paths = workerPaths(worker);
  const { BEFORE_COMPACT, compactMemory } = await import("../../work/memory/edit.ts");
  const done = await compactMemory(paths, worker);
  if (flags.json) {
    out(JSON.stringify({ worker, ...done, before_compact: `~/store/${BEFORE_COMPACT}` }));
    return;
  }
  out(
    `${worker}'s memory: ${done.before} lines → ${done.kept} (${done.bytesBefore} → ${done.bytesAfter} bytes); the file as it was is ~/store/${BEFORE_COMPACT}`,
  );
}

/** `roster runs recall <run>`: the notes the run's prompt carried, as the model saw them. */
export async function recallCommand(prefix: string, flags: { json?: boolean }): Promise<void> {
  const { findRun } = await import("../../records/run-records/run-record.ts");
  const { promptBlocks } = await import("../../work/runs/prompt-context.ts");
  const { recallOf } = await import("../../work/memory/recall.ts");
  const paths = rosterPaths();
  const found = findRun(paths.state, prefix);
  if ("error" in found) throw new RosterError(found.error, { exitCode: 2 });
  const blocks = promptBlocks(found.dir);
  if (!blocks)
    throw new RosterError(
      `run ${found.id} kept no prompt (a command in a box, or a run that never started)`,
      {
        exitCode: 2,
      },
    );
  const recall = recallOf(blocks);
  if (flags.json) {
    out(JSON.stringify({ run: found.id, worker: found.worker, ...recall }));
    return;
  }
  if (recall.kind === "none") {
    out(`run ${found.id}: its prompt carried no memory ([memory] max_notes = 0, or no room)`);
    return;
  }
  if (recall.kind === "session") {
    out(
      `run ${found.id} is a session: its notes headed its first turn, which is not kept; roster memory ls ${found.worker} shows them as they are now`,
    );
    return;
  }
  out(
    `run ${found.id} (${found.worker}) was shown ${recall.notes.length} note${recall.notes.length === 1 ? "" : "s"}:`,
  );
  for (const note of recall.notes)
    out(`${note.pinned ? "📌 " : "   "}${note.id}  ${clip(note.text.replaceAll("\n", " "))}`);
  for (const status of recall.status) out(status);
}
