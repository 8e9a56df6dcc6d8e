import { readFileSync } from "node:fs";
import { join } from "node:path";
import { InteractionResponseType, MessageFlags } from "discord-api-types/v10";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workerSubject } from "../../runner/ground/config/subject.ts";
import { groupOf } from "../../runner/records/channels/links.ts";
import { readGate } from "../../runner/records/gates/gate-record.ts";
import { pauseOf } from "../../runner/records/workers/pause.ts";
import { type Gate, newGateId, writeGate } from "../../runner/services/actions/gates.ts";
import { discordCommands } from "../../runner/services/chat/discord/slash.ts";
import { bindElf, lazyServer, until } from "../support/chat-turns.ts";
import { DiscordStandIn, type InteractionResponse } from "../support/discord-stand-in.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * Discord application commands under `roster server`: registered in the
 * guild org.toml names when the listener connects (and in no other guild the
 * bot is in), run as INTERACTION_CREATE, answered
 * by the host's command core through the interaction's callback — the
 * asker's alone unless the channel itself changed — and completed as typed.
 */
const docker = await testDocker();

const TOKEN = "discord-commands-test-token";
const GUILD = "810000000000000021";
const ROOM = "820000000000000021";
const ROOM_ID = `discord-${GUILD}-${ROOM}`;
/** A guild the bot was invited to that org.toml doesn't name: anyone's, where they manage everything. */
const STRANGE_GUILD = "810000000000000029";
const STRANGE_ROOM = "820000000000000029";
const ADMIN_ROLE = "840000000000000021";
const ANA = { id: "830000000000000021", username: "ana" };
const BEN = { id: "830000000000000022", username: "ben" };
const CAL = { id: "830000000000000023", username: "cal" };
const DAN = { id: "830000000000000024", username: "dan" };
/** Discord's MANAGE_GUILD permission bit. */
const MANAGE_GUILD = 1n << 5n;

describe.skipIf(!docker)("Discord application commands", () => {
  let model: ModelServer;
  let discord: DiscordStandIn;
  let deployment: RosterRoot;
  const server = lazyServer(() => deployment);

  const responses = (id: string): InteractionResponse[] =>
    discord.interactionResponses.filter((response) => response.interaction_id === id);
  /** Runs a command in the room and waits for its first answer. */
  const run = async (
    user: { id: string; username: string },
    name: string,
    options: Record<string, string | Record<string, string>>,
    member: { roles?: string[]; permissions?: bigint } = {},
    where: { channel_id: string; guild_id?: string } = { channel_id: ROOM, guild_id: GUILD },
  ) => {
    const { id } = discord.command({ name, options, user, ...where, ...member });
    const first = await until(() => responses(id)[0], `the answer to /${name}`, 20_000);
    return { id, first, content: String(first.data?.content ?? "") };
  };
  const pendingGate = (): Gate => {
    const gate: Gate = {
      id: newGateId(),
      worker: workerSubject("elf"),
      intent: "purpose",
      executor: "purpose",
      payload: { channel_id: ROOM_ID, purpose: "Release notes.\n" },
      rationale: "the room asked for one",
      run_id: null,
      task_id: null,
      state: "pending",
      filed_at: new Date().toISOString(),
    };
    writeGate(deployment.paths, gate);
    return gate;
  };

  /** The commands in the strange guild, as an earlier registration of this bot left them. */
  const registerStale = async () => {
    const put = await fetch(
      `${discord.apiBase}/v10/applications/${discord.botUserId}/guilds/${STRANGE_GUILD}/commands`,
      {
        method: "PUT",
        headers: { authorization: `Bot ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(discordCommands()),
      },
    );
    expect(put.status).toBe(200);
  };

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    discord = await DiscordStandIn.start({
      token: TOKEN,
      users: [ANA.id, BEN.id, CAL.id, DAN.id],
      channels: [ROOM, STRANGE_ROOM],
      // READY lists the strange guild first: once GUILD has its commands, it was passed over
      guilds: [STRANGE_GUILD, GUILD],
      heartbeatInterval: 1_000,
    });
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "DISCORD-COMMANDS-KEY",
      extraOrg: `[chat]\napprovers = ["discord:${ANA.id}"]\nadmins = ["discord:${DAN.id}"]\n\n[chat.from_platform]\ndiscord_guilds = ["${GUILD}"]\ndiscord_roles = ["${ADMIN_ROLE}"]\ndiscord_manage_server = true\n`,
    });
    await bindElf(deployment, {
      discord: {
        token: TOKEN,
        api_base: discord.apiBase,
      },
    });
    await registerStale();
    await server.start();
    await until(() => discord.registeredCommands(GUILD).length > 0, "the commands registered");
  });
  afterAll(async () => {
    await server.stop();
    await discord?.stop();
    await model?.stop();
    await deployment?.cleanup();
  });

  it("registers every command in the guild org.toml names, its parts as subcommands", () => {
    const names = discord.registeredCommands(GUILD).map((command) => command.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "approvals",
        "task",
        "runs",
        "channel",
        "purpose",
        "worker",
        "identity",
      ]),
    );
    const approvals = discord.registeredCommands(GUILD).find((one) => one.name === "approvals");
    expect(approvals?.options?.map((one) => one.name)).toEqual(["ls", "show", "approve", "deny"]);
  });

  it("says in the server's log where commands are taken", async () => {
    await until(
      () =>
        server
          .log()
          .includes(`commands are taken in guilds ${GUILD} ([chat.from_platform] discord_guilds)`),
      "the listener's line on where commands are taken",
    );
    expect(server.log()).toContain("1 other guild(s) the bot is in get none");
  });

  it("in a DM with the bot the same commands are there, registered globally for DMs only", async () => {
    const global = discord.registeredCommands();
    expect(global.map((one) => one.name)).toContain("identity");
    expect(global.every((one) => JSON.stringify(one.contexts) === "[1]")).toBe(true);
    const { id } = discord.command({
      name: "identity",
      user: ANA,
      channel_id: discord.dmChannelOf(ANA.id),
    });
    const answer = await until(() => responses(id)[0], "the answer in the DM", 20_000);
    expect(String(answer.data?.content)).toMatch(
      /^you: discord:830000000000000021, approver by org\.toml \[chat\] approvers$/m,
    );
  });

  it("an approver approves a proposal from the command; the desk's one path runs it, the answer is theirs alone", async () => {
    const gate = pendingGate();
    const listed = await run(ANA, "approvals", { ls: {} });
    expect(listed.first.type).toBe(InteractionResponseType.ChannelMessageWithSource);
    expect(listed.first.data?.flags).toBe(MessageFlags.Ephemeral);
    expect(listed.content).toContain(gate.id);
    const approved = await run(ANA, "approvals", { approve: { id: gate.id, note: "fine" } });
    expect(approved.content).toBe(`${gate.id} approved and executed`);
    expect(readGate(deployment.paths, "elf", gate.id)).toMatchObject({
      state: "executed",
      decided_by: `discord:${ANA.id}`,
      decision_note: "fine",
    });
    expect(
      readFileSync(join(deployment.paths.data, "channels", ROOM_ID, "purpose.md"), "utf8"),
    ).toBe("Release notes.\n");
    // nobody else saw it: nothing of it is in the room
    expect(discord.history(ROOM).some((message) => message.content.includes(gate.id))).toBe(false);
  });

  it("someone Discord vouches for only where org.toml says: a listed role, Manage Server; else refused by the rule", async () => {
    const refused = await run(BEN, "worker", { pause: { name: "elf" } });
    expect(refused.content).toBe(
      `Not done: /worker pause this needs an admin: discord:${BEN.id} is in neither org.toml [chat] admins nor [chat] approvers, and [chat.from_platform] vouches for nothing they have.`,
    );
    const role = await run(BEN, "worker", { pause: { name: "elf" } }, { roles: [ADMIN_ROLE] });
    expect(role.content).toMatch(/^elf is paused \(by discord:830000000000000022/);
    const manager = await run(
      CAL,
      "worker",
      { resume: { name: "elf" } },
      { permissions: MANAGE_GUILD },
    );
    expect(manager.content).toBe("elf may run again");
  });

  it("a guild org.toml doesn't name gets no commands; one still offered there is refused unjudged, Manage Server or not", async () => {
    // the earlier registration made before the server started is gone
    expect(discord.registeredCommands(STRANGE_GUILD)).toEqual([]);
    // one made while it runs (another deployment of the same bot) still offers them there
    await registerStale();
    const strange = { channel_id: STRANGE_ROOM, guild_id: STRANGE_GUILD };
    const paused = await run(
      BEN,
      "worker",
      { pause: { name: "elf" } },
      { roles: [ADMIN_ROLE], permissions: MANAGE_GUILD },
      strange,
    );
    expect(paused.first.data?.flags).toBe(MessageFlags.Ephemeral);
    expect(paused.content).toBe(
      `Not done: this bot takes commands only in the servers its org.toml names ([chat.from_platform] discord_guilds), and ${STRANGE_GUILD} is not one.`,
    );
    expect(pauseOf(deployment.paths, "elf")).toBeUndefined();
    // not even an admin by org.toml is answered there: the room is someone else's
    const trusted = await run(DAN, "channel", { trust: {} }, {}, strange);
    expect(trusted.content).toMatch(/^Not done: this bot takes commands only in the servers/);
  });

  it("a DM can't be linked into another person's conversation from chat", async () => {
    const { id } = discord.command({
      name: "channel",
      options: { link: { other: `discord-dm-${ANA.id}` } },
      user: DAN,
      channel_id: discord.dmChannelOf(DAN.id),
    });
    const answer = await until(() => responses(id)[0], "the answer to /channel link", 20_000);
    expect(String(answer.data?.content)).toBe(
      `Not done: /channel link discord-dm-${ANA.id} is not yours: from chat only surfaces you are the person in link (the operator links others at the terminal, roster channel link).`,
    );
    expect(groupOf(deployment.paths, `discord-dm-${ANA.id}`)).toBeUndefined();
  });

  it("a change to the channel is said to the room; reading it is not", async () => {
    const trusted = await run(CAL, "channel", { trust: {} }, { permissions: MANAGE_GUILD });
    expect(trusted.first.data?.flags ?? 0).toBe(0);
    expect(trusted.content).toMatch(/is trusted/);
    await until(
      () => discord.history(ROOM).find((message) => message.content === trusted.content),
      "the answer in the room",
    );
    const shown = await run(ANA, "channel", { show: {} });
    expect(shown.first.data?.flags).toBe(MessageFlags.Ephemeral);
    expect(shown.content).toMatch(/^trusted {3}yes$/m);
  });

  it("a proposal's id completes as it is typed, for an approver only", async () => {
    const gate = pendingGate();
    const typed = (user: { id: string; username: string }) => {
      const { id } = discord.autocomplete({
        name: "approvals",
        options: { approve: { id: gate.id.slice(0, 4) } },
        focused: "id",
        user,
        channel_id: ROOM,
        guild_id: GUILD,
      });
      return until(() => responses(id)[0], "the choices", 20_000);
    };
    const offered = await typed(ANA);
    expect(offered.type).toBe(InteractionResponseType.ApplicationCommandAutocompleteResult);
    const choices = (offered.data?.choices ?? []) as Array<{ name: string; value: string }>;
    expect(choices.map((choice) => choice.value)).toContain(gate.id);
    const none = await typed(BEN);
    expect(none.data?.choices).toEqual([]);
  });
});
