import { existsSync, readFileSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { splitText } from "../../runner/ground/text/message-parts.ts";
import { approveGate } from "../../runner/services/actions/desk.ts";
import { findGate } from "../../runner/services/actions/gates.ts";
import { submitAction } from "../support/action-host.ts";
import { runRoster } from "../support/cli.ts";
import { DiscordStandIn } from "../support/discord-stand-in.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { SlackStandIn } from "../support/slack-stand-in.ts";

/**
 * The slack and discord executors, and message-user's DMs, behind the real
 * gateway and action host: proposals from a run's token, the vault on the
 * host, and stand-ins for Slack's and Discord's HTTP APIs on the far side.
 */
let env: GatewayEnv;
let slack: SlackStandIn;
let discord: DiscordStandIn;

const SLACK_TOKEN = "xoxb-roster-test-token";
const DISCORD_TOKEN = "roster-discord-bot-token";
const GENERAL = "C0GENERAL1";
const CHANNEL = "1200000000000000001";
const GATED_CHANNEL = "2200000000000000002";
const OWNER = "1100000000000000042";
const SLACK_OWNER = "U0OWNER42";

const ORG = `
[[action]]
name = "slack-send"
executor = "slack"
trust = "auto"

[[action]]
name = "discord-send"
executor = "discord"
trust = "auto"

[[trust]]
intent = "discord-send"
match = { channel_id = "22*" }
level = "gate"

[[action]]
name = "message-user"
executor = "message-user"
trust = "auto"
`;

async function submit(envelope: unknown, runId?: string) {
  return submitAction(env, await env.token("elf", runId), envelope);
}

const slackVault = (extra: Record<string, string> = {}) =>
  env.writeVault("slack", { bot_token: SLACK_TOKEN, api_base: slack.apiBase, ...extra });
const discordVault = (extra: Record<string, string> = {}) =>
  env.writeVault("discord", { token: DISCORD_TOKEN, api_base: discord.apiBase, ...extra });

/** Numbered lines, `count` characters in all: a long text with line breaks to split on. */
function longText(count: number): string {
  const lines: string[] = [];
  let length = 0;
  for (let n = 1; length < count; n += 1) {
    const line = `line ${String(n).padStart(4, "0")}: ${"the quick brown fox ".repeat(3)}`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join("\n").slice(0, count);
}

beforeAll(async () => {
  slack = await SlackStandIn.start({
    botToken: SLACK_TOKEN,
    channels: [GENERAL],
    users: [SLACK_OWNER],
  });
  discord = await DiscordStandIn.start({
    token: DISCORD_TOKEN,
    channels: [CHANNEL, GATED_CHANNEL],
    users: [OWNER],
  });
  env = await startGatewayEnv(ORG);
  await mkdir(join(env.paths.config, "workers", "elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers", "elf", "worker.toml"), 'name = "elf"\n');
  await new Promise((resolve) => setTimeout(resolve, 600)); // the gateway sees the new worker
});
afterAll(async () => {
  await env?.cleanup();
  await slack?.stop();
  await discord?.stop();
});
beforeEach(async () => {
  slack.reset();
  discord.reset();
  await slackVault();
  await discordVault();
});

describe("splitting", () => {
  it("cuts at a line break, else a space, else hard but never inside a surrogate pair", () => {
    expect(splitText("aaaaaa\nbb cc\ndd", 10)).toEqual(["aaaaaa", "bb cc\ndd"]);
    // a line break in the front half would leave a stub: a space in the back half wins
    expect(splitText("aaaa\nbbbb cc\ndd", 10)).toEqual(["aaaa\nbbbb", "cc\ndd"]);
    expect(splitText("aaaaaa bbbbbbbb", 10)).toEqual(["aaaaaa", "bbbbbbbb"]);
    expect(splitText("x".repeat(25), 10)).toEqual(["x".repeat(10), "x".repeat(10), "x".repeat(5)]);
    const emoji = `${"x".repeat(9)}😀${"y".repeat(5)}`;
    expect(splitText(emoji, 10)).toEqual(["x".repeat(9), `😀${"y".repeat(5)}`]);
    // a part that would be only whitespace is left out (chat services refuse it)
    expect(splitText(`hello${" ".repeat(12)}\n\n`, 10)).toEqual(["hello     "]);
    expect(splitText("short", 10)).toEqual(["short"]);
  });
});

describe("slack-send", () => {
  it("posts with chat.postMessage, the bot token as a Bearer header, and answers the ts", async () => {
    const reply = await submit({
      intent: "slack-send",
      payload: { channel_id: GENERAL, text: "build is *green*" },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const request = slack.requests[0];
    expect(slack.requests).toHaveLength(1);
    expect(request?.method).toBe("POST");
    expect(request?.path).toBe("/api/chat.postMessage");
    expect(request?.headers.authorization).toBe(`Bearer ${SLACK_TOKEN}`);
    expect(request?.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(request?.body).toEqual({ channel: GENERAL, text: "build is *green*" });
    expect(reply.body).toEqual({
      status: "done",
      result: { sent: true, channel_id: GENERAL, message_ts: slack.messages[0]?.ts, parts: 1 },
    });
  });

  it("splits a 5000-character text on a line break into ordered messages, all in the thread", async () => {
    const text = longText(5000);
    const reply = await submit({
      intent: "slack-send",
      payload: { channel_id: GENERAL, text, thread_ts: "1700000000.000100" },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const posted = slack.messages.map((message) => message.text);
    expect(posted).toHaveLength(2);
    for (const part of posted) expect(part.length).toBeLessThanOrEqual(4000);
    expect(posted.join("\n")).toBe(text);
    expect(posted[0]?.endsWith("fox ")).toBe(true); // a whole line, not a cut word
    expect(slack.messages.every((message) => message.thread_ts === "1700000000.000100")).toBe(true);
    expect(reply.body.result).toMatchObject({ message_ts: slack.messages[0]?.ts, parts: 2 });
  });

  it("waits out a 429 with Retry-After: 1 and retries once", async () => {
    slack.rateLimitNext(1);
    const started = Date.now();
    const reply = await submit({
      intent: "slack-send",
      payload: { channel_id: GENERAL, text: "after the limit" },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(slack.requests.map((request) => request.path)).toEqual([
      "/api/chat.postMessage",
      "/api/chat.postMessage",
    ]);
    expect(slack.messages.map((message) => message.text)).toEqual(["after the limit"]);
  });

  it("answers 502 with Slack's error in words when the token is refused or the channel unknown", async () => {
    await slackVault({ bot_token: "xoxb-revoked" });
    const refused = await submit({
      intent: "slack-send",
      payload: { channel_id: GENERAL, text: "hello" },
    });
    expect(refused.status).toBe(502);
    expect(refused.body.status).toBe("error");
    expect(String(refused.body.error)).toBe(
      `Slack chat.postMessage for ${GENERAL} refused: invalid_auth: the bot_token of the vault credential "slack" was refused (roster login slack --field bot_token=…)`,
    );
    await slackVault();
    const unknown = await submit({
      intent: "slack-send",
      payload: { channel_id: "C0NOWHERE", text: "hello" },
    });
    expect(unknown.status).toBe(502);
    expect(String(unknown.body.error)).toMatch(/refused: channel_not_found: no such conversation/);
    expect(slack.messages).toHaveLength(0);
  });

  it("refuses a channel name, a bad thread ts or a blank text before anything is filed", async () => {
    for (const payload of [
      { channel_id: "#general", text: "hi" },
      { channel_id: GENERAL, text: "hi", thread_ts: "yesterday" },
      { channel_id: GENERAL, text: " \n " },
      { channel_id: GENERAL, text: "hi", blocks: "[]" },
    ]) {
      const reply = await submit({ intent: "slack-send", payload });
      expect(reply.status, JSON.stringify(payload)).toBe(400);
      expect(String(reply.body.error)).toMatch(/^bad envelope: payload/);
    }
    expect(slack.requests).toHaveLength(0);
  });
});

describe("discord-send", () => {
  it("creates a message with the bot token, a JSON body and a nonce from the proposal", async () => {
    const reply = await submit({
      intent: "discord-send",
      payload: { channel_id: CHANNEL, text: "deploy done @everyone" },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(discord.requests).toHaveLength(1);
    const request = discord.requests[0];
    expect(request?.method).toBe("POST");
    expect(request?.path).toBe(`/api/v10/channels/${CHANNEL}/messages`);
    expect(request?.headers.authorization).toBe(`Bot ${DISCORD_TOKEN}`);
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(request?.body).toEqual({
      content: "deploy done @everyone",
      allowed_mentions: { parse: ["users"] },
      nonce: expect.stringMatching(/^g-[0-9a-f]{8}\.1$/),
      enforce_nonce: true,
    });
    expect(reply.body).toEqual({
      status: "done",
      result: { sent: true, channel_id: CHANNEL, message_id: discord.messages[0]?.id, parts: 1 },
    });
  });

  it("splits a 5000-character text into ordered messages of at most 2000", async () => {
    const text = longText(5000);
    const reply = await submit({ intent: "discord-send", payload: { channel_id: CHANNEL, text } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const posted = discord.messages.map((message) => message.content);
    expect(posted).toHaveLength(3);
    for (const part of posted) expect(part.length).toBeLessThanOrEqual(2000);
    expect(posted.join("\n")).toBe(text);
    const nonces = discord.requests.map((request) => String(request.body.nonce));
    expect(nonces.map((nonce) => nonce.slice(-2))).toEqual([".1", ".2", ".3"]);
    expect(new Set(nonces.map((nonce) => nonce.slice(0, -2))).size).toBe(1);
    expect(reply.body.result).toMatchObject({ message_id: discord.messages[0]?.id, parts: 3 });
  });

  it("waits out a 429 (Retry-After, X-RateLimit-*, retry_after) and retries once", async () => {
    discord.rateLimitNext(1);
    const started = Date.now();
    const reply = await submit({
      intent: "discord-send",
      payload: { channel_id: CHANNEL, text: "after the limit" },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(discord.requests).toHaveLength(2);
    expect(discord.requests[1]?.body).toEqual(discord.requests[0]?.body);
    expect(discord.messages.map((message) => message.content)).toEqual(["after the limit"]);
  });

  it("answers 502 with Discord's error in words when the token is refused or the channel unknown", async () => {
    await discordVault({ token: "not-the-token" });
    const refused = await submit({
      intent: "discord-send",
      payload: { channel_id: CHANNEL, text: "hello" },
    });
    expect(refused.status).toBe(502);
    expect(refused.body.status).toBe("error");
    expect(String(refused.body.error)).toBe(
      `Discord refused a message to channel ${CHANNEL}: 401 401: Unauthorized (code 0): the token of the vault credential "discord" was refused (roster login discord --field token=…)`,
    );
    await discordVault();
    const unknown = await submit({
      intent: "discord-send",
      payload: { channel_id: "1999999999999999999", text: "hello" },
    });
    expect(unknown.status).toBe(502);
    expect(String(unknown.body.error)).toMatch(
      /404 Unknown Channel \(code 10003\): no such channel/,
    );
    await rm(join(env.paths.vault, "discord.json"));
    const none = await submit({
      intent: "discord-send",
      payload: { channel_id: CHANNEL, text: "hello" },
    });
    expect(none.status).toBe(502);
    expect(String(none.body.error)).toMatch(/^no Discord credential: .*"token".*"discord"/);
    expect(discord.messages).toHaveLength(0);
  });

  it("holds a gated send, and the approved one posts exactly what the desk shows", async () => {
    const text = `Release notes\n\n${longText(2600)}`;
    const reply = await submit(
      {
        intent: "discord-send",
        payload: { channel_id: GATED_CHANNEL, text },
        rationale: "the lead asked for release notes",
      },
      "run-gated",
    );
    expect(reply.status, JSON.stringify(reply.body)).toBe(202);
    expect(discord.requests).toHaveLength(0);
    const id = String(reply.body.gate_id);

    const shown = await runRoster(["approvals", "show", id], { ROSTER_ROOT: env.root });
    expect(shown.code, shown.stderr).toBe(0);
    const start = shown.stdout.indexOf("--- what would be sent ---\n");
    const end = shown.stdout.indexOf("\n--- end ---");
    expect(start).toBeGreaterThan(0);
    const rendered = shown.stdout.slice(start + "--- what would be sent ---\n".length, end);

    const done = await approveGate(env.paths, findGate(env.paths, id), { by: "test" });
    expect(done.state, done.error).toBe("executed");
    const posted = discord.messages.map((message) => message.content);
    expect(posted).toHaveLength(2);
    expect(discord.requests.every((request) => request.path.includes(GATED_CHANNEL))).toBe(true);
    const marked = posted.map((part, index) => `[message ${index + 1} of 2]\n${part}`);
    expect(rendered).toBe(
      `To: Discord channel ${GATED_CHANNEL}, in 2 messages\n\n${marked.join("\n\n")}`,
    );
    expect(posted.join("\n")).toBe(text);
    expect(done.result).toEqual({
      sent: true,
      channel_id: GATED_CHANNEL,
      message_id: discord.messages[0]?.id,
      parts: 2,
    });
    // a second approve is a no-op: Discord sees nothing more
    await approveGate(env.paths, findGate(env.paths, id), { by: "test" });
    expect(discord.messages).toHaveLength(2);
  });
});

describe("message-user", () => {
  const inbox = () => {
    const file = join(env.paths.audit, "messages.jsonl");
    return existsSync(file) ? readFileSync(file, "utf8") : "";
  };

  it("DMs the owner on Discord when the discord credential names one", async () => {
    await discordVault({ owner_id: OWNER });
    await slackVault({ owner_id: SLACK_OWNER });
    const before = inbox();
    const reply = await submit({ intent: "message-user", payload: { text: "need a decision" } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const dm = discord.dmChannelOf(OWNER);
    expect(reply.body.result).toEqual({
      delivered: "discord-dm",
      channel_id: dm,
      message_id: discord.messages[0]?.id,
    });
    expect(discord.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      "POST /api/v10/users/@me/channels",
      `POST /api/v10/channels/${dm}/messages`,
    ]);
    expect(discord.requests[0]?.body).toEqual({ recipient_id: OWNER });
    expect(discord.requests[0]?.headers.authorization).toBe(`Bot ${DISCORD_TOKEN}`);
    expect(discord.messages.map((message) => message.content)).toEqual(["need a decision"]);
    expect(slack.requests).toHaveLength(0);
    expect(inbox()).toBe(before);
  });

  it("DMs the owner on Slack when only the slack credential names one", async () => {
    await slackVault({ owner_id: SLACK_OWNER });
    const reply = await submit({ intent: "message-user", payload: { text: "need a decision" } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.result).toMatchObject({ delivered: "slack-dm", channel_id: "D0OWNER42" });
    expect(slack.requests.map((request) => request.path)).toEqual([
      "/api/conversations.open",
      "/api/chat.postMessage",
    ]);
    expect(slack.requests[0]?.body).toEqual({ users: SLACK_OWNER });
    expect(slack.requests[1]?.body).toEqual({ channel: "D0OWNER42", text: "need a decision" });
    expect(discord.requests).toHaveLength(0);
  });

  it("lands in the inbox when no owner is configured, and when the DM fails", async () => {
    const reply = await submit({ intent: "message-user", payload: { text: "quiet note" } });
    expect(reply.body).toEqual({ status: "done", result: { delivered: "inbox" } });
    expect(inbox()).toContain('"text":"quiet note"');
    expect(discord.requests).toHaveLength(0);
    expect(slack.requests).toHaveLength(0);

    await discordVault({ owner_id: "1999999999999999999" });
    const failed = await submit({ intent: "message-user", payload: { text: "still heard" } });
    expect(failed.status).toBe(200);
    expect(failed.body.result).toEqual({
      delivered: "inbox",
      dm_failed: `Discord refused a DM channel with user 1999999999999999999: 404 Unknown User (code 10013): owner_id of the vault credential "discord" names no user`,
    });
    expect(inbox()).toContain('"text":"still heard"');
  });
});
