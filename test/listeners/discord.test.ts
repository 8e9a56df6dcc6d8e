import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askHealth } from "../../runner/boundary/gateway/process/health.ts";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import {
  type ListenerStatus,
  readListenerStatuses,
} from "../../runner/services/listeners/supervisor.ts";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import {
  bindElf,
  chatWorker,
  lazyServer,
  messageOf,
  pendingGate,
  until,
} from "../support/chat-turns.ts";
import { DiscordStandIn } from "../support/discord-stand-in.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

const TOKEN = "discord-listener-test-token";
const GUILD = "810000000000000001";
const ROOM = "820000000000000001";
const LOBBY = "820000000000000002";
const ANA = { id: "830000000000000001", username: "ana" };
const ROOM_ID = `discord-${GUILD}-${ROOM}`;

describe.skipIf(!docker)("the Discord listener under roster server", () => {
  let model: ModelServer;
  let discord: DiscordStandIn;
  let deployment: RosterRoot;

  const listener = (worker = "elf"): ListenerStatus | undefined =>
    readListenerStatuses(deployment.paths).find((status) => status.worker === worker);
  const server = lazyServer(() => deployment);
  const startServer = () => server.start();
  const stopServer = () => server.stop();
  /** Texts of the turns the model was asked, in order. */
  const turns = () =>
    model.requests
      .filter((r) => r.body.messages?.at(-1)?.role !== "tool")
      .map((r) => messageOf(r)?.text);
  const history = (channel: string) =>
    readFileSync(join(deployment.paths.data, "channels", channel, "messages.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { content: string; role: string });
  const post = (channel: string, content: string) =>
    discord.post({
      channel_id: channel,
      guild_id: GUILD,
      author: ANA,
      content: `<@${discord.botUserId}> ${content}`,
      mentions: [discord.botUserId],
    });

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    model.play(...Array.from({ length: 80 }, () => chatWorker("discord_send")));
    discord = await DiscordStandIn.start({
      token: TOKEN,
      channels: [ROOM, LOBBY],
      users: [ANA.id],
      heartbeatInterval: 1_000,
    });
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "LISTENER-KEY",
      extraOrg: '[[action]]\nname = "discord-send"\nexecutor = "discord"\n',
    });
    await bindElf(deployment, {
      discord: {
        token: TOKEN,
        api_base: discord.apiBase,
      },
    });
    // bob's bot has no credential at all; eve's has one Discord refuses
    for (const [name, bot] of [
      ["bob", "nobot"],
      ["eve", "badbot"],
    ] as const) {
      await mkdir(join(deployment.paths.config, "workers", name), { recursive: true });
      await writeFile(
        join(deployment.paths.config, "workers", name, "worker.toml"),
        `name = "${name}"\n\n[channels]\ndiscord = "${bot}"\n`,
      );
    }
    await storeCredential(deployment.paths.vault, "badbot", {
      token: "revoked",
      api_base: discord.apiBase,
    });
    const trusted = await deployment.roster(["channel", "trust", ROOM_ID]);
    expect(trusted.code, trusted.stderr).toBe(0);
    await startServer();
  });
  afterAll(async () => {
    await stopServer();
    await discord?.stop();
    await model?.stop();
    await deployment?.cleanup();
  });

  it("a message in a trusted channel is one turn, and the governed reply goes out at once", async () => {
    post(ROOM, "send: Hello Ana");
    const sent = await until(
      () => discord.messages.find((m) => m.content === "Hello Ana"),
      "the reply in the room",
    );
    expect(sent.channel_id).toBe(ROOM);
    expect(discord.typing.some((t) => t.channel_id === ROOM)).toBe(true);
    // the executor keeps what it sent in the channel's history once Discord has it
    const kept = await until(
      () => (history(ROOM_ID).length >= 2 ? history(ROOM_ID) : undefined),
      "the reply in the history",
    );
    expect(kept.map((m) => [m.role, m.content])).toEqual([
      ["user", `<@${discord.botUserId}> send: Hello Ana`],
      ["worker", "Hello Ana"],
    ]);
    const [session] = listRuns(deployment.paths.state, "elf").map((r) => readRecord(r.dir));
    expect(session).toMatchObject({ kind: "session", channel_id: ROOM_ID, state: "running" });
  });

  it("a turn that answers in plain text, sending nothing, is said in the server's log as not delivered", async () => {
    post(ROOM, "just thinking aloud");
    const said = await until(
      () =>
        /elf in (\S+): the turn ended in plain text and no send action, so nobody saw it \(not delivered\): "noted: .*just thinking aloud"/.exec(
          server.log(),
        ) ?? undefined,
      "the server to say the reply was not delivered",
    );
    expect(said[1]).toBe(ROOM_ID);
    expect(discord.messages.some((m) => m.content.includes("just thinking aloud"))).toBe(false);
  });

  it("a burst of three messages becomes three ordered turns in the same box", async () => {
    const before = turns().length;
    post(ROOM, "one");
    post(ROOM, "two");
    post(ROOM, "three");
    await until(() => turns().length >= before + 3, "three turns");
    expect(turns().slice(before)).toEqual([
      `<@${discord.botUserId}> one`,
      `<@${discord.botUserId}> two`,
      `<@${discord.botUserId}> three`,
    ]);
    const sessions = listRuns(deployment.paths.state, "elf").filter(
      (r) => readRecord(r.dir)?.channel_id === ROOM_ID,
    );
    expect(sessions).toHaveLength(1);
  });

  it("in an untrusted channel the reply waits as a gate and goes out once approved", async () => {
    post(LOBBY, "send: Welcome to the lobby");
    const gate = await pendingGate(deployment, "discord-send");
    expect(discord.messages.filter((m) => m.channel_id === LOBBY)).toHaveLength(0);
    const approved = await deployment.roster(["approvals", "approve", gate.id]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(discord.messages.filter((m) => m.channel_id === LOBBY).map((m) => m.content)).toEqual([
      "Welcome to the lobby",
    ]);
  });

  it("messages sent while the connection is down are handled once each, in order, after it returns", async () => {
    const before = turns().length;
    discord.refuseGateway(true);
    discord.dropConnections();
    await until(() => listener()?.state === "reconnecting", "the listener to notice");
    post(ROOM, "four");
    post(ROOM, "five");
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    discord.refuseGateway(false);
    await until(() => turns().length >= before + 2, "the missed messages");
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(turns().slice(before)).toEqual([
      `<@${discord.botUserId}> four`,
      `<@${discord.botUserId}> five`,
    ]);
    const kept = history(ROOM_ID).map((m) => m.content);
    expect(kept.filter((c) => c.endsWith(" four"))).toHaveLength(1);
    expect(kept.filter((c) => c.endsWith(" five"))).toHaveLength(1);
  });

  it("the same after a server restart: caught up from the cursor, once each, in order", async () => {
    await stopServer();
    // SIGTERM ended the live session cleanly: its record is finished, its box gone
    const sessions = listRuns(deployment.paths.state, "elf").map((r) => readRecord(r.dir));
    expect(sessions.length).toBeGreaterThan(0);
    for (const record of sessions) expect(record?.state).not.toBe("running");
    expect(sessions.some((r) => r?.ended_by === "idle" && r.state === "done")).toBe(true);
    const before = turns().length;
    post(ROOM, "six");
    post(ROOM, "seven");
    await startServer();
    await until(() => turns().length >= before + 2, "the messages posted while stopped");
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(turns().slice(before)).toEqual([
      `<@${discord.botUserId}> six`,
      `<@${discord.botUserId}> seven`,
    ]);
  });

  it("an attachment is saved in the channel's files/ and named to the worker by path", async () => {
    const before = model.requests.length;
    discord.post({
      channel_id: ROOM,
      guild_id: GUILD,
      author: ANA,
      content: `<@${discord.botUserId}> see the notes`,
      mentions: [discord.botUserId],
      attachments: [{ filename: "notes v2.txt", bytes: Buffer.from("line one\nline two\n") }],
    });
    await until(() => model.requests.length > before, "the turn");
    const asked = model.requests[before];
    const said = asked ? messageOf(asked) : undefined;
    const path = /~\/channel\/files\/(\S+)/.exec(said?.text ?? "")?.[1];
    expect(said?.text).toContain("see the notes");
    expect(path).toMatch(/notes_v2\.txt$/);
    const saved = readFileSync(
      join(deployment.paths.data, "channels", ROOM_ID, "files", path ?? "missing"),
      "utf8",
    );
    expect(saved).toBe("line one\nline two\n");
  });

  it("a 429 on the send is waited out and the message goes out once", async () => {
    const typed = discord.typing.length;
    post(ROOM, "slow send: after the limit");
    // the turn has started (typing shown); the send comes after the model's pause
    await until(() => discord.typing.length > typed, "the typing indicator");
    discord.rateLimitNext(1);
    await until(
      () => discord.messages.some((m) => m.content === "after the limit"),
      "the rate-limited reply",
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(discord.messages.filter((m) => m.content === "after the limit")).toHaveLength(1);
    // asked twice: answered 429 once, then accepted
    const attempts = discord.requests.filter(
      (r) => r.method === "POST" && r.body.content === "after the limit",
    );
    expect(attempts).toHaveLength(2);
  });

  it("a missing or refused bot token shows as unauthorised, naming the credential; the rest keeps running", async () => {
    const bob = await until(
      () => (listener("bob")?.state === "unauthorised" ? listener("bob") : undefined),
      `bob's binding to be marked: ${JSON.stringify(readListenerStatuses(deployment.paths))}`,
    );
    expect(bob.detail).toContain('no credential "nobot" in the vault');
    const eve = await until(
      () => (listener("eve")?.state === "unauthorised" ? listener("eve") : undefined),
      "eve's binding to be marked",
    );
    expect(eve.detail).toContain('the discord bot "badbot" was refused');
    expect(listener()?.state).toBe("connected");
    const ls = await deployment.roster(["channel", "ls"]);
    expect(ls.stdout).toContain('elf on discord (bot "discord"): connected since');
    expect(ls.stdout).toMatch(
      /bob on discord \(bot "nobot"\): unauthorised since .*no credential "nobot"/,
    );
    const status = await deployment.roster(["server", "status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/eve\/discord \(bot "badbot"\): unauthorised/);
  });

  it("garbage from Discord or a killed listener: it comes back, and the gateway never stops answering", async () => {
    const port = deployment.gatewayPort;
    discord.sendGarbage();
    discord.sendUnknownOp();
    const before = listener();
    expect(before?.pid).toBeDefined();
    process.kill(before?.pid ?? 0, "SIGKILL");
    const crashed = await until(
      () => (listener()?.state === "crashed" ? listener() : undefined),
      "the supervisor to notice",
    );
    expect(crashed.detail).toMatch(/signal SIGKILL; restarting in/);
    expect(await askHealth(port, 2_000)).toBeDefined();
    const back = await until(
      () =>
        listener()?.state === "connected" && listener()?.pid !== before?.pid
          ? listener()
          : undefined,
      "the listener to come back",
    );
    expect(back.restarts).toBeGreaterThanOrEqual(1);
    expect(await askHealth(port, 2_000)).toBeDefined();
    const status = await deployment.roster(["server", "status", "--json"]);
    const listeners = JSON.parse(status.stdout).listeners as ListenerStatus[];
    expect(listeners.find((l) => l.worker === "elf")).toMatchObject({ state: "connected" });
    post(ROOM, "send: still here");
    await until(
      () => discord.messages.some((m) => m.content === "still here"),
      "a reply after the restart",
    );
  });
});
