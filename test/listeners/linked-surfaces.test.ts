import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import { termChannelId } from "../../runner/services/chat/terminal/ids.ts";
import { talkUser } from "../../runner/services/chat/terminal/talk.ts";
import { readListenerStatuses } from "../../runner/services/listeners/supervisor.ts";
import {
  bindElf,
  chatWorker,
  lazyServer,
  messageOf,
  pendingGate,
  until,
} from "../support/chat-turns.ts";
import { ROSTER_BIN } from "../support/cli.ts";
import { DiscordStandIn } from "../support/discord-stand-in.ts";
import { testDocker } from "../support/docker.ts";
import type { RecordedRequest } from "../support/model-server.ts";
import { ModelServer } from "../support/model-server.ts";
import { spawnInPty } from "../support/pty.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { SlackStandIn } from "../support/slack-stand-in.ts";

/**
 * Linked surfaces: Ana's Discord DM and her Slack DM made one conversation
 * with `roster channel link`. One session, one history (the first
 * surface's), and the worker answers on the surface she last wrote from;
 * `unlink` splits them again.
 */
const docker = await testDocker();

const ANA_DISCORD = { id: "830000000000000031", username: "ana" };
const ANA_SLACK = "U0ANA031";
const DISCORD_DM_ID = `discord-dm-${ANA_DISCORD.id}`;
const SLACK_DM = `D${ANA_SLACK.slice(1)}`;
const SLACK_DM_ID = `slack-t0roster-dm-${ANA_SLACK.toLowerCase()}`;
const GUILD = "810000000000000031";
const ROOM = "820000000000000031";
const ROOM_ID = `discord-${GUILD}-${ROOM}`;

/** The scripted worker answers with the send action of the surface the message came from. */
const linkedWorker = (request: RecordedRequest) => {
  const channel = messageOf(request)?.channel ?? "";
  const tool = channel.startsWith("slack-")
    ? "slack_send"
    : channel.startsWith("term-")
      ? "term_send"
      : "discord_send";
  return chatWorker(tool)(request);
};

describe.skipIf(!docker)("linked surfaces", () => {
  let model: ModelServer;
  let discord: DiscordStandIn;
  let slack: SlackStandIn;
  let deployment: RosterRoot;
  const server = lazyServer(() => deployment);

  const sessions = () =>
    listRuns(deployment.paths.state, "elf")
      .map((run) => readRecord(run.dir))
      .filter((record) => record?.kind === "session");
  const history = (channel: string) =>
    readFileSync(join(deployment.paths.data, "channels", channel, "messages.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { role: string; content: string; surface?: string });
  /** The history once it holds this many messages (a send is kept just after it is posted). */
  const historyOf = (channel: string, count: number) =>
    until(() => {
      const lines = history(channel);
      return lines.length >= count ? lines : undefined;
    }, `${count} messages in ${channel}'s history`);
  const fromDiscord = (text: string) =>
    discord.post({
      channel_id: discord.dmChannelOf(ANA_DISCORD.id),
      author: ANA_DISCORD,
      content: text,
    });
  const fromSlack = (text: string) => slack.post({ channel: SLACK_DM, user: ANA_SLACK, text });
  const inDiscord = (text: string) =>
    until(
      () => discord.history(discord.dmChannelOf(ANA_DISCORD.id)).find((m) => m.content === text),
      `"${text}" on Discord`,
    );
  /** A bot message to Ana on Slack (posted to her user id, which Slack takes for her DM). */
  const inSlack = (text: string) =>
    until(
      () => slack.messages.find((m) => m.text === text && m.channel === SLACK_DM),
      `"${text}" on Slack`,
    );

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    model.play(...Array.from({ length: 40 }, () => linkedWorker));
    discord = await DiscordStandIn.start({
      token: "linked-discord-token",
      channels: [ROOM],
      users: [ANA_DISCORD.id],
      heartbeatInterval: 1_000,
    });
    slack = await SlackStandIn.start({
      botToken: "xoxb-linked",
      appToken: "xapp-linked",
      channels: [SLACK_DM],
      users: [ANA_SLACK],
    });
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "LINKED-KEY",
      extraOrg:
        // Discord sends only from runs a DM started: the room below is refused
        '[[action]]\nname = "discord-send"\nexecutor = "discord"\nchannels = { surfaces = ["dm"] }\n\n[[action]]\nname = "slack-send"\nexecutor = "slack"\n\n[[action]]\nname = "term-send"\nexecutor = "term"\n',
    });
    await bindElf(deployment, {
      discord: {
        token: "linked-discord-token",
        api_base: discord.apiBase,
      },
      slack: {
        bot_token: "xoxb-linked",
        app_token: "xapp-linked",
        api_base: slack.apiBase,
      },
    });
    expect((await deployment.roster(["channel", "trust", ROOM_ID])).code).toBe(0);
    const linked = await deployment.roster(["channel", "link", DISCORD_DM_ID, SLACK_DM_ID]);
    expect(linked.code, linked.stderr).toBe(0);
    expect(linked.stdout).toContain(`${DISCORD_DM_ID} + ${SLACK_DM_ID} are one conversation`);
    await server.start();
    await until(
      () =>
        readListenerStatuses(deployment.paths).filter((one) => one.state === "connected").length ===
        2,
      "both listeners to connect",
    );
  });
  afterAll(async () => {
    await server.stop();
    await slack?.stop();
    await discord?.stop();
    await model?.stop();
    await deployment?.cleanup();
  });

  it("a room can't be linked: another audience would read the conversation", async () => {
    const refused = await deployment.roster([
      "channel",
      "link",
      DISCORD_DM_ID,
      "slack-t0roster-c0room",
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/slack-t0roster-c0room is not a direct surface/);
  });

  it("one conversation: the reply goes where Ana last wrote, in one session, with one history", async () => {
    fromDiscord("send: hello on discord");
    await inDiscord("hello on discord");
    // the reply is kept once Discord has answered the send: Ana writes again after that, as a person would
    await historyOf(DISCORD_DM_ID, 2);
    fromSlack("send: hello on slack");
    await inSlack("hello on slack");
    // the worker saw the Discord message in the same session: the Slack turn's request carries it
    const slackTurn = model.requests.find((r) => messageOf(r)?.text === "send: hello on slack");
    expect(JSON.stringify(slackTurn?.body.messages)).toContain("send: hello on discord");
    expect(sessions()).toHaveLength(1);
    expect(sessions()[0]?.channel_id).toBe(DISCORD_DM_ID);
    expect((await historyOf(DISCORD_DM_ID, 4)).map((m) => [m.role, m.content, m.surface])).toEqual([
      ["user", "send: hello on discord", undefined],
      ["worker", "hello on discord", undefined],
      ["user", "send: hello on slack", SLACK_DM_ID],
      ["worker", "hello on slack", SLACK_DM_ID],
    ]);
    // nothing reached the Discord DM for the Slack message
    expect(
      discord.history(discord.dmChannelOf(ANA_DISCORD.id)).map((m) => m.content),
    ).not.toContain("hello on slack");
  });

  it("each surface keeps its own trust: untrusted, Slack's reply waits as a gate while Discord's goes out", async () => {
    expect((await deployment.roster(["channel", "untrust", SLACK_DM_ID])).code).toBe(0);
    fromSlack("send: held for approval");
    const gate = await pendingGate(deployment, "slack-send");
    expect(gate).toBeDefined();
    fromDiscord("send: still direct");
    await inDiscord("still direct");
    expect(slack.messages.map((m) => m.text)).not.toContain("held for approval");
    expect(sessions()).toHaveLength(1);
    expect((await deployment.roster(["channel", "trust", SLACK_DM_ID])).code).toBe(0);
  });

  it("unlinked, Slack is its own conversation again: its own session and history", async () => {
    const unlinked = await deployment.roster(["channel", "unlink", SLACK_DM_ID]);
    expect(unlinked.stdout).toContain(`${SLACK_DM_ID} is its own conversation again`);
    fromSlack("send: on my own");
    await inSlack("on my own");
    expect((await historyOf(SLACK_DM_ID, 2)).map((m) => m.content)).toEqual([
      "send: on my own",
      "on my own",
    ]);
    const channels = sessions().map((record) => record?.channel_id);
    expect(channels).toEqual(expect.arrayContaining([DISCORD_DM_ID, SLACK_DM_ID]));
  });

  it("a linked terminal's lines are turns of the same session, held by the server; its replies print there", async () => {
    const term = termChannelId(talkUser(), "elf");
    const linked = await deployment.roster(["channel", "link", DISCORD_DM_ID, term]);
    expect(linked.code, linked.stderr).toBe(0);
    fromDiscord("send: before the terminal");
    await inDiscord("before the terminal");
    const groupSessions = () =>
      sessions()
        .filter((record) => record?.channel_id === DISCORD_DM_ID)
        .map((record) => record?.id);
    const before = groupSessions();
    const pty = spawnInPty([process.execPath, ROSTER_BIN, "talk", "elf"], {
      ROSTER_ROOT: deployment.root,
    });
    await pty.waitFor(/a running server holds the one session/);
    pty.write("send: hello from the terminal\n");
    await pty.waitFor(/elf> hello from the terminal/, 60_000);
    pty.write("\x04");
    expect(await pty.exited).toBe(0);
    // one session served the DM and the terminal; the line is in the group's history
    expect(groupSessions()).toEqual(before);
    expect(
      history(DISCORD_DM_ID)
        .slice(-2)
        .map((m) => [m.role, m.content, m.surface]),
    ).toEqual([
      ["user", "send: hello from the terminal", term],
      ["worker", "hello from the terminal", term],
    ]);
  });

  it("an action limited to DMs is refused to a session a room started, by the run's own origins", async () => {
    discord.post({
      channel_id: ROOM,
      guild_id: GUILD,
      author: ANA_DISCORD,
      content: `<@${discord.botUserId}> send: not from a room`,
      mentions: [discord.botUserId],
    });
    const refused = await until(
      () =>
        readFileSync(join(deployment.paths.audit, "decisions.jsonl"), "utf8")
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .find((line) => line.intent === "discord-send" && line.disposition === "refused"),
      "the refused send",
    );
    expect(refused.reason).toBe(
      `the action grant "discord-send" is only for runs started from surfaces dm; this run started from ${ROOM_ID}`,
    );
    expect(discord.history(ROOM).map((m) => m.content)).not.toContain("not from a room");
  });
  it("a named linked channel: both DMs' histories merge under its name, one session answers each where she wrote", async () => {
    const term = termChannelId(talkUser(), "elf");
    expect((await deployment.roster(["channel", "unlink", term])).code).toBe(0);
    const linked = await deployment.roster(["channel", "link", "ana", DISCORD_DM_ID, SLACK_DM_ID]);
    expect(linked.code, linked.stderr).toBe(0);
    expect(linked.stdout).toContain(`ana is one channel of ${DISCORD_DM_ID} + ${SLACK_DM_ID}`);
    // what each DM said before is in the channel's history, marked with its surface, by send time
    const merged = history("ana");
    expect(merged.some((m) => m.content === "send: on my own" && m.surface === SLACK_DM_ID)).toBe(
      true,
    );
    expect(merged.some((m) => m.content === "send: hello on discord")).toBe(true);
    fromSlack("send: named on slack");
    await inSlack("named on slack");
    // the send is kept in the history just after Slack has it
    await until(
      () => history("ana").find((m) => m.role === "worker" && m.content === "named on slack"),
      "the Slack reply in ana's history",
    );
    fromDiscord("send: named on discord");
    await inDiscord("named on discord");
    await until(
      () => history("ana").find((m) => m.role === "worker" && m.content === "named on discord"),
      "the Discord reply in ana's history",
    );
    expect(
      history("ana")
        .slice(-4)
        .map((m) => [m.role, m.content, m.surface]),
    ).toEqual([
      ["user", "send: named on slack", SLACK_DM_ID],
      ["worker", "named on slack", SLACK_DM_ID],
      ["user", "send: named on discord", DISCORD_DM_ID],
      ["worker", "named on discord", DISCORD_DM_ID],
    ]);
    expect(sessions().filter((record) => record?.channel_id === "ana")).toHaveLength(1);
    expect(slack.messages.map((m) => m.text)).not.toContain("named on discord");
  });
});
