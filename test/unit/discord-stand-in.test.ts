import { DiscordAPIError, makeURLSearchParams, REST, RequestMethod } from "@discordjs/rest";
import {
  type APIApplicationCommand,
  type APIMessage,
  ApplicationCommandOptionType,
  ApplicationCommandType,
  ButtonStyle,
  ComponentType,
  GatewayDispatchEvents,
  GatewayIntentBits,
  InteractionResponseType,
  InteractionType,
  MessageFlags,
  MessageType,
  PermissionFlagsBits,
  Routes,
} from "discord-api-types/v10";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DiscordClients, type GatewayClientOptions } from "../support/discord-clients.ts";
import { type CommandRun, DiscordStandIn } from "../support/discord-stand-in.ts";

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

describe("application commands", () => {
  const ROLE = "1300000000000000400";
  const weather = {
    name: "weather",
    description: "The weather somewhere",
    options: [
      {
        type: ApplicationCommandOptionType.String,
        name: "city",
        description: "Which city",
        required: true,
        autocomplete: true,
      },
      {
        type: ApplicationCommandOptionType.Integer,
        name: "days",
        description: "How many days",
        min_value: 1,
        max_value: 7,
      },
      { type: ApplicationCommandOptionType.User, name: "for", description: "Who asks" },
    ],
  };
  const ping = { name: "ping", description: "Is the bot there?" };
  const guildCommands = () => Routes.applicationGuildCommands(standIn.botUserId, GUILD);
  const register = (body: unknown[], route: `/${string}` = guildCommands()) =>
    restClient().put(route, { body }) as Promise<APIApplicationCommand[]>;
  const run = (name: string, extra: Partial<CommandRun> = {}) =>
    standIn.command({ name, user: USER, channel_id: CHANNEL, guild_id: GUILD, ...extra });

  it("registers a guild's and the global commands by bulk overwrite, as Discord answers them", async () => {
    const created = await register([weather, ping]);
    expect(created).toHaveLength(2);
    expect(created[0]).toMatchObject({
      id: expect.stringMatching(/^[0-9]{17,20}$/),
      application_id: standIn.botUserId,
      guild_id: GUILD,
      version: expect.stringMatching(/^[0-9]{17,20}$/),
      type: ApplicationCommandType.ChatInput,
      name: "weather",
      description: "The weather somewhere",
      options: weather.options,
      default_member_permissions: null,
    });
    expect(await restClient().get(guildCommands())).toEqual(created);
    expect(standIn.registeredCommands(GUILD)).toEqual(created);
    expect(standIn.registeredCommands()).toEqual([]);

    const global = await register([ping], Routes.applicationCommands(standIn.botUserId));
    expect(global[0]?.guild_id).toBeUndefined();
    expect(standIn.registeredCommands().map((command) => command.name)).toEqual(["ping"]);

    // An overwrite replaces the set; a command kept by name keeps its id and, unchanged, its version.
    const again = await register([weather]);
    expect(again).toEqual([created[0]]);
    expect(standIn.registeredCommands(GUILD).map((command) => command.name)).toEqual(["weather"]);
  });

  it("refuses a registration Discord refuses, with 50035 naming the field", async () => {
    const refusal = (body: unknown[]) => register(body).then(() => "accepted");
    const option = (extra: Record<string, unknown>) => ({
      type: ApplicationCommandOptionType.String,
      name: "what",
      description: "What",
      ...extra,
    });
    await expect(refusal([{ ...ping, name: "Ping" }])).rejects.toMatchObject({
      status: 400,
      code: 50035,
      message: expect.stringContaining("0.name[APPLICATION_COMMAND_INVALID_NAME]"),
    });
    await expect(refusal([ping, { ...weather, name: "has space" }])).rejects.toMatchObject({
      message: expect.stringContaining("1.name[APPLICATION_COMMAND_INVALID_NAME]"),
    });
    await expect(refusal([{ name: "ping" }])).rejects.toMatchObject({
      message: expect.stringContaining("0.description[BASE_TYPE_REQUIRED]"),
    });
    await expect(refusal([ping, ping])).rejects.toMatchObject({
      message: expect.stringContaining("APPLICATION_COMMANDS_DUPLICATE_NAME"),
    });
    const many = Array.from({ length: 26 }, (_, n) => option({ name: `o${n}` }));
    await expect(refusal([{ ...ping, options: many }])).rejects.toMatchObject({
      message: expect.stringContaining("0.options[BASE_TYPE_MAX_LENGTH]"),
    });
    const both = option({ autocomplete: true, choices: [{ name: "a", value: "a" }] });
    await expect(refusal([{ ...ping, options: [both] }])).rejects.toMatchObject({
      message: expect.stringContaining("0.options[0].autocomplete"),
    });
    const sub = { type: ApplicationCommandOptionType.Subcommand, name: "now", description: "Now" };
    await expect(refusal([{ ...ping, options: [sub, option({})] }])).rejects.toMatchObject({
      message: expect.stringContaining("APPLICATION_COMMAND_OPTIONS_TYPE_INVALID"),
    });
    const nested = { ...sub, options: [sub] };
    await expect(refusal([{ ...ping, options: [nested] }])).rejects.toMatchObject({
      message: expect.stringContaining("0.options[0].options[0].type"),
    });
    await expect(
      restClient().put(Routes.applicationCommands("1300000000000000999"), { body: [ping] }),
    ).rejects.toMatchObject({ status: 403, code: 20012 });
    expect(standIn.registeredCommands(GUILD)).toEqual([]);
  });

  it("delivers a registered command as INTERACTION_CREATE type 2 with the member's roles and permissions", async () => {
    const [registered] = await register([weather]);
    const { manager, received } = gatewayClient();
    await manager.connect();
    const ran = run("weather", {
      options: { city: "Paris", days: 3, for: USER.id },
      roles: [ROLE],
      permissions: PermissionFlagsBits.SendMessages | PermissionFlagsBits.ViewChannel,
    });
    const { d } = await received(GatewayDispatchEvents.InteractionCreate);
    expect(d).toMatchObject({
      id: ran.id,
      application_id: standIn.botUserId,
      type: InteractionType.ApplicationCommand,
      token: ran.token,
      version: 1,
      guild_id: GUILD,
      channel_id: CHANNEL,
      channel: { id: CHANNEL, type: 0 },
      data: {
        id: registered?.id,
        name: "weather",
        type: 1,
        guild_id: GUILD,
        options: [
          { name: "city", type: 3, value: "Paris" },
          { name: "days", type: 4, value: 3 },
          { name: "for", type: 6, value: USER.id },
        ],
        resolved: { users: { [USER.id]: { id: USER.id } } },
      },
      member: {
        user: { id: USER.id, username: USER.username },
        roles: [ROLE],
        permissions: String(PermissionFlagsBits.SendMessages | PermissionFlagsBits.ViewChannel),
        deaf: false,
        mute: false,
        flags: 0,
      },
      app_permissions: "0",
      locale: "en-US",
      guild_locale: "en-US",
      entitlements: [],
      authorizing_integration_owners: { "0": GUILD },
      context: 0,
    });
    expect(d.user).toBeUndefined();

    // A global command is offered in a DM with the bot too, where the user comes as `user`.
    await register([ping], Routes.applicationCommands(standIn.botUserId));
    const dm = run("ping", { guild_id: undefined, channel_id: "1300000000000000500" });
    const direct = await received(GatewayDispatchEvents.InteractionCreate, (e) => e.d.id === dm.id);
    expect(direct.d).toMatchObject({
      type: 2,
      channel: { id: "1300000000000000500", type: 1 },
      user: { id: USER.id },
      context: 1,
      data: { name: "ping", type: 1 },
    });
    expect([direct.d.member, direct.d.guild_id]).toEqual([undefined, undefined]);
    expect(direct.d.data).not.toHaveProperty("guild_id");
  });

  it("refuses to run what Discord wouldn't offer: unregistered, elsewhere, or with wrong options", async () => {
    await register([weather]);
    expect(() => run("forecast")).toThrow("isn't registered");
    // A guild's command isn't offered in a DM with the bot.
    expect(() => run("weather", { guild_id: undefined, options: { city: "x" } })).toThrow(
      "isn't registered",
    );
    expect(() => run("weather", { guild_id: "1300000000000000201" })).toThrow("isn't registered");
    expect(() => run("weather", { options: { days: 3 } })).toThrow("required option city");
    expect(() => run("weather", { options: { city: "Oslo", days: "3" } })).toThrow("days");
    expect(() => run("weather", { options: { city: "Oslo", days: 9 } })).toThrow("days");
    expect(() => run("weather", { options: { city: "Oslo", wind: true } })).toThrow("wind");
    const wrongType = [
      { name: "city", type: ApplicationCommandOptionType.Integer as const, value: 1 },
    ];
    expect(() => run("weather", { options: wrongType })).toThrow("city");
  });

  it("keeps an ephemeral type 4 answer out of the channel, puts a public one in it, and refuses type 7", async () => {
    await register([ping]);
    const { manager, messageCreate } = gatewayClient();
    await manager.connect();
    const quiet = run("ping");
    const ephemeral = {
      type: InteractionResponseType.ChannelMessageWithSource,
      data: { content: "Only you see this", flags: MessageFlags.Ephemeral },
    };
    expect((await clients.callback(quiet.id, quiet.token, ephemeral)).status).toBe(204);
    expect(standIn.interactionResponses).toEqual([
      { interaction_id: quiet.id, type: 4, data: ephemeral.data },
    ]);
    expect(standIn.history(CHANNEL)).toEqual([]);

    const loud = run("ping");
    const update = clients.callback(loud.id, loud.token, {
      type: InteractionResponseType.UpdateMessage,
      data: { content: "no message to update" },
    });
    await expect(update).rejects.toMatchObject({ status: 400, code: 50035 });
    const tooLong = clients.callback(loud.id, loud.token, {
      type: InteractionResponseType.ChannelMessageWithSource,
      data: { content: "x".repeat(2001) },
    });
    await expect(tooLong).rejects.toMatchObject({ status: 400, code: 50035 });
    const pong = {
      type: InteractionResponseType.ChannelMessageWithSource,
      data: { content: "Pong" },
    };
    expect((await clients.callback(loud.id, loud.token, pong)).status).toBe(204);
    const [message] = standIn.history(CHANNEL);
    expect(message).toMatchObject({
      content: "Pong",
      author: { id: standIn.botUserId, bot: true },
      type: MessageType.ChatInputCommand,
      interaction_metadata: { id: loud.id, type: 2, user: { id: USER.id } },
    });
    expect((await messageCreate(message?.id ?? "")).d.content).toBe("Pong");

    // Deferred, then the answer comes as an edit of @original.
    const slow = run("ping");
    const defer = { type: InteractionResponseType.DeferredChannelMessageWithSource };
    expect((await clients.callback(slow.id, slow.token, defer)).status).toBe(204);
    const edited = (await new REST({ api: standIn.apiBase, version: "10" }).patch(
      Routes.webhookMessage(standIn.botUserId, slow.token, "@original"),
      { body: { content: "Pong, at last" }, auth: false },
    )) as APIMessage;
    expect(edited.content).toBe("Pong, at last");
    expect(standIn.history(CHANNEL).map((m) => m.content)).toEqual(["Pong", "Pong, at last"]);
  });

  it("sends an autocomplete as type 4 and takes only a type 8 answer with valid choices", async () => {
    await register([weather]);
    const { manager, received } = gatewayClient();
    await manager.connect();
    const typing = standIn.autocomplete({
      name: "weather",
      options: { city: "Par", days: 2 },
      focused: "city",
      user: USER,
      channel_id: CHANNEL,
      guild_id: GUILD,
    });
    const { d } = await received(GatewayDispatchEvents.InteractionCreate);
    expect(d).toMatchObject({
      id: typing.id,
      type: InteractionType.ApplicationCommandAutocomplete,
      data: {
        name: "weather",
        options: [
          { name: "city", type: 3, value: "Par", focused: true },
          { name: "days", type: 4, value: 2 },
        ],
      },
    });
    const message = {
      type: InteractionResponseType.ChannelMessageWithSource,
      data: { content: "no" },
    };
    await expect(clients.callback(typing.id, typing.token, message)).rejects.toMatchObject({
      status: 400,
      code: 50035,
    });
    const many = Array.from({ length: 26 }, (_, n) => ({ name: `c${n}`, value: `c${n}` }));
    const result = InteractionResponseType.ApplicationCommandAutocompleteResult;
    const overflow = clients.callback(typing.id, typing.token, {
      type: result,
      data: { choices: many },
    });
    await expect(overflow).rejects.toMatchObject({ status: 400, code: 50035 });
    const wrongValue = clients.callback(typing.id, typing.token, {
      type: result,
      data: { choices: [{ name: "Paris", value: 75 }] },
    });
    await expect(wrongValue).rejects.toMatchObject({ status: 400, code: 50035 });
    const choices = [
      { name: "Paris", value: "paris" },
      { name: "Parma", value: "parma" },
    ];
    const answer = await clients.callback(typing.id, typing.token, {
      type: result,
      data: { choices },
    });
    expect(answer.status).toBe(204);
    expect(standIn.interactionResponses).toEqual([
      { interaction_id: typing.id, type: 8, data: { choices } },
    ]);

    const focusDays = { name: "weather", options: { city: "Paris", days: 2 }, focused: "days" };
    expect(() =>
      standIn.autocomplete({ ...focusDays, user: USER, channel_id: CHANNEL, guild_id: GUILD }),
    ).toThrow("isn't an autocomplete option");
  });
});
