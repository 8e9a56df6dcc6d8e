import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askHealth } from "../../runner/boundary/gateway/process/health.ts";
import {
  type ListenerStatus,
  readListenerStatuses,
} from "../../runner/services/listeners/supervisor.ts";
import {
  bindElf,
  chatWorker,
  lazyServer,
  messageOf,
  pendingGate,
  until,
} from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { SlackStandIn } from "../support/slack-stand-in.ts";

const docker = await testDocker();

const BOT_TOKEN = "xoxb-listener-test";
const APP_TOKEN = "xapp-listener-test";
const ROOM = "C0ROOM01";
const LOBBY = "C0LOBBY2";
const ANA = "U0ANA001";
const ROOM_ID = `slack-t0roster-${ROOM.toLowerCase()}`;

describe.skipIf(!docker)("the Slack listener under roster server", () => {
  let model: ModelServer;
  let slack: SlackStandIn;
  let deployment: RosterRoot;

  const listener = (): ListenerStatus | undefined =>
    readListenerStatuses(deployment.paths).find((status) => status.worker === "elf");
  const server = lazyServer(() => deployment);
  const startServer = () => server.start();
  const stopServer = () => server.stop();
  const turns = () =>
    model.requests
      .filter((r) => r.body.messages?.at(-1)?.role !== "tool")
      .map((r) => messageOf(r)?.text);
  const mention = (text: string) => `<@${slack.botUserId}> ${text}`;
  const post = (channel: string, text: string) =>
    slack.post({ channel, user: ANA, text: mention(text) });
  const sent = (channel: string) => slack.messages.filter((m) => m.channel === channel);

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    model.play(...Array.from({ length: 60 }, () => chatWorker("slack_send")));
    slack = await SlackStandIn.start({
      botToken: BOT_TOKEN,
      appToken: APP_TOKEN,
      channels: [ROOM, LOBBY],
      users: [ANA],
    });
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "SLACK-LISTENER-KEY",
      extraOrg: '[[action]]\nname = "slack-send"\nexecutor = "slack"\n',
    });
    await bindElf(deployment, {
      slack: {
        bot_token: BOT_TOKEN,
        app_token: APP_TOKEN,
        api_base: slack.apiBase,
      },
    });
    const trusted = await deployment.roster(["channel", "trust", ROOM_ID]);
    expect(trusted.code, trusted.stderr).toBe(0);
    await startServer();
  });
  afterAll(async () => {
    await stopServer();
    await slack?.stop();
    await model?.stop();
    await deployment?.cleanup();
  });

  it("a mention in a trusted channel is one turn; the governed reply goes out, the message wears a working reaction meanwhile", async () => {
    post(ROOM, "send: Hello Ana");
    await until(() => sent(ROOM).find((m) => m.text === "Hello Ana"), "the reply");
    const reactions = slack.requests.filter((r) => r.path.includes("reactions."));
    expect(reactions.map((r) => r.path.replace(/^.*\//, ""))).toEqual(
      expect.arrayContaining(["reactions.add"]),
    );
    const history = await until(() => {
      const lines = readFileSync(
        join(deployment.paths.data, "channels", ROOM_ID, "messages.jsonl"),
        "utf8",
      )
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { role: string; content: string });
      return lines.length >= 2 ? lines : undefined;
    }, "the history");
    expect(history.map((m) => [m.role, m.content])).toEqual([
      ["user", mention("send: Hello Ana")],
      ["worker", "Hello Ana"],
    ]);
  });

  it("a burst of three is three ordered turns; Slack's redeliveries and the bot's own echoes are not turns", async () => {
    const before = turns().length;
    post(ROOM, "one");
    post(ROOM, "two");
    post(ROOM, "three");
    await until(() => turns().length >= before + 3, "three turns");
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(turns().slice(before)).toEqual([mention("one"), mention("two"), mention("three")]);
  });

  it("in an untrusted channel the reply waits as a gate and goes out once approved", async () => {
    post(LOBBY, "send: Welcome to the lobby");
    const gate = await pendingGate(deployment, "slack-send");
    expect(gate).toBeDefined();
    expect(sent(LOBBY)).toHaveLength(0);
    const approved = await deployment.roster(["approvals", "approve", gate.id]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(sent(LOBBY).map((m) => m.text)).toEqual(["Welcome to the lobby"]);
  });

  it("messages posted while the link is down are caught up once each, in order", async () => {
    const before = turns().length;
    slack.refuseConnections(true);
    slack.dropConnections();
    await until(() => listener()?.state === "reconnecting", "the listener to notice");
    post(ROOM, "four");
    post(ROOM, "five");
    slack.refuseConnections(false);
    await until(() => turns().length >= before + 2, "the missed messages", 90_000);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(turns().slice(before)).toEqual([mention("four"), mention("five")]);
  });

  it("the same after a server restart", async () => {
    await stopServer();
    const before = turns().length;
    post(ROOM, "six");
    post(ROOM, "seven");
    await startServer();
    await until(() => turns().length >= before + 2, "the messages posted while stopped");
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(turns().slice(before)).toEqual([mention("six"), mention("seven")]);
  });

  it("a 429 on the send is waited out and the message goes out once", async () => {
    const asked = slack.requests.length;
    post(ROOM, "slow send: after the limit");
    // the turn is under way (the working reaction went on); the send follows the model's pause
    await until(
      () => slack.requests.slice(asked).some((r) => r.path.endsWith("reactions.add")),
      "the turn to start",
    );
    slack.rateLimitNext(1);
    await until(() => sent(ROOM).some((m) => m.text === "after the limit"), "the reply");
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(sent(ROOM).filter((m) => m.text === "after the limit")).toHaveLength(1);
  });

  it("garbage on the link or a killed listener: it comes back, and the gateway keeps answering", async () => {
    slack.sendGarbage("{not json");
    const before = listener();
    process.kill(before?.pid ?? 0, "SIGKILL");
    await until(() => listener()?.state === "crashed", "the supervisor to notice");
    expect(await askHealth(deployment.gatewayPort, 2_000)).toBeDefined();
    await until(
      () => listener()?.state === "connected" && listener()?.pid !== before?.pid,
      "the listener to come back",
    );
    post(ROOM, "send: still here");
    await until(() => sent(ROOM).some((m) => m.text === "still here"), "a reply after the restart");
  });
});
