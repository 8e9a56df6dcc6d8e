import { LogLevel } from "@slack/socket-mode";
import { WebClient } from "@slack/web-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { buttonBlocks, postJson, SlackClients } from "../support/slack-clients.ts";
import { SlackStandIn } from "../support/slack-stand-in.ts";

/**
 * The Slack stand-in driven by the real @slack/socket-mode and @slack/web-api
 * clients, so the double is held to the protocol those clients speak.
 */
const BOT_TOKEN = "xoxb-stand-in-bot-token";
const APP_TOKEN = "xapp-1-A0ROSTERAPP-stand-in-app-token";
const GENERAL = "C0GENERAL1";
const OWNER = "U0OWNER42";
const OTHER = "U0OTHER77";
/** The client waits this long before each reconnect and pings three times as often. */
const CLIENT_PING_TIMEOUT = 600;

let standIn: SlackStandIn;
let clients: SlackClients;

beforeEach(async () => {
  standIn = await SlackStandIn.start({
    botToken: BOT_TOKEN,
    appToken: APP_TOKEN,
    channels: [GENERAL],
    users: [OWNER, OTHER],
    // Short, so redelivery and server pings happen within a test.
    ackTimeoutMs: 250,
    pingIntervalMs: 200,
  });
  clients = new SlackClients(standIn, { bot: BOT_TOKEN, app: APP_TOKEN }, CLIENT_PING_TIMEOUT);
});

afterEach(async () => {
  await clients.disconnect();
  await standIn.stop();
});

const webClient = (token?: string): WebClient => clients.web(token);
/** A Socket Mode client as roster's listener will build it, recording (and acking) what it gets. */
const socketClient: SlackClients["socket"] = (options) => clients.socket(options);

describe("Socket Mode", () => {
  it("opens a link with the app token and greets the real client with hello", async () => {
    const { client } = socketClient();
    const opened: unknown = await client.start();

    expect(opened).toMatchObject({ ok: true, url: expect.stringMatching(/\/link\/\?ticket=/) });
    expect(standIn.opens).toBe(1);
    expect(standIn.connections).toBe(1);
    expect(standIn.connected).toBe(1);
    const open = standIn.requests.find((r) => r.path === "/api/apps.connections.open");
    expect(open?.headers.authorization).toBe(`Bearer ${APP_TOKEN}`);
    // Both sides ping: the client's pings are ponged, and it pongs the server's.
    await standIn.waitFor(() => standIn.socket.clientPings > 0 && standIn.socket.clientPongs > 0);
    expect(standIn.connections).toBe(1);
  });

  it("sends hello with Slack's fields and takes each ticket once", async () => {
    const opened = await webClient(APP_TOKEN).apps.connections.open();
    const url = opened.url ?? "";
    expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/link\/\?ticket=[\w-]+&app_id=A0ROSTERAPP$/);
    const ws = new WebSocket(url);
    const hello = await new Promise<unknown>((resolve, reject) => {
      ws.once("message", (data) => resolve(JSON.parse(String(data))));
      ws.once("error", reject);
    });
    expect(hello).toMatchObject({
      type: "hello",
      num_connections: 1,
      debug_info: { host: expect.any(String) },
      connection_info: { app_id: standIn.appId },
    });
    ws.terminate();

    const again = new WebSocket(url);
    // The refused handshake also surfaces as an error event; the status is what matters here.
    again.on("error", () => undefined);
    const status = await new Promise<number | undefined>((resolve) => {
      again.once("unexpected-response", (_req, res) => resolve(res.statusCode));
      again.once("open", () => resolve(undefined));
    });
    expect(status).toBe(401);
  });

  it("delivers a user's message as a message event and records the ack", async () => {
    const { client, events } = socketClient();
    await client.start();

    const { ts, delivered } = standIn.post({ channel: GENERAL, user: OWNER, text: "hello roster" });
    expect(delivered).toBe(true);
    const [first] = await standIn.waitFor(() => events.length === 1 && events);
    expect(first?.event).toMatchObject({
      type: "message",
      channel: GENERAL,
      user: OWNER,
      text: "hello roster",
      ts,
      event_ts: ts,
      channel_type: "channel",
    });
    expect(first?.body).toMatchObject({
      type: "event_callback",
      api_app_id: standIn.appId,
      team_id: standIn.teamId,
      event_id: expect.stringMatching(/^Ev/),
    });
    expect(first?.retry_num).toBe(0);
    await standIn.waitFor(() => standIn.unacked === 0);
    expect(standIn.socket.acks).toEqual([
      { envelope_id: first?.envelope_id, payload: {}, settled: true },
    ]);
    expect(standIn.deliveries).toBe(1);
  });

  it("adds app_mention for a mention, marks DMs im, and sends the app's own posts back", async () => {
    const { client, events } = socketClient();
    await client.start();

    standIn.post({ channel: GENERAL, user: OWNER, text: `<@${standIn.botUserId}> status?` });
    await standIn.waitFor(() => events.length === 2);
    expect(events.map((e) => e.event.type).sort()).toEqual(["app_mention", "message"]);

    standIn.post({ channel: "D0OWNER42", user: OWNER, text: "in private" });
    await standIn.waitFor(() => events.length === 3);
    expect(events[2]?.event).toMatchObject({ channel: "D0OWNER42", channel_type: "im" });

    await webClient().chat.postMessage({ channel: GENERAL, text: "from the bot" });
    await standIn.waitFor(() => events.length === 4);
    expect(events[3]?.event).toMatchObject({
      type: "message",
      text: "from the bot",
      user: standIn.botUserId,
      bot_id: standIn.botId,
    });
    await standIn.waitFor(() => standIn.unacked === 0);
  });

  it("serves a posted file to the bot token and redirects anyone else to sign-in", async () => {
    const { client, events } = socketClient();
    await client.start();
    const bytes = Buffer.from("quarterly numbers\n");

    standIn.post({
      channel: GENERAL,
      user: OWNER,
      text: "see attached",
      files: [{ name: "report.txt", bytes }],
    });
    const [first] = await standIn.waitFor(() => events.length === 1 && events);
    expect(first?.event.subtype).toBe("file_share");
    const files = first?.event.files as { url_private_download: string; size: number }[];
    const url = files[0]?.url_private_download ?? "";
    expect(files[0]).toMatchObject({ name: "report.txt", mimetype: "text/plain", size: 18 });

    const authorized = await fetch(url, { headers: { authorization: `Bearer ${BOT_TOKEN}` } });
    expect(authorized.status).toBe(200);
    expect(Buffer.from(await authorized.arrayBuffer())).toEqual(bytes);
    const anonymous = await fetch(url);
    expect(anonymous.status).toBe(200);
    expect(anonymous.headers.get("content-type")).toMatch(/^text\/html/);
    expect(standIn.downloads).toEqual([
      { id: expect.stringMatching(/^F/), authorized: true },
      { id: expect.stringMatching(/^F/), authorized: false },
    ]);
  });

  it("redelivers an unacked envelope with retry_attempt and reason timeout", async () => {
    const { client, events } = socketClient({ ackWhen: (args) => args.retry_num > 0 });
    await client.start();

    standIn.post({ channel: GENERAL, user: OWNER, text: "ack me later" });
    await standIn.waitFor(() => events.length === 2);
    await standIn.waitFor(() => standIn.unacked === 0);
    const [first, retry] = events;
    expect(retry?.retry_num).toBe(1);
    expect(retry?.retry_reason).toBe("timeout");
    expect(retry?.body.event_id).toBe(first?.body.event_id);
    expect(retry?.envelope_id).not.toBe(first?.envelope_id);
    expect(standIn.deliveries).toBe(2);
  });

  it("reconnects after a dropped link and after refresh_requested, ignoring garbage", async () => {
    const { client, events } = socketClient();
    await client.start();

    standIn.dropConnections();
    await standIn.waitFor(() => standIn.connections === 2 && standIn.connected === 1);
    standIn.sendDisconnect("refresh_requested");
    await standIn.waitFor(() => standIn.connections === 3 && standIn.connected === 1);
    expect(standIn.opens).toBe(3);

    standIn.sendGarbage("this is not json");
    standIn.post({ channel: GENERAL, user: OWNER, text: "still there?" });
    await standIn.waitFor(() => events.length === 1);
    expect(standIn.connections).toBe(3);
  });

  it("holds a client off while refusing; what was posted meanwhile is only in history", async () => {
    const { client, events } = socketClient();
    await client.start();

    standIn.refuseConnections(true);
    standIn.dropConnections();
    await standIn.waitFor(() => standIn.socket.refusedUpgrades >= 1);
    const missed = standIn.post({ channel: GENERAL, user: OWNER, text: "while away" });
    expect(missed.delivered).toBe(false);
    standIn.refuseConnections(false);
    await standIn.waitFor(() => standIn.connected === 1);

    standIn.post({ channel: GENERAL, user: OWNER, text: "back again" });
    await standIn.waitFor(() => events.length === 1);
    expect(events.map((e) => e.event.text)).toEqual(["back again"]);
    const history = await webClient().conversations.history({ channel: GENERAL });
    expect(history.messages?.map((m) => m.text)).toEqual(["back again", "while away"]);
  });

  it("stops the client for good on a wrong app token", async () => {
    const { client } = socketClient({ appToken: "xapp-1-A0ROSTERAPP-wrong" });
    await expect(client.start()).rejects.toMatchObject({ data: { error: "invalid_auth" } });
    expect(standIn.opens).toBe(1);
    expect(standIn.connections).toBe(0);
  });

  it("answers a bot token not_allowed_token_type, which the client keeps retrying", async () => {
    const { client } = socketClient({ appToken: BOT_TOKEN });
    // Never settles: the client counts only a few auth errors as final and retries the rest.
    void client.start().catch(() => undefined);
    await standIn.waitFor(() => standIn.opens >= 2);
    expect(standIn.connections).toBe(0);
    const answered = await webClient(BOT_TOKEN)
      .apps.connections.open()
      .catch((error: unknown) => error);
    expect(answered).toMatchObject({ data: { error: "not_allowed_token_type" } });
  });
});

describe("Web API", () => {
  it("answers auth.test for the bot and refuses the app token there", async () => {
    const auth = await webClient().auth.test();
    expect(auth).toMatchObject({
      ok: true,
      user_id: standIn.botUserId,
      bot_id: standIn.botId,
      team_id: standIn.teamId,
      user: "roster-bot",
    });
    await expect(webClient(APP_TOKEN).auth.test()).rejects.toMatchObject({
      data: { error: "not_allowed_token_type" },
    });
  });

  it("pages conversations.history newest first with Slack's oldest and cursor rules", async () => {
    const web = webClient();
    const first = standIn.post({ channel: GENERAL, user: OWNER, text: "one" });
    const posted = await web.chat.postMessage({ channel: GENERAL, text: "two" });
    standIn.post({ channel: GENERAL, user: OTHER, text: "three" });
    standIn.post({ channel: GENERAL, user: OWNER, text: "four" });
    await web.chat.postMessage({ channel: GENERAL, text: "five" });

    const page1 = await web.conversations.history({ channel: GENERAL, limit: 2 });
    expect(page1.messages?.map((m) => m.text)).toEqual(["five", "four"]);
    expect(page1.messages?.[0]).toMatchObject({ user: standIn.botUserId, bot_id: standIn.botId });
    expect(page1.has_more).toBe(true);
    const cursor = page1.response_metadata?.next_cursor ?? "";
    expect(cursor).not.toBe("");
    const page2 = await web.conversations.history({ channel: GENERAL, limit: 2, cursor });
    expect(page2.messages?.map((m) => m.text)).toEqual(["three", "two"]);
    const page3 = await web.conversations.history({
      channel: GENERAL,
      limit: 2,
      cursor: page2.response_metadata?.next_cursor ?? "",
    });
    expect(page3.messages?.map((m) => m.text)).toEqual(["one"]);
    expect(page3.has_more).toBe(false);
    expect(page3.response_metadata?.next_cursor ?? "").toBe("");

    const after = await web.conversations.history({ channel: GENERAL, oldest: first.ts });
    expect(after.messages?.map((m) => m.text)).toEqual(["five", "four", "three", "two"]);
    const from = await web.conversations.history({
      channel: GENERAL,
      oldest: first.ts,
      inclusive: true,
    });
    expect(from.messages?.map((m) => m.text)).toEqual(["five", "four", "three", "two", "one"]);
    const ts = (from.messages ?? []).map((m) => Number(m.ts));
    expect(ts).toEqual([...ts].sort((a, b) => b - a));
    expect(posted.ts).toBe(from.messages?.[3]?.ts);

    await expect(
      web.conversations.history({ channel: GENERAL, cursor: "bm90LWEtY3Vyc29y" }),
    ).rejects.toMatchObject({ data: { error: "invalid_cursor" } });
    await expect(web.conversations.history({ channel: "C0NOWHERE" })).rejects.toMatchObject({
      data: { error: "channel_not_found" },
    });
  });

  it("keeps thread replies out of history and in conversations.replies", async () => {
    const web = webClient();
    const parent = standIn.post({ channel: GENERAL, user: OWNER, text: "question" });
    await web.chat.postMessage({ channel: GENERAL, text: "answer", thread_ts: parent.ts });
    standIn.post({ channel: GENERAL, user: OWNER, text: "thanks", thread_ts: parent.ts });

    const history = await web.conversations.history({ channel: GENERAL });
    expect(history.messages?.map((m) => m.text)).toEqual(["question"]);
    expect(history.messages?.[0]).toMatchObject({ thread_ts: parent.ts, reply_count: 2 });
    const replies = await web.conversations.replies({ channel: GENERAL, ts: parent.ts });
    expect(replies.messages?.map((m) => m.text)).toEqual(["question", "answer", "thanks"]);
    expect(replies.messages?.[2]).toMatchObject({ thread_ts: parent.ts, parent_user_id: OWNER });
  });

  it("still answers 429 with Retry-After when told to", async () => {
    standIn.rateLimitNext(0);
    const web = new WebClient(BOT_TOKEN, {
      slackApiUrl: standIn.apiBase,
      rejectRateLimitedCalls: true,
      logLevel: LogLevel.ERROR,
    });
    await expect(web.auth.test()).rejects.toMatchObject({
      code: "slack_webapi_rate_limited_error",
    });
    await expect(web.auth.test()).resolves.toMatchObject({ ok: true });
  });
});

describe("buttons and interactivity", () => {
  const blocks = buttonBlocks("May I?", { Approve: "offer:1:approve", Deny: "offer:1:deny" }, "1");
  const offer = () => webClient().chat.postMessage({ channel: GENERAL, text: "May I?", blocks });
  const press = (message_ts: string, action_id: string) =>
    standIn.press({ channel: GENERAL, message_ts, action_id, user: OWNER });

  it("stores blocks as Slack does, edits them with chat.update, and refuses bad ones", async () => {
    const { client, events } = socketClient();
    await client.start();
    const posted = await offer();
    const stored = standIn.history(GENERAL)[0]?.blocks ?? [];
    expect(stored).toMatchObject([
      { type: "section", block_id: expect.any(String) },
      { type: "actions", elements: [{ action_id: "offer:1:approve", text: { emoji: true } }, {}] },
    ]);
    expect(posted.message?.blocks).toEqual(stored);
    expect(standIn.messages[0]?.blocks).toEqual(stored);

    const edit = { channel: GENERAL, ts: posted.ts ?? "", text: "Done", blocks: [] };
    await webClient().chat.update(edit);
    const [edited] = standIn.history(GENERAL);
    expect(edited).toMatchObject({ text: "Done", edited: { user: standIn.botUserId } });
    expect(edited?.blocks).toBeUndefined();
    // Slack tells the app about the edit with a hidden message_changed event.
    await standIn.waitFor(() => events.some((e) => e.event.subtype === "message_changed"));
    const bad = webClient().apiCall("chat.postMessage", { channel: GENERAL, blocks: "[1]" });
    await expect(bad).rejects.toMatchObject({ data: { error: "invalid_blocks" } });
  });

  it("sends a press as an interactive block_actions envelope, again until acked", async () => {
    let deliveries = 0;
    const { client, interactions } = socketClient({ ackInteractionWhen: () => ++deliveries > 1 });
    await client.start();
    const posted = await offer();
    const pressed = press(posted.ts ?? "", "offer:1:deny");
    expect(pressed.delivered).toBe(true);
    await standIn.waitFor(() => interactions.length === 2 && standIn.unacked === 0);
    const [first, again] = interactions;
    expect(first?.body).toMatchObject({
      type: "block_actions",
      user: { id: OWNER, team_id: standIn.teamId },
      api_app_id: standIn.appId,
      container: { message_ts: posted.ts, channel_id: GENERAL, is_ephemeral: false },
      channel: { id: GENERAL },
      message: { ts: posted.ts, text: "May I?", blocks: posted.message?.blocks },
      response_url: pressed.response_url,
      trigger_id: pressed.trigger_id,
      actions: [{ action_id: "offer:1:deny", value: "1", type: "button" }],
    });
    expect(again?.body).toEqual(first?.body);
    expect(again?.envelope_id).not.toBe(first?.envelope_id);
    const envelopes = standIn.socket.envelopes.map((e) => `${e.type} ${e.event_type}`);
    expect(envelopes).toContain("interactive block_actions");
  });

  it("takes response_url posts (ok, replacing the offer) and chat.postEphemeral", async () => {
    const ts = (await offer()).ts ?? "";
    const { response_url } = press(ts, "offer:1:approve");
    const body = { replace_original: true, text: "Approved by owner" };
    expect(await postJson(response_url, body)).toEqual([200, "ok"]);
    expect(standIn.responses).toEqual([{ url_id: response_url.split("/actions/")[1], body }]);
    expect(standIn.history(GENERAL)[0]).toMatchObject({ ts, text: "Approved by owner" });
    const unknown = response_url.replace(/[^/]+$/, "unknown");
    expect(await postJson(unknown, body)).toEqual([404, "no_service"]);

    const ephemeral = { channel: GENERAL, user: OWNER, text: "Only you see this" };
    const sent = await webClient().chat.postEphemeral(ephemeral);
    expect(sent).toMatchObject({ ok: true, message_ts: expect.stringMatching(/^\d+\.\d{6}$/) });
    expect(standIn.ephemerals).toEqual([ephemeral]);
  });
});

describe("slash commands and users.info", () => {
  const DM = "D0OWNER42";
  const run = (text: string, channel = GENERAL) =>
    standIn.slash({ command: "/approvals", text, user: OWNER, channel });

  it("delivers a slash_commands envelope with Slack's fields and records an ephemeral ack", async () => {
    const { client, commands } = socketClient({
      answerCommand: () => ({ text: "2 waiting", response_type: "ephemeral" }),
    });
    await client.start();
    const sent = run("list", DM);
    expect(sent.delivered).toBe(true);
    const [first] = await standIn.waitFor(() => commands.length === 1 && commands);
    expect(first?.accepts_response_payload).toBe(true);
    expect(first?.envelope_id).toBe(sent.envelope_id);
    expect(first?.body).toEqual({
      token: expect.any(String),
      team_id: standIn.teamId,
      team_domain: "roster",
      channel_id: DM,
      channel_name: "directmessage",
      user_id: OWNER,
      user_name: OWNER.toLowerCase(),
      command: "/approvals",
      text: "list",
      api_app_id: standIn.appId,
      is_enterprise_install: "false",
      response_url: sent.response_url,
      trigger_id: sent.trigger_id,
    });
    expect(sent.response_url).toMatch(/\/commands\/[\w-]+$/);
    expect(standIn.socket.envelopes.at(-1)).toMatchObject({ type: "slash_commands" });

    await standIn.waitFor(() => standIn.slashResponses.length === 1);
    expect(standIn.slashResponses).toEqual([
      {
        trigger_id: sent.trigger_id,
        command: "/approvals",
        channel: DM,
        user: OWNER,
        via: "ack",
        response_type: "ephemeral",
        text: "2 waiting",
      },
    ]);
    expect(standIn.slashCommands[0]?.status).toBe("acked");
    expect(standIn.history(DM)).toEqual([]);
    expect(standIn.ephemerals).toEqual([]);
  });

  it("puts an in_channel answer in history after the command; refuses long text and bad blocks", async () => {
    const answers = [
      { text: "Approved", response_type: "in_channel" },
      { text: "x".repeat(40_001) },
      {
        blocks: [{ type: "section", text: { type: "mrkdwn", text: "" } }],
        response_type: "in_channel",
      },
    ];
    const { client, events } = socketClient({ answerCommand: () => answers.shift() });
    await client.start();
    const sent = run("approve 7");
    await standIn.waitFor(() => standIn.slashResponses.length === 1);
    const history = standIn.history(GENERAL);
    expect(history.map((m) => [m.user, m.text])).toEqual([
      [OWNER, "/approvals approve 7"],
      [standIn.botUserId, "Approved"],
    ]);
    expect(history[1]).toMatchObject({ bot_id: standIn.botId, ts: standIn.slashResponses[0]?.ts });
    await standIn.waitFor(() => events.some((e) => e.event.bot_id === standIn.botId));
    expect(standIn.slashResponses[0]).toMatchObject({
      trigger_id: sent.trigger_id,
      via: "ack",
      response_type: "in_channel",
    });

    run("flood");
    await standIn.waitFor(() => standIn.slashResponses.length === 2);
    expect(standIn.slashResponses[1]).toMatchObject({ via: "ack", refused: "msg_too_long" });
    run("bad blocks");
    await standIn.waitFor(() => standIn.slashResponses.length === 3);
    expect(standIn.slashResponses[2]).toMatchObject({ via: "ack", refused: "invalid_blocks" });
    expect(standIn.history(GENERAL)).toHaveLength(2);
  });

  it("records a response_url post made after a bare ack", async () => {
    const { client, commands } = socketClient();
    await client.start();
    const sent = run("list");
    await standIn.waitFor(
      () => commands.length === 1 && standIn.slashCommands[0]?.status === "acked",
    );
    expect(standIn.slashResponses).toEqual([]);
    const body = { text: "Here they are", response_type: "ephemeral" };
    expect(await postJson(sent.response_url, body)).toEqual([200, "ok"]);
    expect(standIn.slashResponses).toEqual([
      expect.objectContaining({ via: "response_url", response_type: "ephemeral", user: OWNER }),
    ]);
    expect(standIn.responses).toEqual([{ url_id: sent.response_url.split("/commands/")[1], body }]);
    // A command's URL is not a button's.
    const asAction = sent.response_url.replace("/commands/", "/actions/");
    expect(await postJson(asAction, body)).toEqual([404, "no_service"]);
  });

  it("records an unacked command as timed out and never sends it again", async () => {
    const { client, commands } = socketClient({ answerCommand: () => false });
    await client.start();
    run("slow");
    await standIn.waitFor(() => standIn.slashCommands[0]?.status === "timed_out");
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(commands).toHaveLength(1);
    expect(standIn.deliveries).toBe(1);
    expect(standIn.unacked).toBe(0);
    expect(standIn.socket.abandoned).toBe(0);
    await client.disconnect();
    await standIn.waitFor(() => standIn.connected === 0);
    expect(run("nobody home").delivered).toBe(false);
    expect(standIn.slashCommands[1]?.status).toBe("undelivered");
  });

  it("answers users.info with what setUser said, and user_not_found for a stranger", async () => {
    standIn.setUser(OWNER, { name: "ana", is_admin: true });
    standIn.post({ channel: GENERAL, user: "U0POSTER1", text: "hi" });
    const web = webClient();
    const owner = await web.users.info({ user: OWNER });
    expect(owner.user).toMatchObject({
      id: OWNER,
      team_id: standIn.teamId,
      name: "ana",
      is_admin: true,
      is_owner: false,
      is_primary_owner: false,
      is_bot: false,
      deleted: false,
      tz: expect.any(String),
      profile: { display_name: "ana" },
    });
    const poster = await web.users.info({ user: "U0POSTER1" });
    expect(poster.user).toMatchObject({ is_admin: false, is_owner: false, is_restricted: false });
    await expect(web.users.info({ user: "U0NOBODY1" })).rejects.toMatchObject({
      data: { error: "user_not_found" },
    });

    const api = `${standIn.apiBase}users.info`;
    const auth = { authorization: `Bearer ${BOT_TOKEN}` };
    const json = await fetch(api, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ user: OWNER }),
    });
    expect(await json.json()).toMatchObject({ ok: true, user: { id: OWNER, is_admin: true } });
    const query = await fetch(`${api}?user=${OWNER}`, { method: "POST", headers: auth });
    expect(await query.json()).toMatchObject({ ok: true, user: { name: "ana" } });
  });
});
