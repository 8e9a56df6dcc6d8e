/**
 * A chat bot's connection binds its worker: `[channels] <platform> =
 * "<credential>"` in that worker's worker.toml, so the server's listener
 * serves the bot for it. Added as one line (a hand-written file keeps its
 * comments), and tried with the rest of the add by the real loader, which
 * refuses a bot bound to two workers. Made only when exactly one worker is
 * granted and it binds no other bot on that platform; otherwise the file is
 * left as it is and the reason said.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "smol-toml";
import type { RosterPaths } from "../../ground/config/paths.ts";
import type { FileChange } from "../../ground/config/trial.ts";

export interface BotBinding {
  /** The worker.toml with the binding line, when one is added. */
  change?: FileChange;
  /** What became of the binding, in one line. */
  said: string;
}

export function botBinding(
  paths: RosterPaths,
  credential: string,
  platform: string,
  workers: string[],
): BotBinding {
  const line = `${platform} = "${credential}"`;
  const [worker] = workers;
  if (workers.length !== 1 || worker === undefined)
    return {
      said: `no worker was bound: a ${platform} bot serves one worker; add [channels] ${line} to its worker.toml`,
    };
  const file = join(paths.config, "workers", worker, "worker.toml");
  const text = readFileSync(file, "utf8");
  const channels = channelsOf(text);
  const current = channels?.[platform];
  if (current === credential)
    return { said: `${worker} already listens on ${platform} as "${credential}"` };
  if (current !== undefined)
    return {
      said: `${worker} already listens on ${platform} as "${String(current)}": its [channels] is left as it is`,
    };
  const header = /^\[channels\][ \t]*(#.*)?$/m.exec(text);
  let next: string;
  if (header) {
    const at = header.index + header[0].length;
    next = `${text.slice(0, at)}\n${line}${text.slice(at)}`;
  } else if (channels === undefined) {
    next = `${text.replace(/\n*$/, "\n")}\n[channels]\n${line}\n`;
  } else {
    // an inline table or dotted keys: not a line to add safely
    return { said: `${file} writes [channels] another way: add ${line} to it by hand` };
  }
  return {
    change: { file, text: next },
    said: `${worker} listens on ${platform} as "${credential}" (${line} under [channels] in ${file})`,
  };
}

/** The file's `[channels]` table as parsed; undefined when it has none or does not parse (the loader says why). */
function channelsOf(text: string): Record<string, unknown> | undefined {
  try {
    const channels = parse(text).channels;
    return typeof channels === "object" && channels !== null && !Array.isArray(channels)
      ? (channels as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
