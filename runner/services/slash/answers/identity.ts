import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { CommandContext } from "../context.ts";

const SHOWN_LINES = 20;

/** `/identity`: the first lines of the worker's identity.md, and who the asker is to roster. */
export function identityAnswer(context: CommandContext): string {
  const { paths, worker, asker, judged } = context;
  let identity: string;
  try {
    const lines = readFileSync(join(paths.config, "workers", worker, "identity.md"), "utf8")
      .trimEnd()
      .split("\n");
    identity = [
      ...lines.slice(0, SHOWN_LINES),
      ...(lines.length > SHOWN_LINES ? [`… ${lines.length - SHOWN_LINES} more lines`] : []),
    ].join("\n");
  } catch {
    identity = "(no identity.md)";
  }
  const you =
    judged.standing === "none"
      ? `no standing (${judged.rule})`
      : `${judged.standing} by ${judged.rule}`;
  return [`${worker}:`, identity, "", `you: ${asker.user}, ${you}`].join("\n");
}
