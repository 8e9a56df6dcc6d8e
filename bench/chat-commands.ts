/**
 * Chat as the admin surface, measured against its peer: a Discord slash
 * command's round trip through a running `roster server` (the interaction
 * dispatched → its answer received by Discord's stand-in) beside a plain chat
 * reply's (a message posted → the worker's reply in the channel, through a
 * warm session and the governed discord_send), both on the same server. Then
 * the Discord listener's RSS with no channel known beside its RSS with 1,000
 * channels known (a cursor each, all read again when it connects).
 * Needs Docker and the box image (the chat reply runs in a session box).
 *   npx tsx bench/chat-commands.ts
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { writeCursor } from "../runner/services/listeners/cursors.ts";
import { readListenerStatuses } from "../runner/services/listeners/supervisor.ts";
import {
  bindElf,
  chatWorker,
  DiscordStandIn,
  ModelServer,
  makeRosterRoot,
  serverFor,
  until,
} from "./harness.ts";
import { median } from "./timing.ts";

const ROUNDS = 15;
const KNOWN_CHANNELS = 1_000;
const GUILD = "810000000000000051";
const ROOM = "820000000000000051";
const ADMIN = { id: "830000000000000051", username: "ana" };
const TOKEN = "bench-chat-commands-token";
const MiB = 1024 * 1024;

/** Resolves as soon as `probe` holds, polling every millisecond (the figures are tens of ms). */
async function soon<T>(probe: () => T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const listenerPid = (paths: Parameters<typeof readListenerStatuses>[0]) =>
  until(() => {
    const status = readListenerStatuses(paths).find((one) => one.worker === "elf");
    return status?.state === "connected" ? status.pid : undefined;
  }, "the listener to connect");

const rssOf = (pid: number) =>
  Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;

const knownRooms = Array.from({ length: KNOWN_CHANNELS }, (_, index) =>
  String(820000000000100000n + BigInt(index)),
);
const model = await new ModelServer().start("127.0.0.1");
model.play(...Array.from({ length: 4 * ROUNDS }, () => chatWorker("discord_send")));
const discord = await DiscordStandIn.start({
  token: TOKEN,
  channels: [ROOM, ...knownRooms],
  users: [ADMIN.id],
  guilds: [GUILD],
  heartbeatInterval: 5_000,
});
const deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
  modelKey: "BENCH-CHAT-KEY",
  extraOrg: `[[action]]\nname = "discord-send"\nexecutor = "discord"\n\n[chat]\nadmins = ["discord:${ADMIN.id}"]\n`,
});
await bindElf(deployment, {
  discord: {
    token: TOKEN,
    api_base: discord.apiBase,
  },
});
const roomId = `discord-${GUILD}-${ROOM}`;
if ((await deployment.roster(["channel", "trust", roomId])).code !== 0)
  throw new Error("the room was not trusted");

// 1. a slash command's round trip beside a chat reply's, on one running server
const server = serverFor(deployment);
await server.start();
const idlePid = await listenerPid(deployment.paths);
await new Promise((resolve) => setTimeout(resolve, 1_000));
const idleRss = rssOf(idlePid);
await until(() => discord.registeredCommands(GUILD).length > 0, "the commands registered");

const chatReply = async (label: string): Promise<number> => {
  const started = performance.now();
  discord.post({
    channel_id: ROOM,
    guild_id: GUILD,
    author: ADMIN,
    content: `<@${discord.botUserId}> send: ${label}`,
    mentions: [discord.botUserId],
  });
  await soon(
    () => discord.history(ROOM).find((message) => message.content === label),
    `the reply "${label}"`,
  );
  return performance.now() - started;
};
const slash = async (): Promise<number> => {
  const started = performance.now();
  const { id } = discord.command({
    name: "runs",
    options: { ls: {} },
    user: ADMIN,
    channel_id: ROOM,
    guild_id: GUILD,
  });
  await soon(
    () => discord.interactionResponses.find((response) => response.interaction_id === id),
    "the command's answer",
  );
  return performance.now() - started;
};

const coldReply = await chatReply("warm-up");
const slashes: number[] = [];
const replies: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  slashes.push(await slash());
  replies.push(await chatReply(`pong ${round}`));
}
await server.stop();

// 2. the listener with 1,000 channels known: each has a cursor, read again on connect
for (const room of knownRooms)
  writeCursor(deployment.paths, "elf", `discord-${GUILD}-${room}`, {
    platform_channel: room,
    last_id: "1",
  });
const before = discord.requests.length;
const caughtUpFrom = performance.now();
await server.start();
const busyPid = await listenerPid(deployment.paths);
await until(
  () =>
    discord.requests
      .slice(before)
      .filter((request) => request.method === "GET" && request.path.endsWith("/messages")).length >=
    KNOWN_CHANNELS,
  "the catch-up of every known channel",
  300_000,
);
const caughtUpMs = performance.now() - caughtUpFrom;
await new Promise((resolve) => setTimeout(resolve, 1_000));
const busyRss = rssOf(busyPid);
await server.stop();
await deployment.cleanup();
await discord.stop();
await model.stop();

const slashMedian = median(slashes);
const replyMedian = median(replies);
process.stdout.write(
  [
    `Discord through a running roster server, medians of ${ROUNDS} alternating rounds (the first chat reply, which opened the session, took ${coldReply.toFixed(0)} ms):`,
    "",
    "| round trip | ms (median) | range | vs a chat reply |",
    "|---|---|---|---|",
    `| slash command /runs ls: interaction dispatched → answer received | ${slashMedian.toFixed(1)} | ${Math.min(...slashes).toFixed(1)}–${Math.max(...slashes).toFixed(1)} | ${(slashMedian / replyMedian).toFixed(2)}x |`,
    `| chat reply in a warm session: message posted → reply in the channel | ${replyMedian.toFixed(1)} | ${Math.min(...replies).toFixed(1)}–${Math.max(...replies).toFixed(1)} | 1.00x |`,
    "",
    "The Discord listener process (one per bound bot):",
    "",
    "| channels known | listener RSS MiB | vs none known | catch-up on connect |",
    "|---|---|---|---|",
    `| 0 | ${(idleRss / MiB).toFixed(1)} | 1.00x | - |`,
    `| ${KNOWN_CHANNELS.toLocaleString("en")} | ${(busyRss / MiB).toFixed(1)} | ${(busyRss / idleRss).toFixed(2)}x | ${(caughtUpMs / 1000).toFixed(1)} s from server start to the last channel read |`,
    "",
  ].join("\n"),
);
