import { type Static, Type } from "@sinclair/typebox";
import { readRecord, runDir } from "../../../records/run-records/run-record.ts";
import { projectConfigChanges } from "../../../work/repos/project-config-change.ts";
import { checkAndHold, land, PushRefused, type PushRequest } from "../../../work/repos/push.ts";
import { renderPush } from "../../../work/repos/render.ts";
import { readRunContext } from "../../../work/runs/run-context.ts";
import type { ExecutionContext, Executor } from "../../executor.ts";

/**
 * repo: a run's commits landed on a gated repo's branch (repo_push). The
 * payload names the repo and the head the box bundled; the run comes from the
 * caller's token. Everything is checked when proposed (so a refusal reaches
 * the model at once, and a gate only ever holds a push that could land) and
 * again, against the branch as it is then, when it lands.
 */
const Payload = Type.Object(
  {
    repo: Type.String({ pattern: "^[a-z0-9_-]{1,64}$", description: "the connection's name" }),
    head: Type.String({ pattern: "^[0-9a-f]{40}$" }),
    message: Type.Optional(Type.String({ maxLength: 4000 })),
    confirm_bulk_delete: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

function pushRequest(payload: Payload, context: Omit<ExecutionContext, "key">): PushRequest {
  const dir = context.runId
    ? runDir(context.paths.state, context.worker, context.runId)
    : undefined;
  return {
    paths: context.paths,
    worker: context.worker,
    runId: context.runId,
    repo: payload.repo,
    head: payload.head,
    confirmBulkDelete: payload.confirm_bulk_delete ?? false,
    runDir: dir,
    cloneMode: dir ? readRecord(dir)?.repos?.[payload.repo]?.mode : undefined,
    readRunContext,
  };
}

export const repoPush: Executor<Payload> = {
  schema: Payload,
  summary: (payload) =>
    `push of ${payload.head.slice(0, 12)} to ${payload.repo}${payload.message ? `: ${payload.message.split("\n")[0]?.slice(0, 80)}` : ""}`,
  render: (payload, context) =>
    context
      ? renderPush({
          paths: context.paths,
          worker: context.worker,
          runId: context.runId,
          repo: payload.repo,
          head: payload.head,
          message: payload.message,
        })
      : `push of ${payload.head} to ${payload.repo}`,
  async mustGate(payload, context) {
    if (payload.confirm_bulk_delete) return "a bulk delete always waits for a human";
    const changed = await projectConfigChanges(
      context.paths,
      context.worker,
      payload.repo,
      payload.head,
    );
    return changed.length
      ? `it changes ${changed.slice(0, 3).join(", ")}${changed.length > 3 ? ` and ${changed.length - 3} more` : ""}: what the project's workers install, which always waits for a human`
      : undefined;
  },
  async precheck(payload, context) {
    try {
      await checkAndHold(pushRequest(payload, context));
      return undefined;
    } catch (error) {
      if (error instanceof PushRefused) return error.message;
      throw error;
    }
  },
  async run(payload, context) {
    return land(pushRequest(payload, context));
  },
};
