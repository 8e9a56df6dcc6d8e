import type { RosterPaths } from "../../../ground/config/paths.ts";
import { errorMessage, RosterError } from "../../../ground/errors.ts";
import type { ActionHandler, ActionRequest, ActionResponse } from "../exchange/action-host.ts";
import { createProxyServers } from "../exchange/server.ts";
import type { BudgetRefusal } from "../spend/budget.ts";
import type { BudgetQuestion } from "../spend/shared-budgets.ts";
import { watchConfig } from "./config-watch.ts";
import { serverDeps } from "./deps.ts";
import { openRunDoors } from "./run-door-proxy.ts";
import { Link } from "./shard-link.ts";

/**
 * A gateway shard: `roster gateway start --shard`, a child of the gateway
 * (shards.ts). It serves whole runs: the parent hands it a run's door to
 * open, and every connection at that door is judged, injected, relayed and
 * audited here, on this process's own core. What runs share is not kept
 * here: a budget check or charge is a question to the parent, which holds the
 * one set of counters, and a request for the action host is the parent's to
 * answer. The config is read from the same files (the parent says its
 * refusals and keeps its history); each audit line is one O_APPEND write to
 * the same log, and a run's lines stay in order because one shard writes them.
 * Revoking a token removes its file, which every shard checks per request.
 */
export interface ShardStart {
  /** The gateway's own roots, whatever the environment names: a shard serves its parent's deployment. */
  paths: RosterPaths;
  /** The gateway's own door folder: run doors are named after it. */
  ownerDir: string;
  /** How many shards share the held-body bound. */
  of: number;
  /** Whether the parent's action host holds MCP calls for the desk. */
  holds: boolean;
}

export type ShardReady = { type: "ready"; pid: number } | { type: "failed"; error: string };

export async function serveShard(start: ShardStart): Promise<void> {
  const { paths } = start;
  if (!process.send) {
    throw new RosterError("--shard is the gateway's own: it needs the IPC channel of its parent", {
      exitCode: 2,
    });
  }
  // the parent stops this by closing the channel; a signal to the group is the parent's to answer
  process.on("SIGINT", () => undefined);
  process.on("SIGTERM", () => undefined);
  const handlers: Record<string, (payload: unknown) => unknown> = {};
  const link = new Link(process, handlers);
  try {
    const deps = await serverDeps(
      {
        paths,
        // never called: a shard's action host is its parent's
        actions: () => remoteActions(link, start.holds),
      },
      {
        budgets: {
          ask: (question: BudgetQuestion) =>
            link.ask<BudgetRefusal | undefined>("budget", question),
          tell: (spend) => link.tell("spend", spend),
        },
        actions: remoteActions(link, start.holds),
        of: start.of,
      },
    );
    const unwatch = watchConfig(deps.config, () => undefined);
    const proxy = createProxyServers(deps);
    const doors = openRunDoors(deps, proxy.outer, start.ownerDir, paths.identity);
    handlers.open = (runId) => doors.open(String(runId));
    handlers.close = (runId) => doors.close(String(runId));
    handlers.connections = (runId) => doors.connections(String(runId));
    handlers.metrics = () => deps.metrics?.series() ?? [];
    const stopped = new Promise<boolean>((resolve) => {
      handlers.stop = (removeFolders) => {
        resolve(removeFolders === true);
        return true;
      };
      process.once("disconnect", () => resolve(false));
    });
    process.send({ type: "ready", pid: process.pid } satisfies ShardReady);
    deps.ca.warm();
    deps.upstreams.warm();
    const removeFolders = await stopped;
    setTimeout(() => process.exit(0), 5_000).unref();
    unwatch();
    await doors.closeAll(removeFolders);
    proxy.outer.closeAllConnections();
    proxy.inner.closeAllConnections();
    await deps.upstreams.close();
    await deps.audit.close();
  } catch (error) {
    process.exitCode = 1;
    const failed: ShardReady = { type: "failed", error: errorMessage(error) };
    await new Promise<void>((resolve) => process.send?.(failed, undefined, {}, () => resolve()));
  }
  link.close(new Error("the shard has stopped"));
  if (process.connected) process.disconnect();
  process.exit();
}

/** The start a shard is given, from its environment (shards.ts sets it). */
export function shardStartFrom(env: NodeJS.ProcessEnv): ShardStart {
  const raw = env[SHARD_START_ENV];
  const start = raw ? (JSON.parse(raw) as Partial<ShardStart>) : {};
  if (
    typeof start.ownerDir !== "string" ||
    typeof start.of !== "number" ||
    typeof start.paths?.config !== "string"
  ) {
    throw new RosterError(`--shard needs ${SHARD_START_ENV}: the gateway sets it`, { exitCode: 2 });
  }
  return {
    paths: start.paths,
    ownerDir: start.ownerDir,
    of: start.of,
    holds: start.holds === true,
  };
}

export const SHARD_START_ENV = "ROSTER_GATEWAY_SHARD";

/** The action host, asked of the parent: the identity sent is the door's, known here. */
function remoteActions(link: Link, holds: boolean): ActionHandler {
  const handle = (request: ActionRequest) => link.ask<ActionResponse>("action", request);
  if (!holds) return { handle };
  return { handle, holdMcpCall: (call) => link.ask<{ gateId: string }>("hold", call) };
}
