/**
 * Shared by the chat listener tests: how a scripted worker reads the message
 * block of its turn and answers it, and a polling wait. The worker itself is
 * the scripted model (model-server.ts); nothing here stands in for roster.
 */
import type { ChildProcess } from "node:child_process";
import { appendFile } from "node:fs/promises";
import { join } from "node:path";
import { readListenerStatuses } from "../../runner/services/listeners/supervisor.ts";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { type RecordedRequest, type Turn, textOf } from "./model-server.ts";
import type { RosterRoot } from "./roster-root.ts";
import { endOfLog, stopProcess } from "./stop-process.ts";

/** The message block of a turn's input (the last user message), parsed. */
export function messageOf(request: RecordedRequest): { channel: string; text: string } | undefined {
  const input = textOf(
    [...(request.body.messages ?? [])].reverse().find((m) => m.role === "user")?.content,
  );
  for (const line of input.split("\n")) {
    try {
      const block = JSON.parse(line) as { block?: string; channel?: string; text?: string };
      if (block.block === "message")
        return { channel: block.channel ?? "", text: block.text ?? "" };
    } catch {
      // not a block line
    }
  }
  return undefined;
}

/**
 * A scripted worker: "send: X" makes it propose `tool` with X into the channel
 * it was written in ("slow send:" pauses first, so a test can arrange
 * something before the send); "ask: X" proposes message_user with X (gated
 * by default); anything else gets a plain answer nobody sees.
 */
export function chatWorker(tool: string): (request: RecordedRequest) => Turn {
  return (request) => {
    if (request.body.messages?.at(-1)?.role === "tool") return { text: "ok" };
    const message = messageOf(request);
    const ask = /ask: (.*)$/.exec(message?.text ?? "")?.[1];
    if (ask)
      return {
        toolCalls: [
          { name: "message_user", arguments: { text: ask, rationale: "the room asked" } },
        ],
      };
    const send = /send: (.*)$/.exec(message?.text ?? "")?.[1];
    if (send && message)
      return {
        toolCalls: [{ name: tool, arguments: { channel_id: message.channel, text: send } }],
        ...(message.text.includes("slow send:") ? { delayMs: 2_000 } : {}),
      };
    return { text: `noted: ${message?.text ?? "?"}` };
  };
}

/** The first truthy answer of `probe`, polled; fails naming what it waited for. */
export async function until<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * `roster server start` for a listener test: started, and waited on until
 * elf's listener is connected; stopped with SIGTERM. A server that exits
 * first, or never connects, or does not stop, fails the test with the end of
 * its log (ROSTER_TEST_LOG=1 shows all of it as it comes).
 */
export function serverFor(deployment: RosterRoot): {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** What the server has written to its stderr (its notes) so far. */
  log(): string;
} {
  let server: ChildProcess | undefined;
  let ended: string | undefined;
  let log = "";
  const logTail = () => endOfLog(log);
  const elf = () =>
    readListenerStatuses(deployment.paths).find((status) => status.worker === "elf");
  return {
    async start() {
      const child = deployment.spawnRoster(["server", "start"]);
      child.stderr.on("data", (chunk: Buffer) => {
        log += chunk.toString("utf8");
        if (process.env.ROSTER_TEST_LOG) process.stderr.write(chunk);
      });
      ended = undefined;
      child.once("exit", (code, signal) => {
        ended = signal ? `signal ${signal}` : `exit code ${code}`;
      });
      server = child;
      try {
        await until(() => {
          if (ended) throw new Error(`the server ended (${ended}) before elf's listener connected`);
          return elf()?.state === "connected" && elf()?.pid;
        }, "the listener to connect");
      } catch (error) {
        throw new Error(`${error instanceof Error ? error.message : String(error)}${logTail()}`);
      }
    },
    async stop() {
      const child = server;
      server = undefined;
      await stopProcess(child, { detail: logTail });
    },
    log: () => log,
  };
}

/** serverFor, for a deployment made later (in beforeAll). */
export function lazyServer(deployment: () => RosterRoot): ReturnType<typeof serverFor> {
  let made: ReturnType<typeof serverFor> | undefined;
  const get = () => {
    made ??= serverFor(deployment());
    return made;
  };
  return { start: () => get().start(), stop: () => get().stop(), log: () => get().log() };
}

/** A gate as `roster approvals ls --json` lists it. */
export interface ListedGate {
  id: string;
  intent: string;
  state: string;
  decided_by?: string;
}

/** The gates the desk lists now (`--all` for decided ones too). */
export async function listedGates(deployment: RosterRoot, all = false): Promise<ListedGate[]> {
  const ls = await deployment.roster(["approvals", "ls", ...(all ? ["--all"] : []), "--json"]);
  return ls.stdout
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as ListedGate);
}

/** Waits until the desk holds a pending gate of this intent. */
export function pendingGate(deployment: RosterRoot, intent: string): Promise<ListedGate> {
  return until(
    async () =>
      (await listedGates(deployment)).find((g) => g.intent === intent && g.state === "pending"),
    `a pending ${intent} gate`,
  );
}

/**
 * Binds elf to chat bots: a `[channels]` line for each platform, named after
 * it (after `before`, more of elf's worker.toml), and each bot's credential
 * in the vault under that name, as `roster login` keeps it.
 */
export async function bindElf(
  deployment: RosterRoot,
  bots: Partial<Record<"discord" | "slack", Record<string, string>>>,
  before = "",
): Promise<void> {
  const lines = Object.keys(bots).map((platform) => `${platform} = "${platform}"`);
  await appendFile(
    join(deployment.paths.config, "workers/elf/worker.toml"),
    `\n${before}[channels]\n${lines.join("\n")}\n`,
  );
  for (const [platform, credential] of Object.entries(bots))
    await storeCredential(deployment.paths.vault, platform, credential);
}
