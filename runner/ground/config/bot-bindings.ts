import { botPlatforms } from "./chat-schema.ts";
import type { ConfigError } from "./config-error.ts";
import type { WorkerConfig } from "./config-schema.ts";
import { locateLine } from "./locate.ts";

/**
 * `[channels]` in a worker.toml binds a chat bot (a vault credential) to
 * that worker. A bot is one identity in the chat: two workers answering as
 * the same bot would each see the other's turns as their own, so a
 * credential may be bound once across all workers; the second binding is an
 * error naming the first.
 */
/** A platform a bot can be bound on: a key of `[channels]` (chat-schema.ts botPlatforms). */
export type Platform = string;
export { botPlatforms };

export interface BotBinding {
  worker: string;
  platform: Platform;
  credential: string;
}

export class BotBindings {
  private readonly owners = new Map<string, string>();

  claim(
    worker: string,
    channels: WorkerConfig["channels"],
    display: string,
    text: string,
  ): ConfigError[] {
    const errors: ConfigError[] = [];
    for (const platform of botPlatforms()) {
      const credential = channels?.[platform];
      if (!credential) continue;
      const key = `${platform}:${credential}`;
      const owner = this.owners.get(key);
      if (owner) {
        errors.push({
          file: display,
          line: locateLine(text, `/channels/${platform}`),
          field: `channels.${platform}`,
          message: `the ${platform} bot "${credential}" is already bound to worker "${owner}"; one bot serves one worker`,
        });
        continue;
      }
      this.owners.set(key, worker);
    }
    return errors;
  }
}

/** Every bot binding of a loaded config, in worker order. */
export function botBindings(
  workers: ReadonlyMap<string, Pick<WorkerConfig, "channels">>,
): BotBinding[] {
  return [...workers].flatMap(([worker, config]) =>
    botPlatforms().flatMap((platform) => {
      const credential = config.channels?.[platform];
      return credential ? [{ worker, platform, credential }] : [];
    }),
  );
}
