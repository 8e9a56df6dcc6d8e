import { readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Offer } from "../../runner/services/actions/offers.ts";
import {
  bindElf,
  chatWorker,
  type ListedGate,
  lazyServer,
  listedGates,
  until,
} from "../support/chat-turns.ts";
import { DiscordStandIn } from "../support/discord-stand-in.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { SlackStandIn } from "../support/slack-stand-in.ts";

const docker = await testDocker();

const TOKEN = "discord-approvals-test-token";
const GUILD = "810000000000000009";
const ROOM = "820000000000000009";
const ROOM_ID = `discord-${GUILD}-${ROOM}`;
const ANA = { id: "830000000000000001", username: "ana" };
const BEN = { id: "830000000000000002", username: "ben" };

type GateLine = ListedGate;

describe.skipIf(!docker)("approvals from chat (Discord)", () => {
  let model: ModelServer;
  let discord: DiscordStandIn;
  let deployment: RosterRoot;
  const server = lazyServer(() => deployment);

  const gates = (): Promise<GateLine[]> => listedGates(deployment, true);
  /** The offer message for a gate: the bot's message whose buttons name it. */
  const offerFor = (gate: string) =>
    discord
      .history(ROOM)
      .find((m) => JSON.stringify(m.components ?? []).includes(`roster-gate:${gate}:approve`));
  const ask = async (text: string): Promise<string> => {
    const known = new Set((await gates()).map((g) => g.id));
    discord.post({
      channel_id: ROOM,
      guild_id: GUILD,
      author: ANA,
      content: `<@${discord.botUserId}> ask: ${text}`,
      mentions: [discord.botUserId],
    });
    const gate = await until(
      async () => (await gates()).find((g) => !known.has(g.id) && g.state === "pending"),
      "the gate",
    );
    await until(() => offerFor(gate.id), "the offer in the room");
    return gate.id;
  };
  /** When the server recorded that a gate's offer lapses. */
  const offerExpiry = (gate: string) =>
    (
      JSON.parse(readFileSync(join(deployment.paths.state, "chat-offers.json"), "utf8")) as Offer[]
    ).find((offer) => offer.gate_id === gate)?.expires_at;
  const auditLines = () =>
    readFileSync(join(deployment.paths.audit, "decisions.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  const responsesTo = (interaction: string) =>
    discord.interactionResponses.filter((r) => r.interaction_id === interaction);

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    model.play(...Array.from({ length: 30 }, () => chatWorker("discord_send")));
    discord = await DiscordStandIn.start({
      token: TOKEN,
      channels: [ROOM],
      users: [ANA.id, BEN.id],
      heartbeatInterval: 1_000,
    });
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "APPROVALS-KEY",
      extraOrg: [
        '[[action]]\nname = "message-user"\nexecutor = "message-user"\n',
        // offers stand an hour here; the test of a lapsed offer shortens it for its own
        `[chat]\napprovers = ["discord:${ANA.id}"]\noffer_ttl_mins = 60\n`,
      ].join("\n"),
    });
    await bindElf(deployment, {
      discord: {
        token: TOKEN,
        api_base: discord.apiBase,
      },
    });
    expect((await deployment.roster(["channel", "trust", ROOM_ID])).code).toBe(0);
    await server.start();
  });
  afterAll(async () => {
    await server.stop();
    await discord?.stop();
    await model?.stop();
    await deployment?.cleanup();
  });

  it("offers a gate with exactly what would be sent; a non-approver is refused privately and audited; an approver's press runs it once", async () => {
    const gate = await ask("the deploy finished");
    const offer = offerFor(gate);
    expect(offer?.content).toContain("the deploy finished");
    expect(offer?.content).toContain(`(${gate})`);

    const refused = discord.press({
      message_id: offer?.id ?? "",
      custom_id: `roster-gate:${gate}:approve`,
      user: BEN,
    });
    await until(() => responsesTo(refused.id).some((r) => r.type === "followup"), "the refusal");
    const followup = responsesTo(refused.id).find((r) => r.type === "followup");
    expect(String(followup?.data?.content)).toContain("not one of the approvers");
    expect(Number(followup?.data?.flags) & 64).toBe(64);
    expect((await gates()).find((g) => g.id === gate)?.state).toBe("pending");
    const refusals = auditLines().filter(
      (line) => line.kind === "action" && line.disposition === "refused",
    );
    expect(refusals.at(-1)).toMatchObject({ gate_id: gate, decided_by: `discord:${BEN.id}` });

    // two presses at once, as two quick clicks would be: the gate runs once
    const press = () =>
      discord.press({
        message_id: offer?.id ?? "",
        custom_id: `roster-gate:${gate}:approve`,
        user: ANA,
      });
    const clicks = [press(), press()];
    const answered = (id: string) =>
      responsesTo(id).some((r) => r.type === "edit_original" || r.type === "followup");
    await until(() => clicks.every((click) => answered(click.id)), "both presses answered");
    const edits = clicks.flatMap((click) =>
      responsesTo(click.id).filter((r) => r.type === "edit_original"),
    );
    expect(edits.length).toBeGreaterThanOrEqual(1);
    expect(String(edits[0]?.data?.content)).toContain(`approved and sent (by discord:${ANA.id})`);
    expect(edits[0]?.data?.components).toEqual([]);
    expect((await gates()).find((g) => g.id === gate)).toMatchObject({
      state: "executed",
      decided_by: `discord:${ANA.id}`,
    });
    const inbox = await deployment.roster(["inbox", "--json"]);
    expect(inbox.stdout.split("the deploy finished").length - 1).toBe(1);
  });

  it("an offer past its time is refused; the gate stays pending for the desk", async () => {
    // the server reads [chat] as it offers: offers made from now on stand 0.6 seconds
    const org = join(deployment.paths.config, "org.toml");
    const text = await readFile(org, "utf8");
    // the line beforeAll wrote, not the commented example above it
    const ttl = /^offer_ttl_mins = 60$/m;
    expect(text).toMatch(ttl);
    await writeFile(org, text.replace(ttl, "offer_ttl_mins = 0.01"));
    const gate = await ask("a late note");
    const offer = offerFor(gate);
    // pressed once the offer's recorded time has passed, not after a guessed sleep
    const recorded = offerExpiry(gate);
    expect(recorded, "the offer's recorded expiry").toBeDefined();
    const expiresAt = Date.parse(recorded ?? "");
    expect(expiresAt - Date.now(), "the shortened offer_ttl_mins applies").toBeLessThan(60_000);
    await until(() => Date.now() > expiresAt, "the offer to lapse");
    const late = discord.press({
      message_id: offer?.id ?? "",
      custom_id: `roster-gate:${gate}:deny`,
      user: ANA,
    });
    await until(() => responsesTo(late.id).some((r) => r.type === "followup"), "the answer");
    expect(
      String(responsesTo(late.id).find((r) => r.type === "followup")?.data?.content),
    ).toContain("this offer expired");
    expect((await gates()).find((g) => g.id === gate)?.state).toBe("pending");
    const denied = await deployment.roster(["approvals", "deny", gate]);
    expect(denied.code, denied.stderr).toBe(0);
  });
});

describe.skipIf(!docker)("approvals from chat (Slack)", () => {
  const ROOM = "C0APPROV";
  const ROOM_ID = `slack-t0roster-${ROOM.toLowerCase()}`;
  const ANA = "U0ANA001";
  const BEN = "U0BEN002";
  let model: ModelServer;
  let slack: SlackStandIn;
  let deployment: RosterRoot;
  const server = lazyServer(() => deployment);

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    model.play(...Array.from({ length: 10 }, () => chatWorker("slack_send")));
    slack = await SlackStandIn.start({
      botToken: "xoxb-approvals",
      appToken: "xapp-approvals",
      channels: [ROOM],
      users: [ANA, BEN],
    });
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "SLACK-APPROVALS-KEY",
      extraOrg: [
        '[[action]]\nname = "message-user"\nexecutor = "message-user"\n',
        `[chat]\napprovers = ["slack:${ANA}"]\n`,
      ].join("\n"),
    });
    await bindElf(deployment, {
      slack: {
        bot_token: "xoxb-approvals",
        app_token: "xapp-approvals",
        api_base: slack.apiBase,
      },
    });
    expect((await deployment.roster(["channel", "trust", ROOM_ID])).code).toBe(0);
    await server.start();
  });
  afterAll(async () => {
    await server.stop();
    await slack?.stop();
    await model?.stop();
    await deployment?.cleanup();
  });

  it("a non-approver gets an ephemeral refusal; an approver's press runs the gate and replaces the offer", async () => {
    slack.post({ channel: ROOM, user: ANA, text: `<@${slack.botUserId}> ask: build is green` });
    const offer = await until(
      () => slack.history(ROOM).find((m) => JSON.stringify(m.blocks ?? []).includes(":approve")),
      "the offer",
    );
    const gate = /roster-gate:(g-[0-9a-f]+):approve/.exec(JSON.stringify(offer.blocks))?.[1] ?? "";
    expect(offer.text).toContain("build is green");

    slack.press({
      channel: ROOM,
      message_ts: offer.ts,
      action_id: `roster-gate:${gate}:approve`,
      user: BEN,
    });
    const refusal = await until(
      () => slack.ephemerals.find((e) => e.user === BEN),
      "the ephemeral refusal",
    );
    expect(refusal.text).toContain("not one of the approvers");

    slack.press({
      channel: ROOM,
      message_ts: offer.ts,
      action_id: `roster-gate:${gate}:approve`,
      user: ANA,
    });
    const replaced = await until(
      () => slack.responses.find((r) => JSON.stringify(r.body).includes("approved and sent")),
      "the offer to be replaced",
    );
    expect(replaced.body).toMatchObject({ replace_original: true });
    const inbox = await deployment.roster(["inbox", "--json"]);
    expect(inbox.stdout.split("build is green").length - 1).toBe(1);
  });
});
