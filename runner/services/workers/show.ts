import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { scopeApplies } from "../../boundary/gateway/judging/judge.ts";
import { workerDir } from "../../boundary/store/snapshots.ts";
import type { LoadedConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerSubject } from "../../ground/config/subject.ts";
import { type WorkerView, workerView } from "../../ground/config/worker-view.ts";
import { type IntentTrust, trustOf } from "../actions/trust-view.ts";

/**
 * `roster worker show <name>`: one worker as the gateway and the runner see
 * it — its settings after narrowing by org.toml (the loader's workerView, the
 * same object a run is started from), the gateway rules that apply to it in
 * the order the judge tries them, its actions and their trust, and its chat
 * channels (the bots bound to it and the channels it has kept a store for).
 */
export interface WorkerDetail {
  name: string;
  view: WorkerView;
  grants: Array<{
    name: string;
    verdict: string;
    scope: string;
    source: string;
    match: unknown;
    injects: string | null;
  }>;
  trust: IntentTrust[];
  channels: {
    bots: Record<string, string>;
    /** Channels it has a store for (it has talked there). */
    stores: string[];
  };
}

export function workerDetail(
  paths: RosterPaths,
  config: LoadedConfig,
  name: string,
): WorkerDetail | undefined {
  // with the worker's own knowledge repo, as a run gets it
  const view = workerView(config, name, { dataRoot: paths.data });
  const worker = config.workers.get(name);
  if (!view || !worker) return undefined;
  const subject = workerSubject(name);
  const storesDir = join(workerDir(paths, name), "channel-stores");
  return {
    name,
    view,
    grants: config.grants
      .filter((grant) => scopeApplies(grant.scope, subject))
      .map((grant) => ({
        name: grant.name,
        verdict: grant.verdict,
        scope: grant.scope,
        source: grant.source,
        match: grant.match ?? {},
        injects: grant.inject?.credential ?? null,
      })),
    trust: trustOf(paths, config, name),
    channels: {
      bots: { ...(worker.channels ?? {}) },
      stores: existsSync(storesDir) ? readdirSync(storesDir).sort() : [],
    },
  };
}

const matchText = (match: unknown) => {
  const entries = Object.entries(match as Record<string, unknown>);
  return entries.length
    ? entries.map(([field, value]) => `${field}=${JSON.stringify(value)}`).join(" ")
    : "anything";
};

export function formatWorkerDetail(detail: WorkerDetail, trustText: string): string {
  const { view } = detail;
  const lines = [
    `worker ${detail.name} (${view.dir})`,
    "",
    "settings, after narrowing by org.toml:",
    `  model      ${view.model ? `${view.model.provider} ${view.model.model}` : "none (no [model] in org.toml)"}`,
    `  box        ${Object.entries(view.box)
      .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
      .join(" ")}`,
    `  context    ${Object.entries(view.context)
      .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
      .join(" ")}`,
    `  memory     ${Object.entries(view.memory)
      .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
      .join(" ")}`,
    `  store      at most ${(view.store.maxBytes / 2 ** 30).toFixed(1)} GiB`,
    `  heartbeat  ${view.heartbeat ? `every ${view.heartbeat.every}` : "off"}`,
    "",
    "connections it is granted:",
    ...(view.connections.length
      ? view.connections.map((c) => `  ${c.name} (${c.kind})`)
      : ["  none"]),
    "",
    "gateway rules that apply to it, in the order they are tried (anything else is denied):",
    ...(detail.grants.length
      ? detail.grants.map(
          (grant) =>
            `  ${grant.verdict.padEnd(6)} ${grant.name}: ${matchText(grant.match)}${grant.injects ? ` (injects ${grant.injects})` : ""}  [${grant.scope}, ${grant.source}]`,
        )
      : ["  none"]),
    "",
    trustText.trimEnd(),
    "",
    "channels:",
    ...(Object.keys(detail.channels.bots).length
      ? Object.entries(detail.channels.bots).map(
          ([platform, credential]) => `  ${platform} bot "${credential}"`,
        )
      : ["  no chat bot bound ([channels] in its worker.toml)"]),
    ...(detail.channels.stores.length
      ? [`  has talked in: ${detail.channels.stores.join(", ")}`]
      : []),
  ];
  return `${lines.join("\n")}\n`;
}
