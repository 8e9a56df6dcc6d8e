import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { replaceFileSync } from "../../../ground/files/atomic-replace.ts";
import type { ExecutionContext, Executor } from "../../executor.ts";
import { diffAgainst } from "./file-diff.ts";

/**
 * identity: a new identity.md for the worker (who it is, how it works). It
 * always waits for a human, whatever the trust rules say (trust.ts), and the
 * desk shows it as a diff of the current one.
 */
const Payload = Type.Object(
  { identity: Type.String({ minLength: 1, maxLength: 64 * 1024 }) },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

const identityFile = (context: Pick<ExecutionContext, "paths" | "worker">) =>
  join(context.paths.config, "workers", context.worker, "identity.md");

export const identity: Executor<Payload> = {
  schema: Payload,
  summary: (payload) => `new identity.md (${payload.identity.split("\n").length} lines)`,
  render: (payload, context) =>
    context
      ? diffAgainst(identityFile(context), "identity.md", payload.identity)
      : payload.identity,
  async run(payload, context) {
    const file = identityFile(context);
    mkdirSync(dirname(file), { recursive: true });
    replaceFileSync(file, payload.identity, { mode: 0o644 });
    return { status: "ok", path: `workers/${context.worker}/identity.md` };
  },
};
