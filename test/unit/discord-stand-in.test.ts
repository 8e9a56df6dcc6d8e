import { DiscordAPIError, makeURLSearchParams, REST, RequestMethod } from "@discordjs/rest";
import {
  type APIMessage,
  ButtonStyle,
  ComponentType,
  GatewayDispatchEvents,
  GatewayIntentBits,
  InteractionResponseType,
  MessageFlags,
  Routes,
} from "discord-api-types/v10";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DiscordClients, type GatewayClientOptions } from "../support/discord-clients.ts";
import { DiscordStandIn } from "../support/discord-stand-in.ts";

/**
 * The Discord stand-in driven by the real @discordjs/rest and @discordjs/ws
 * clients, so the double is held to the protocol those clients speak.
 */
const TOKEN = "stand-in-bot-token";
const CHANNEL = "1300000000000000100";
const GUILD = "1300000000000000200";
const USER = { id: "1300000000000000300", username: "owner" };
const INTENTS =
  GatewayIntentBits.GuildMessages |
  GatewayIntentBits.MessageContent |
  GatewayIntentBits.DirectMessages;

let standIn: DiscordStandIn;
let clients: DiscordClients;

beforeEach(async () => {
  standIn = await DiscordStandIn.start({
    token: TOKEN,
    channels: [CHANNEL],
    users: [USER.id],
    // Short, so the client's heartbeats (first one at a random fraction of this) happen within a test.
    heartbeatInterval: 300,
  });
  clients = new DiscordClients(standIn, TOKEN, INTENTS);
});

afterEach(async () => {
  // @discordjs/ws drops its error handler when destroyed mid-handshake; a refused upgrade landing
  // after that would be thrown at the process, so nothing is refused while the clients go.
  standIn.refuseGateway(false);
  await clients.destroy();
  await standIn.stop();
});

const restClient = (token?: string): REST => clients.rest(token);
/** A gateway client as roster's listener will build it, recording what it receives. */
const gatewayClient = (options?: GatewayClientOptions) => clients.gateway(options);

const say = (content: string, extra: { mentions?: string[] } = {}) =>
  standIn.post({ channel_id: CHANNEL, guild_id: GUILD, author: USER, content, ...extra });

describe("the Discord stand-in under the real discord.js clients", () => {
  it("hands out its gateway, takes an uncompressed JSON connection, and answers READY", async () => {
    const { manager, dispatches } = gatewayClient();
    await manager.connect();

    expect(standIn.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      "GET /api/v10/gateway/bot",
    ]);
    expect(standIn.gateway.queries).toEqual(["v=10&encoding=json"]);
    expect(standIn.gateway.identifyPayloads[0]).toMatchObject({
      token: TOKEN,
      intents: INTENTS,
      shard: [0, 1],
      compress: false,
    });
    const ready = await standIn.waitFor(() =>
      dispatches.find((dispatch) => dispatch.t === GatewayDispatchEvents.Ready),
    );
    expect(ready).toMatchObject({
      op: 0,
      s: 1,
      d: {
        v: 10,
        user: { id: standIn.botUserId, username: "roster-bot", bot: true, discriminator: "0" },
        guilds: [],
        resume_gateway_url: standIn.gatewayUrl,
        shard: [0, 1],
        application: { id: standIn.botUserId },
      },
    });
    expect(standIn.connectedSessions).toBe(1);
    await standIn.waitFor(() => standIn.gateway.heartbeats >= 2);
    expect(standIn.identifies).toBe(1);
  });

  it("dispatches a posted message as MESSAGE_CREATE, attachments downloadable from the CDN", async () => {
    const { manager, messageCreate } = gatewayClient();
    await manager.connect();
    const posted = standIn.post({
      channel_id: CHANNEL,
      guild_id: GUILD,
      author: USER,
      content: `<@${standIn.botUserId}> read this`,
      mentions: [standIn.botUserId],
      attachments: [{ filename: "notes.txt", bytes: Buffer.from("some notes") }],
    });
    expect(posted.id).toMatch(/^[0-9]{17,19}$/);

    const event = await messageCreate(posted.id);
    expect(event.d).toMatchObject({
      id: posted.id,
      channel_id: CHANNEL,
      guild_id: GUILD,
      author: { id: USER.id, username: USER.username },
      content: `<@${standIn.botUserId}> read this`,
      mentions: [{ id: standIn.botUserId, username: "roster-bot", bot: true }],
      attachments: [{ filename: "notes.txt", size: 10, content_type: "text/plain; charset=utf-8" }],
      type: 0,
      tts: false,
      mention_everyone: false,
    });
    expect(event.d.author.bot).toBeUndefined();
    expect(Number.isNaN(Date.parse(event.d.timestamp))).toBe(false);

    const url = event.d.attachments[0]?.url ?? "";
    const download = await fetch(url);
    expect(download.status).toBe(200);
    expect(await download.text()).toBe("some notes");
    const unsigned = await fetch(url.slice(0, url.indexOf("?")));
    expect(unsigned.status).toBe(404);

    const later = say("a second one");
    expect(BigInt(later.id)).toBeGreaterThan(BigInt(posted.id));
    expect((await messageCreate(later.id)).s).toBeGreaterThan(event.s);
  });

  it("echoes the bot's own messages on the gateway, and blanks content without MessageContent", async () => {
    const rest = restClient();
    const { manager, messageCreate } = gatewayClient({
      rest,
      intents: GatewayIntentBits.GuildMessages,
    });
    await manager.connect();
    const plain = say("you can't read this");
    expect((await messageCreate(plain.id)).d).toMatchObject({ content: "", attachments: [] });
    const mention = say(`<@${standIn.botUserId}> but this`, { mentions: [standIn.botUserId] });
    expect((await messageCreate(mention.id)).d.content).toBe(`<@${standIn.botUserId}> but this`);

    const sent = (await rest.post(Routes.channelMessages(CHANNEL), {
      body: { content: "from the bot" },
    })) as APIMessage;
    const echo = await messageCreate(sent.id);
    expect(echo.d).toMatchObject({
      content: "from the bot",
      author: { id: standIn.botUserId, bot: true },
    });
  });

  it("resumes after a dropped connection and replays what arrived while it was refused", async () => {
    const { manager, dispatches, errors, messageCreate } = gatewayClient();
    await manager.connect();
    const before = say("before the drop");
    await messageCreate(before.id);

    standIn.refuseGateway(true);
    standIn.dropConnections();
    expect(standIn.connectedSessions).toBe(0);
    const missed = say("while you were away");
    await standIn.waitFor(() => standIn.gateway.refusedUpgrades >= 1);
    // The stand-in counts the refusal before the client has read the 503: wait for the client's side.
    await standIn.waitFor(() => errors.some((error) => error.message.includes("503")));
    standIn.refuseGateway(false);

    const replayed = await messageCreate(missed.id);
    expect(replayed.d.content).toBe("while you were away");
    await standIn.waitFor(() =>
      dispatches.find((dispatch) => dispatch.t === GatewayDispatchEvents.Resumed),
    );
    expect(standIn.identifies).toBe(1);
    expect(standIn.resumes).toBe(1);
    expect(standIn.connectedSessions).toBe(1);
    // Only what the client missed is replayed: nothing it had seen arrives twice.
    expect(dispatches.map((dispatch) => `${dispatch.s} ${dispatch.t}`)).toEqual([
      "1 READY",
      "2 MESSAGE_CREATE",
      "3 MESSAGE_CREATE",
      "4 RESUMED",
    ]);

    standIn.dropConnections(4000);
    const afterCode = say("after a 4000");
    await messageCreate(afterCode.id);
    expect(standIn.resumes).toBe(2);
    expect(standIn.identifies).toBe(1);
  });

  it("survives frames that aren't JSON or carry an unknown opcode", async () => {
    const { manager, messageCreate } = gatewayClient();
    await manager.connect();
    standIn.sendGarbage();
    standIn.sendUnknownOp();
    const next = say("still here");
    await messageCreate(next.id);
    expect(standIn.connectedSessions).toBe(1);
    expect(standIn.gateway.closes).toEqual([]);
    expect(standIn.identifies).toBe(1);
  });

  it("answers a RESUME of an unknown session with op 9, after which the client identifies", async () => {
    const { manager } = gatewayClient({
      session: {
        sessionId: "0123456789abcdef0123456789abcdef",
        sequence: 3,
        resumeURL: standIn.gatewayUrl,
        shardCount: 1,
        shardId: 0,
      },
    });
    await manager.connect();
    expect(standIn.gateway.invalidSessions).toBe(1);
    expect(standIn.resumes).toBe(0);
    expect(standIn.identifies).toBe(1);
    expect(standIn.connectedSessions).toBe(1);
  });

  it("fails a wrong token: the gateway closes 4004, the HTTP API answers 401", async () => {
    const { manager } = gatewayClient({ token: "not-the-token" });
    await expect(manager.connect()).rejects.toThrow("Authentication failed");
    expect(standIn.identifies).toBe(0);
    // The server's side of the close lands once the client echoes the close frame.
    await standIn.waitFor(() => standIn.gateway.closes.length > 0);
    expect(standIn.gateway.closes).toEqual([{ code: 4004, by: "server" }]);

    const { manager: unauthorized } = gatewayClient({ rest: restClient("not-the-token") });
    const refusal = unauthorized.connect();
    await expect(refusal).rejects.toBeInstanceOf(DiscordAPIError);
    await expect(refusal).rejects.toMatchObject({ status: 401 });
  });

  it("pages history the way Discord does, newest first, the bot's messages included", async () => {
    const rest = restClient();
    const ids = ["one", "two", "three", "four", "five"].map((word) => say(word).id);
    const reply = (await rest.post(Routes.channelMessages(CHANNEL), {
      body: { content: "six, from the bot" },
    })) as APIMessage;
    const page = async (query: Record<string, string | number>) =>
      (
        (await rest.get(Routes.channelMessages(CHANNEL), {
          query: makeURLSearchParams(query),
        })) as APIMessage[]
      ).map((message) => message.content);

    // `after` picks the oldest messages after the cursor, still listed newest first.
    expect(await page({ after: ids[0] ?? "", limit: 2 })).toEqual(["three", "two"]);
    expect(await page({ after: ids[2] ?? "" })).toEqual(["six, from the bot", "five", "four"]);
    expect(await page({ before: ids[3] ?? "", limit: 2 })).toEqual(["three", "two"]);
    expect(await page({ limit: 2 })).toEqual(["six, from the bot", "five"]);
    expect(await page({ after: reply.id })).toEqual([]);
    await expect(page({ limit: 101 })).rejects.toMatchObject({ status: 400, code: 50035 });

    standIn.rateLimitNext(0.2);
    expect(await page({ after: ids[3] ?? "" })).toEqual(["six, from the bot", "five"]);
    const fetches = standIn.requests.filter((request) => request.query.after === ids[3]);
    expect(fetches).toHaveLength(2);
  });

  it("answers typing with 204, and 429s it when told to", async () => {
    const rest = restClient();
    const typing = () =>
      rest.queueRequest({ method: RequestMethod.Post, fullRoute: Routes.channelTyping(CHANNEL) });
    expect((await typing()).status).toBe(204);
    standIn.rateLimitNext(0.2);
    expect((await typing()).status).toBe(204);
    expect(standIn.typing.map((call) => call.channel_id)).toEqual([CHANNEL, CHANNEL]);
    expect(standIn.requests.map((request) => request.path)).toHaveLength(3);
  });
});

describe("buttons and interactions", () => {
  const approve = { type: ComponentType.Button, style: ButtonStyle.Success, label: "Approve" };
  const deny = { type: ComponentType.Button, style: ButtonStyle.Danger, label: "Deny" };
  const offer = (components: unknown[], channel = CHANNEL) =>
    restClient().post(Routes.channelMessages(channel), {
      body: { content: "May I?", components },
    }) as Promise<APIMessage>;
  const row = (...buttons: unknown[]) => ({ type: ComponentType.ActionRow, components: buttons });
  const yes = { ...approve, custom_id: "offer:1:approve" };
  const no = { ...deny, custom_id: "offer:1:deny" };
  const buttons = [row(yes, no)];
  // Interaction routes take no bot token: the interaction's own token is the credential.
  const anonymous = () => new REST({ api: standIn.apiBase, version: "10" });
  const deferUpdate = { type: InteractionResponseType.DeferredMessageUpdate };
  const press = (message_id: string, custom_id: string, guild_id?: string) =>
    standIn.press({ message_id, custom_id, user: USER, ...(guild_id ? { guild_id } : {}) });

  it("stores a message's buttons as Discord does and refuses what Discord refuses", async () => {
    const { manager, messageCreate } = gatewayClient();
    await manager.connect();
    const sent = await offer(buttons);
    // Discord numbers the components it stores in document order.
    const stored = [
      {
        type: 1,
        id: 1,
        components: [
          { ...yes, id: 2 },
          { ...no, id: 3 },
        ],
      },
    ];
    expect(sent.components).toEqual(stored);
    expect(standIn.messages[0]?.components).toEqual(stored);
    expect(standIn.history(CHANNEL)[0]?.components).toEqual(stored);
    expect((await messageCreate(sent.id)).d.components).toEqual(stored);

    const tooLong = offer([row({ ...approve, custom_id: "x".repeat(101) })]);
    // The client flattens Discord's nested error tree into its message, one line per field.
    await expect(tooLong).rejects.toMatchObject({
      status: 400,
      code: 50035,
      message: expect.stringContaining(
        "components[0].components[0].custom_id[BASE_TYPE_MAX_LENGTH]",
      ),
    });
    const six = Array.from({ length: 6 }, (_, n) => ({ ...approve, custom_id: `b${n}` }));
    await expect(offer([row(...six)])).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("components[0].components[BASE_TYPE_BAD_LENGTH]"),
    });
    expect(standIn.messages).toHaveLength(1);
  });

  it("delivers a press as INTERACTION_CREATE: a member in a guild, a user in a DM", async () => {
    const { manager, received } = gatewayClient();
    await manager.connect();
    const sent = await offer(buttons);
    const pressed = press(sent.id, "offer:1:deny", GUILD);
    const { d } = await received(GatewayDispatchEvents.InteractionCreate);
    expect(d).toMatchObject({
      id: pressed.id,
      application_id: standIn.botUserId,
      type: 3,
      token: pressed.token,
      version: 1,
      channel_id: CHANNEL,
      guild_id: GUILD,
      member: { user: { id: USER.id, username: USER.username }, roles: [], permissions: "0" },
      message: { id: sent.id, content: "May I?", components: sent.components },
      data: { custom_id: "offer:1:deny", component_type: 2 },
      locale: "en-US",
      app_permissions: "0",
    });
    expect(d.user).toBeUndefined();
    expect(() => press(sent.id, "nope")).toThrow();

    const dm = (await restClient().post(Routes.userChannels(), {
      body: { recipient_id: USER.id },
    })) as { id: string };
    const inDm = await offer(buttons, dm.id);
    const { id } = press(inDm.id, "offer:1:approve");
    const direct = await received(GatewayDispatchEvents.InteractionCreate, (e) => e.d.id === id);
    expect(direct.d).toMatchObject({ channel_id: dm.id, user: { id: USER.id } });
    expect([direct.d.member, direct.d.guild_id]).toEqual([undefined, undefined]);
  });

  it("records callbacks, refuses a second one with 40060, and takes edits and followups", async () => {
    const { manager, received } = gatewayClient();
    await manager.connect();
    const sent = await offer(buttons);
    const { id, token } = press(sent.id, "offer:1:approve");
    const update = { content: "Approved by owner", components: [] };
    const answer = await clients.callback(id, token, {
      type: InteractionResponseType.UpdateMessage,
      data: update,
    });
    expect(answer.status).toBe(204);
    expect(standIn.interactionResponses).toEqual([{ interaction_id: id, type: 7, data: update }]);
    expect(standIn.history(CHANNEL)[0]).toMatchObject({ id: sent.id, ...update });
    const edited = await received(GatewayDispatchEvents.MessageUpdate);
    expect(edited.d).toMatchObject({ id: sent.id, content: "Approved by owner", components: [] });

    const again = clients.callback(id, token, deferUpdate);
    await expect(again).rejects.toBeInstanceOf(DiscordAPIError);
    await expect(again).rejects.toMatchObject({ status: 400, code: 40060 });
    const unknown = clients.callback("1300000000000000999", token, deferUpdate);
    await expect(unknown).rejects.toMatchObject({ status: 404, code: 10062 });

    const appId = standIn.botUserId;
    const followup = (await anonymous().post(Routes.webhook(appId, token), {
      body: { content: "Only you see this", flags: MessageFlags.Ephemeral },
      auth: false,
    })) as APIMessage;
    expect(followup).toMatchObject({ content: "Only you see this", flags: 64 });
    const original = (await anonymous().patch(Routes.webhookMessage(appId, token, "@original"), {
      body: { content: "Approved, and done" },
      auth: false,
    })) as APIMessage;
    expect(original).toMatchObject({ id: sent.id, content: "Approved, and done" });
    const kinds = standIn.interactionResponses.map((response) => response.type);
    expect(kinds).toEqual([7, "followup", "edit_original"]);
    // The ephemeral followup never reached the channel.
    expect(standIn.history(CHANNEL).map((m) => m.content)).toEqual(["Approved, and done"]);
  });
});
