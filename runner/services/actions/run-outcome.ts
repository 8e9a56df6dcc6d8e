import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import type { ActionResponse } from "../../boundary/gateway/exchange/action-host.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { appendJournal } from "../../records/journal/journal.ts";
import { runDir } from "../../records/run-records/run-record.ts";
import { firstProblem } from "./schema-problem.ts";

/** What a task run says of its own task: completed or failed, and a note a person reads. */
const Outcome = Type.Object(
  {
    status: Type.Union([Type.Literal("completed"), Type.Literal("failed")]),
    note: Type.String({ maxLength: 8000 }),
  },
  { additionalProperties: false },
);

const reply = (status: number, body: Record<string, unknown>): ActionResponse => ({ status, body });

/** A task run's own verdict on its task (task_complete / task_fail), kept beside its record. */
export async function reportOutcome(
  paths: RosterPaths,
  body: Buffer,
  worker: string,
  runId: string,
): Promise<ActionResponse> {
  if (!runId) return reply(403, { status: "denied", reason: "only a run may report its outcome" });
  let outcome: Static<typeof Outcome>;
  try {
    outcome = JSON.parse(body.toString("utf8")) as Static<typeof Outcome>;
  } catch {
    return reply(400, { status: "error", error: "bad outcome: not JSON" });
  }
  const problem = firstProblem(Outcome, outcome, "");
  if (problem) return reply(400, { status: "error", error: `bad outcome: ${problem}` });
  const dir = runDir(paths.state, worker, runId);
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, "outcome.json"),
    `${JSON.stringify({ ...outcome, ts: new Date().toISOString() })}\n`,
  );
  appendJournal(paths, {
    worker,
    run_id: runId,
    kind: "outcome-reported",
    summary: outcome.status,
    detail: outcome.note,
  });
  return reply(200, { status: "done" });
}
