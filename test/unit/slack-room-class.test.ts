import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { classAdmits } from "../../runner/records/channels/channel-class.ts";
import { recordClass, recordedClass } from "../../runner/records/channels/surface-class.ts";
import { slackChannelId } from "../../runner/services/chat/slack/ids.ts";
import {
  classOfChannelType,
  classOfConversation,
  SlackRoomClasses,
} from "../../runner/services/chat/slack/room-classes.ts";
import { SlackClients } from "../support/slack-clients.ts";
import { SlackStandIn } from "../support/slack-stand-in.ts";

/**
 * A Slack room is public or private by Slack's own word: the channel_type
 * each message event carries ("channel", "group", "mpim", "im"), else
 * conversations.info's is_private. The listener records it, and a grant's or
 * action's `channels.surfaces = ["public"]` / `["private"]` admits a Slack
 * room only by what is recorded.
 */
const BOT_TOKEN = "xoxb-room-class";
const APP_TOKEN = "xapp-room-class";
const HALL = "C0HALL001";
const STAFF = "C0STAFF02";
const TRIO = "G0TRIO003";
const ANA = "U0ANA0001";
const TEAM = "t0roster";
const room = (channel: string) => slackChannelId({ team: TEAM, channel });

describe("a Slack room's class, from Slack's word", () => {
  it("an event's channel_type: channel is public, group and mpim private, im and the unknown none", () => {
    expect(classOfChannelType("channel")).toBe("public");
    expect(classOfChannelType("group")).toBe("private");
    expect(classOfChannelType("mpim")).toBe("private");
    expect(classOfChannelType("im")).toBeUndefined();
    expect(classOfChannelType("app_home")).toBeUndefined();
    expect(classOfChannelType(undefined)).toBeUndefined();
  });

  it("conversations.info: is_private (or a group DM, or an old group) is private, a plain channel public", () => {
    expect(classOfConversation({ is_channel: true, is_private: false })).toBe("public");
    expect(classOfConversation({ is_channel: true, is_private: true })).toBe("private");
    expect(classOfConversation({ is_mpim: true, is_private: true })).toBe("private");
    expect(classOfConversation({ is_group: true })).toBe("private");
    expect(classOfConversation({ is_im: true })).toBeUndefined();
    // a conversation of no kind roster knows is in no class
    expect(classOfConversation({})).toBeUndefined();
  });
});

describe("the Slack stand-in says a room's kind as Slack does", () => {
  let standIn: SlackStandIn;
  let clients: SlackClients;

  beforeEach(async () => {
    standIn = await SlackStandIn.start({
      botToken: BOT_TOKEN,
      appToken: APP_TOKEN,
      channels: [HALL, STAFF, TRIO],
      users: [ANA],
    });
    clients = new SlackClients(standIn, { bot: BOT_TOKEN, app: APP_TOKEN }, 600);
  });
  afterEach(async () => {
    await clients.disconnect();
    await standIn.stop();
  });

  it("channel_type on each event, is_private in conversations.info, and a conversion's own event", async () => {
    // a private channel made since 2021 has a C id: only Slack's word tells it apart
    standIn.setKind(STAFF, "private");
    standIn.setKind(TRIO, "mpim");
    const { client, events } = clients.socket();
    await client.start();
    standIn.post({ channel: HALL, user: ANA, text: "hall" });
    standIn.post({ channel: STAFF, user: ANA, text: "staff" });
    standIn.post({ channel: TRIO, user: ANA, text: "trio" });
    await standIn.waitFor(() => events.length === 3);
    expect(events.map((e) => [e.event.channel, e.event.channel_type])).toEqual([
      [HALL, "channel"],
      [STAFF, "group"],
      [TRIO, "mpim"],
    ]);
    const web = clients.web();
    const info = async (channel: string) =>
      (await web.conversations.info({ channel })).channel as Record<string, unknown>;
    expect(await info(HALL)).toMatchObject({ id: HALL, is_channel: true, is_private: false });
    expect(await info(STAFF)).toMatchObject({ is_channel: true, is_private: true });
    expect(await info(TRIO)).toMatchObject({ is_mpim: true, is_private: true });
    await expect(web.conversations.info({ channel: "C0NOWHERE" })).rejects.toMatchObject({
      data: { ok: false, error: "channel_not_found" },
    });

    standIn.convert(HALL, "private", ANA);
    await standIn.waitFor(() => events.length === 4);
    expect(events[3]?.event).toMatchObject({
      type: "message",
      subtype: "channel_convert_to_private",
      channel: HALL,
      user: ANA,
      channel_type: "group",
    });
    expect(await info(HALL)).toMatchObject({ is_private: true });
  });
});

describe("the listener's record of a Slack room's class", () => {
  let standIn: SlackStandIn;
  let clients: SlackClients;
  let root: string;
  let paths: RosterPaths;
  const notes: string[] = [];
  const before = process.env.ROSTER_ROOT;
  const infoCalls = () =>
    standIn.requests.filter((r) => r.path === "/api/conversations.info").length;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "roster-slack-classes-"));
    // the deployment whose data the door and the listeners read (ROSTER_ROOT, as a server sets it)
    process.env.ROSTER_ROOT = root;
    paths = rosterPaths();
    standIn = await SlackStandIn.start({
      botToken: BOT_TOKEN,
      appToken: APP_TOKEN,
      channels: [HALL, STAFF, TRIO],
      users: [ANA],
    });
    standIn.setKind(STAFF, "private");
    clients = new SlackClients(standIn, { bot: BOT_TOKEN, app: APP_TOKEN }, 600);
  });
  afterAll(async () => {
    await standIn.stop();
    if (before === undefined) delete process.env.ROSTER_ROOT;
    else process.env.ROSTER_ROOT = before;
    await rm(root, { recursive: true, force: true });
  });

  it("takes the class an event carries, and a grant's public or private admits the room by it", async () => {
    const classes = new SlackRoomClasses(clients.web(), paths, (text) => notes.push(text));
    await classes.heard(room(HALL), "channel");
    await classes.heard(room(STAFF), "group");
    await classes.heard(room("D0ANA0001"), "im");
    expect(recordedClass(room(HALL))).toBe("public");
    expect(recordedClass(room(STAFF))).toBe("private");
    const pub = { surfaces: ["public"] };
    const priv = { surfaces: ["private"] };
    expect(classAdmits(pub, [room(HALL)])).toBe(true);
    expect(classAdmits(pub, [room(STAFF)])).toBe(false);
    expect(classAdmits(priv, [room(STAFF)])).toBe(true);
    // a room never classified is in neither
    expect(classAdmits(pub, [room(TRIO)])).toBe(false);
    expect(classAdmits(priv, [room(TRIO)])).toBe(false);
    expect(infoCalls()).toBe(0);
  });

  it("a message with no channel_type asks conversations.info, at most once a minute a room", async () => {
    const classes = new SlackRoomClasses(clients.web(), paths, (text) => notes.push(text));
    standIn.setKind(TRIO, "mpim");
    await classes.classify(room(TRIO), TRIO, undefined);
    expect(recordedClass(room(TRIO))).toBe("private");
    expect(infoCalls()).toBe(1);
    await classes.classify(room(TRIO), TRIO, undefined);
    expect(infoCalls()).toBe(1);
  });

  it("a channel made private is private from Slack's event on, whatever was read before", async () => {
    const classes = new SlackRoomClasses(clients.web(), paths, (text) => notes.push(text));
    await classes.classify(room(HALL), HALL, undefined);
    expect(recordedClass(room(HALL))).toBe("public");
    // Slack's channel_convert_to_private carries channel_type "group"
    await classes.heard(room(HALL), "group");
    expect(recordedClass(room(HALL))).toBe("private");
    expect(classAdmits({ surfaces: ["public"] }, [room(HALL)])).toBe(false);
    // the fresh reading before it doesn't bring "public" back
    await classes.classify(room(HALL), HALL, undefined);
    expect(recordedClass(room(HALL))).toBe("private");
  });

  it("a room whose class can't be read is forgotten: in no class", async () => {
    const gone = room("C0GONE004");
    await recordClass(paths, gone, "public");
    const classes = new SlackRoomClasses(clients.web(), paths, (text) => notes.push(text));
    await classes.classify(gone, "C0GONE004", undefined);
    expect(recordedClass(gone)).toBeUndefined();
    expect(notes.some((note) => note.includes(gone) && note.includes("could not be read"))).toBe(
      true,
    );
  });
});
