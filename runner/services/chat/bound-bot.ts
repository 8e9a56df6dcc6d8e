import type { Platform } from "../../ground/config/bot-bindings.ts";
import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { homeOf } from "../../records/channels/links.ts";
import { appendMessage } from "../../records/channels/store.ts";

/**
 * Chat sends speak as the worker's own bot (worker.toml `[channels]`) when
 * it has one, else as the deployment's default bot (the vault credential
 * named after the platform). What was sent into a roster channel is also
 * kept in that channel's history (a linked surface's: its group's home's),
 * as the worker's message.
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
  // a linked surface's conversation is kept in its group's home
  let home = channel;
  try {
    home = homeOf(paths, channel);
  } catch {
    // links that can't be read link nothing
  }
  appendMessage(paths, home, {
    ts: new Date().toISOString(),
    author_id: `worker:${worker}`,
    author: worker,
    role: "worker",
    content: text,
    attachments: [],
    ...(home !== channel ? { surface: channel } : {}),
  });
}
