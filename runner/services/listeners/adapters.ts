import type { Platform } from "../../ground/config/bot-bindings.ts";
import type { AdapterFactory } from "./child.ts";
import { DiscordListener } from "./discord.ts";
import { SlackListener } from "./slack.ts";

/** One adapter per chat platform; the rest of the listener is shared. */
export const ADAPTERS: Record<Platform, AdapterFactory> = {
  discord: (host, credential) => new DiscordListener(host, credential),
  slack: (host, credential) => new SlackListener(host, credential),
};
