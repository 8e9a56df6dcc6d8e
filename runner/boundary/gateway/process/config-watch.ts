import { shortDigest } from "../../../ground/config/config-digest.ts";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { errorMessage } from "../../../ground/errors.ts";
import { keepConfig, type TakenBy } from "../../../records/config-history/history.ts";
import type { ConfigSource } from "../settings/config-source.ts";

/**
 * What a running gateway does about its config beyond judging by it: says a
 * config it can't use, each one it takes and each one it refuses (the
 * operator's log: the server's stderr), checks for a change with no request
 * to prompt it, and keeps every config it takes in the config history.
 */

/**
 * Keeps every config this gateway takes in the config history, once by its
 * digest, so the digest each audit line names can be read back. A history
 * that can't be written is said, never a reason to stop judging.
 */
export function keepTaken(
  config: ConfigSource,
  options: { paths: RosterPaths; takenBy?: TakenBy | undefined },
  note: (text: string) => void,
): void {
  config.onTaken((taken) => {
    try {
      keepConfig(options.paths.data, taken, options.takenBy ?? "gateway");
    } catch (error) {
      note(
        `config ${shortDigest(taken.digest)} could not be kept in the history: ${errorMessage(error)}`,
      );
    }
  });
}

export const noteToStderr = (text: string) => process.stderr.write(`roster: gateway: ${text}\n`);

/** How often the config is checked for a change with no request to prompt it. */
const CONFIG_WATCH_MS = 2_000;

/**
 * Says a config that can't be used at start, and each one refused later (the
 * last good one staying live), naming every problem; and checks for a change
 * every CONFIG_WATCH_MS, so a refusal is said when it is made, not at the
 * next request.
 */
export function watchConfig(config: ConfigSource, note: (text: string) => void): () => void {
  const unusable = config.brokenReason();
  if (unusable) note(`config ${shortDigest(config.digest)} can't be used: ${unusable}`);
  let started = false;
  config.onTaken((taken) => {
    // the first is the one it started with, said above when it can't be used
    if (!started) {
      started = true;
      return;
    }
    const reason = config.brokenReason(taken.config);
    note(
      `config ${shortDigest(taken.digest)} taken${reason ? `, but can't be used: ${reason}` : ""}`,
    );
  });
  config.onRefused((refusal, live) =>
    note(
      `config ${shortDigest(refusal.digest)} refused, the door keeps judging by config ${shortDigest(live)}:\n${refusal.problems.map((problem) => `  ${problem}`).join("\n")}${refusal.more ? `\n  (and ${refusal.more} more)` : ""}`,
    ),
  );
  const timer = setInterval(() => config.get(), CONFIG_WATCH_MS);
  timer.unref();
  return () => clearInterval(timer);
}
