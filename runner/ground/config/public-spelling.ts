import type { ConfigError } from "./config-error.ts";
import { locateLine } from "./locate.ts";

/**
 * A deployment written for the public roster validates here with the meaning
 * it has there (docs/coming-from-public-roster.md). Where ours spells a thing
 * otherwise, or deliberately means it differently, the public spelling is
 * taken and `roster validate` says so in one line naming the file, the line,
 * the field and our spelling: never a silent difference, never a refusal of
 * what the public roster documents.
 */
export function publicNotice(
  notices: ConfigError[],
  at: { file: string; text: string; pointer: string; field: string },
  message: string,
): void {
  notices.push({
    file: at.file,
    line: locateLine(at.text, at.pointer),
    field: at.field,
    message,
  });
}
