import type { RosterPaths } from "../../ground/config/paths.ts";
import { answerLine } from "./core.ts";

/**
 * What `roster talk` does with a line starting with "/": `/quit` ends the
 * session, everything else is the host's slash-command core (services/slash/),
 * asked as the operator at the terminal. Returns the text to show, or "quit".
 */
export async function terminalCommand(
  paths: RosterPaths,
  worker: string,
  line: string,
  user: string,
  channel: string,
): Promise<string> {
  const [word] = line.trim().split(/\s+/);
  if (word === "/quit" || word === "/exit") return "quit";
  const said = await answerLine({ paths, worker, channel, asker: { user: `term:${user}` } }, line);
  if (said.text.startsWith("unknown command"))
    return `${said.text} (to send a line starting with "/" to the worker, start it with a space)`;
  if (word === "/help")
    return `${said.text}\n${"/quit".padEnd(44)} end the session (as Ctrl-D does)\nAnything else you type goes to the worker.`;
  return said.text;
}
