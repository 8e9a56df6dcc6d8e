import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordedClass } from "../../runner/records/channels/surface-class.ts";
import { readListenerStatuses } from "../../runner/services/listeners/supervisor.ts";
import { bindElf, chatWorker, lazyServer, messageOf, until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, textOf } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { SlackStandIn } from "../support/slack-stand-in.ts";

/**
 * An action limited to a class of Slack rooms, `channels = { surfaces =
 * ["public"] }` or `["private"]`: the Slack listener records each room's
 * class from the channel_type Slack puts on its events, and the worker's
 * reply goes out only from a room of the action's class. A private channel
 * has a C id like a public one; only Slack's word tells them apart, and a
 * word missed while the link was down is asked again (conversations.info)
 * before a message caught up from history goes on.
 */
const docker = await testDocker();

const BOT_TOKEN = "xoxb-classes-test";
const APP_TOKEN = "xapp-classes-test";
const HALL = "C0HALL011";
const STAFF = "C0STAFF12";
const ANA = "U0ANA0011";
const HALL_ID = `slack-t0roster-${HALL.toLowerCase()}`;
const STAFF_ID = `slack-t0roster-${STAFF.toLowerCase()}`;

const action = (surfaces: string) =>
  `[[action]]\nname = "slack-send"\nexecutor = "slack"\nchannels = { surfaces = [${surfaces}] }\n`;

describe.skipIf(!docker)("public and private Slack rooms for an action's channels", () => {
  let model: ModelServer;
  let slack: SlackStandIn;
  let deployment: RosterRoot;
  const server = lazyServer(() => deployment);

  const post = (channel: string, text: string) =>
    slack.post({ channel, user: ANA, text: `<@${slack.botUserId}> ${text}` });
  const sent = (channel: string) => slack.messages.filter((m) => m.channel === channel);
  /** What the worker was told when its send came back, for the turn on `text`. */
  const answered = (text: string) =>
    model.requests.find(
      (r) =>
        r.body.messages?.at(-1)?.role === "tool" && messageOf(r)?.text.endsWith(`send: ${text}`),
    );
  const connected = () =>
    until(
      () => readListenerStatuses(deployment.paths).find((one) => one.state === "connected"),
      "the listener to connect",
    );

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    model.play(...Array.from({ length: 20 }, () => chatWorker("slack_send")));
    slack = await SlackStandIn.start({
      botToken: BOT_TOKEN,
      appToken: APP_TOKEN,
      channels: [HALL, STAFF],
      users: [ANA],
    });
    slack.setKind(STAFF, "private");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "SLACK-CLASSES-KEY",
      extraOrg: action('"public"'),
    });
    await bindElf(deployment, {
      slack: { bot_token: BOT_TOKEN, app_token: APP_TOKEN, api_base: slack.apiBase },
    });
    // trusted, so a reply the action admits goes out without waiting at the desk
    for (const room of [HALL_ID, STAFF_ID]) {
      const trusted = await deployment.roster(["channel", "trust", room]);
      expect(trusted.code, trusted.stderr).toBe(0);
    }
  });
  afterAll(async () => {
    await server.stop();
    await slack?.stop();
    await model?.stop();
    await deployment?.cleanup();
  });

  it('under surfaces = ["public"], a reply from a private channel is refused and one from a public channel goes out', async () => {
    await server.start();
    await connected();
    post(STAFF, "send: staff only");
    const refused = await until(
      () => answered("staff only"),
      "the private room's send to come back",
    );
    expect(textOf(refused.body.messages?.at(-1)?.content)).toContain("only for runs started from");
    expect(recordedClass(STAFF_ID, deployment.paths)).toBe("private");
    expect(sent(STAFF)).toEqual([]);
    post(HALL, "send: hello hall");
    await until(() => sent(HALL).find((m) => m.text === "hello hall"), "the public room's reply");
    expect(recordedClass(HALL_ID, deployment.paths)).toBe("public");
  });

  /** Slack's notice of a room's new kind, sent once, on a link open at that moment. */
  const convertLive = async (channel: string, to: "private" | "public") => {
    await until(() => slack.connected > 0, "a Socket Mode link to send the notice on");
    expect(slack.convert(channel, to, ANA).delivered).toBe(true);
  };

  it("a public channel made private is private from Slack's event on", async () => {
    await convertLive(HALL, "private");
    await until(
      () => recordedClass(HALL_ID, deployment.paths) === "private",
      "the conversion to be recorded",
    );
    post(HALL, "send: now private");
    await until(() => answered("now private"), "the converted room's send to come back");
    expect(sent(HALL).map((m) => m.text)).toEqual(["hello hall"]);
  });

  it("a room made private while the link was down is private for the message caught up after it", async () => {
    await convertLive(HALL, "public");
    await until(
      () => recordedClass(HALL_ID, deployment.paths) === "public",
      "the room made public again to be recorded",
    );
    // the link drops while that reading is seconds old; Slack's notice then reaches nobody
    slack.refuseConnections(true);
    slack.dropConnections();
    expect(slack.convert(HALL, "private", ANA).delivered).toBe(false);
    expect(post(HALL, "send: while away").delivered).toBe(false);
    slack.refuseConnections(false);
    const refused = await until(
      () => answered("while away"),
      "the caught-up message's send to come back",
    );
    expect(textOf(refused.body.messages?.at(-1)?.content)).toContain("only for runs started from");
    expect(recordedClass(HALL_ID, deployment.paths)).toBe("private");
    expect(sent(HALL).map((m) => m.text)).toEqual(["hello hall"]);
  });

  it('under surfaces = ["private"], the private channel\'s reply goes out', async () => {
    await server.stop();
    const org = join(deployment.paths.config, "org.toml");
    await writeFile(
      org,
      (await readFile(org, "utf8")).replace(action('"public"'), action('"private"')),
    );
    await server.start();
    await connected();
    post(STAFF, "send: staff again");
    await until(
      () => sent(STAFF).find((m) => m.text === "staff again"),
      "the private room's reply",
    );
  });
});
