import type { Platform } from "../../ground/config/bot-bindings.ts";
import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { appendMessage } from "../../records/channels/store.ts";

/**
 * Chat sends speak as the worker's own bot (worker.toml `[channels]`) when
 * it has one, else as the deployment's default bot (the vault credential
 * named after the platform). What was sent into a roster channel is also
 * kept in that channel's history, as the worker's message.
 */
export function boundBot(paths: RosterPaths, worker: string, platform: Platform): string {
  const config = loadConfig(paths.config, { vaultDir: paths.vault });
  return config.workers.get(worker)?.channels?.[platform] ?? platform;
}

export function recordSent(
  paths: RosterPaths,
  channel: string,
  worker: string,
  text: string,
): void {
  appendMessage(paths, channel, {
    ts: new Date().toISOString(),
    author_id: `worker:${worker}`,
    author: worker,
    role: "worker",
    content: text,
    attachments: [],
  });
}
