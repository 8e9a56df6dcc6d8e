import { existsSync, readFileSync } from "node:fs";
import { createTwoFilesPatch } from "diff";

/** What an edit would change, as a unified diff against the file as it is now (the desk shows this). */
export function diffAgainst(file: string, label: string, next: string): string {
  const current = existsSync(file) ? readFileSync(file, "utf8") : "";
  if (current === next) return `(no change to ${label})`;
  return createTwoFilesPatch(`${label} (now)`, `${label} (proposed)`, current, next, "", "", {
    context: 3,
  });
}
