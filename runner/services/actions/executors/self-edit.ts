import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { parse } from "smol-toml";
import { formatConfigError } from "../../../ground/config/config-error.ts";
import { loadConfig } from "../../../ground/config/load.ts";
import { replaceFileSync } from "../../../ground/files/atomic-replace.ts";
import type { ExecutionContext, Executor } from "../../executor.ts";
import { diffAgainst } from "./file-diff.ts";

/**
 * self: a worker's proposed edit of its own worker.toml (file_update). Only
 * that one file; the edit names the sha256 of the bytes it was based on, so an
 * edit of a file that changed since is refused, never merged. After writing,
 * the whole config is loaded again; if the edit broke it — or widened anything
 * org.toml grants, which the loader reports as an error — the old bytes are
 * put back and the edit fails with the loader's words. An edit of its
 * `[toolchain]` always waits for a human, whatever trust says.
 */
const Payload = Type.Object(
  {
    path: Type.Literal("config/worker.toml", {
      description: "the only file a worker may propose to edit, as seen under ~/self",
    }),
    base_hash: Type.String({ pattern: "^[0-9a-f]{64}$" }),
    content: Type.String({ maxLength: 64 * 1024 }),
  },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

export const sha256 = (text: string | Buffer) => createHash("sha256").update(text).digest("hex");

function workerToml(context: Pick<ExecutionContext, "paths" | "worker">): string {
  return join(context.paths.config, "workers", context.worker, "worker.toml");
}

function staleness(
  payload: Payload,
  context: Pick<ExecutionContext, "paths" | "worker">,
): string | undefined {
  const current = sha256(readFileSync(workerToml(context)));
  return current === payload.base_hash
    ? undefined
    : `payload.base_hash: worker.toml changed since (its sha256 is now ${current}); read it again and propose against that`;
}

/** The `[toolchain]` a worker.toml's text declares, as JSON, or why it can't be read. */
function toolchainOf(text: string): string {
  try {
    return JSON.stringify((parse(text) as { toolchain?: unknown }).toolchain ?? null);
  } catch {
    return "(unreadable)";
  }
}

export const selfEdit: Executor<Payload> = {
  schema: Payload,
  summary: (payload) =>
    `edit of its own ${payload.path} (${payload.content.split("\n").length} lines)`,
  render: (payload, context) =>
    context ? diffAgainst(workerToml(context), "worker.toml", payload.content) : payload.content,
  precheck: staleness,
  // what its image installs is built with the network: a worker never widens it unseen
  mustGate: (payload, context) =>
    toolchainOf(readFileSync(workerToml(context), "utf8")) === toolchainOf(payload.content)
      ? undefined
      : "it changes [toolchain], what the worker's image installs, which always waits for a human",
  async run(payload, context) {
    const file = workerToml(context);
    const before = readFileSync(file);
    const stale = staleness(payload, context);
    if (stale) throw new Error(stale);
    if (before.toString("utf8") === payload.content)
      return { status: "unchanged", sha256: sha256(before) };
    replaceFileSync(file, payload.content, { mode: 0o644 });
    const config = loadConfig(context.paths.config, { vaultDir: context.paths.vault });
    if (config.errors.length) {
      replaceFileSync(file, before, { mode: 0o644 });
      throw new Error(
        `the edit was put back: it would break the config: ${config.errors.slice(0, 3).map(formatConfigError).join("; ")}`,
      );
    }
    return { status: "ok", sha256: sha256(payload.content) };
  },
};
