import { COMMANDS } from "../../slash-catalogue/catalogue.ts";
import { allows } from "../authority.ts";
import type { CommandContext } from "../context.ts";
import { usageOf } from "../invocation.ts";

/** `/help`: every command part, and for each whether the asker may run it. */
export function helpAnswer(context: CommandContext): string {
  const lines: string[] = [];
  for (const command of COMMANDS)
    for (const sub of command.subs) {
      const usage = usageOf(command, sub);
      const may = allows(context.judged.standing, sub.authority) ? "" : "  (not for you)";
      lines.push(`${usage.padEnd(44)} ${sub.description}${may}`);
    }
  return lines.join("\n");
}
