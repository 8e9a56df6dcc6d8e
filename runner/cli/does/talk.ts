/**
 * What `roster talk` does: a session with a worker at this terminal, turn by
 * turn in one warm box; with no worker named, the workers to pick from, or
 * on a deployment with none, the first one (elf) made and talked to. The CLI
 * only declares the command; this module is loaded when it runs.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type RosterPaths, rosterPaths } from "../../ground/config/paths.ts";

/** The worker elf is made as: the one `roster init` makes. */
const FIRST_WORKER = "elf";

export async function talkCommand(
  worker: string | undefined,
  flags: { idle?: number },
): Promise<void> {
  const paths = rosterPaths();
  const name = worker ?? (await pickWorker(paths));
  if (name === undefined) return;
  const [{ talk }, { terminalCommand }, { turnThroughServer }] = await Promise.all([
    import("../../services/chat/terminal/talk.ts"),
    import("../../services/slash/terminal.ts"),
    import("../../services/server/run-client.ts"),
  ]);
  process.exitCode = await talk({
    paths,
    worker: name,
    // the host answers what starts with "/": the worker never sees it
    command: (line, user, channel) => terminalCommand(paths, name, line, user, channel),
    // a linked terminal's lines go to the running server's one session for the group
    handTurn: (turn, io) => turnThroughServer(paths, turn, io),
    idleSecs: flags.idle,
    input: process.stdin,
    output: process.stdout,
    notes: process.stderr,
  });
}

/**
 * No worker named: the workers there are, printed with how to talk to one
 * (undefined: nothing more to do); none at all, the first conversation is
 * set up as `roster init` would (its roots and elf), said on stderr.
 */
async function pickWorker(paths: RosterPaths): Promise<string | undefined> {
  const { configuredWorkers } = await import("../../services/workers/list.ts");
  const workers = configuredWorkers(paths);
  if (workers.length) {
    process.stdout.write(
      `workers:\n${workers.map((name) => `  ${name}`).join("\n")}\ntalk to one: roster talk <worker>   (roster talk --help)\n`,
    );
    return undefined;
  }
  if (!existsSync(join(paths.config, "org.toml"))) {
    const { initRoots } = await import("./init.ts");
    await initRoots(paths);
    process.stderr.write(
      `roster: no deployment yet: made one at ${paths.config} with a worker named "${FIRST_WORKER}"\n`,
    );
  } else {
    const { addWorker } = await import("../../services/workers/add.ts");
    await addWorker(paths, FIRST_WORKER);
    process.stderr.write(`roster: no workers yet: added one named "${FIRST_WORKER}"\n`);
  }
  return FIRST_WORKER;
}
