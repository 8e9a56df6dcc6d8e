import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../runner/boundary/gateway/doors/identity.ts";
import { classAdmits, serverOf, surfaceOf } from "../../runner/records/channels/channel-class.ts";
import { submitAction } from "../support/action-host.ts";
import { waitForDecision } from "../support/audit.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * Grants and actions limited to a class of channels, through the real
 * gateway and action host: a run is judged by the channels its input came
 * from (written into its token when it starts), so a run started in a
 * guild's room may reach what the grant allows and the same worker's run
 * started in a DM, or from no channel, may not.
 */
const GUILD = "810000000000000041";
const ROOM = `discord-${GUILD}-820000000000000041`;
const OTHER_ROOM = "discord-810000000000000099-820000000000000099";
const DM = "discord-dm-830000000000000041";

let env: GatewayEnv;
let plain: Upstream;
const token = (runId: string, origins: string[]) =>
  mintToken(env.paths.identity, { subject: "org/elf", runId, origins });
const fetchVia = (tokenValue: string) =>
  viaProxy(proxyUrlFor(env, tokenValue), `http://plain.test:${plain.port}/report`);

beforeAll(async () => {
  plain = await Upstream.start({ tls: false });
  env = await startGatewayEnv(`
[gateway]
resolve = { "plain.test" = "127.0.0.1" }

[[grant]]
name = "reports-from-the-guild"
verdict = "allow"
match = { host = "plain.test", protocol = "http" }
channels = { servers = ["discord-${GUILD}"], surfaces = ["room"] }

[[action]]
name = "note-in-dm"
executor = "message-user"
trust = "auto"
channels = { surfaces = ["dm"] }
`);
  await mkdir(join(env.paths.config, "workers", "elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers", "elf", "worker.toml"), 'name = "elf"\n');
});
afterAll(async () => {
  await env?.cleanup();
  await plain?.stop();
});

describe("a class of channels", () => {
  it("is read from a channel id: its surface and its server", () => {
    expect(
      [ROOM, DM, "term-ann-elf", "slack-t0abc-dm-u0x", "slack-t0abc-c0room"].map(surfaceOf),
    ).toEqual(["room", "dm", "term", "dm", "room"]);
    expect([ROOM, DM, "slack-t0abc-dm-u0x", "term-ann-elf"].map(serverOf)).toEqual([
      `discord-${GUILD}`,
      undefined,
      "slack-t0abc",
      undefined,
    ]);
    const rooms = { surfaces: ["room" as const] };
    expect(classAdmits(rooms, [ROOM])).toBe(true);
    expect(classAdmits(rooms, [ROOM, DM])).toBe(false);
    expect(classAdmits(rooms, [])).toBe(false);
    expect(classAdmits({ surfaces: ["none" as const] }, [])).toBe(true);
    expect(classAdmits(rooms, undefined)).toBe(false);
    expect(classAdmits(rooms, ["task:t-gone"])).toBe(false);
  });

  it("lets a run started in the guild's room through and refuses the same worker's run from a DM, naming the rule", async () => {
    const allowed = await fetchVia(await token("run-in-room", [ROOM]));
    expect(allowed.status).toBe(200);
    const fromDm = await fetchVia(await token("run-in-dm", [DM]));
    expect(fromDm.status).toBe(403);
    const decision = await waitForDecision(env.paths.audit, (line) => line.run_id === "run-in-dm");
    expect(decision.verdict).toBe("deny");
    // the line keeps the channel it was judged from, so a replay can judge it again
    expect(decision.origins).toEqual([DM]);
    const said =
      /"reports-from-the-guild" allows this only for runs started from servers discord-810000000000000041; surfaces room; this run started from discord-dm-830000000000000041/;
    expect((JSON.parse(fromDm.body) as { hint?: string }).hint).toMatch(said);
    expect((await fetchVia(await token("run-elsewhere", [OTHER_ROOM]))).status).toBe(403);
    expect((await fetchVia(await token("run-from-cli", []))).status).toBe(403);
  });

  it("admits a proposal only from a run its action's class covers", async () => {
    const note = { intent: "note-in-dm", payload: { text: "done" }, rationale: "tell them" };
    const inDm = await submitAction(env, await token("run-dm-note", [DM]), note);
    expect(inDm.status).toBe(200);
    const inRoom = await submitAction(env, await token("run-room-note", [ROOM]), note);
    expect(inRoom.status).toBe(403);
    expect(inRoom.body.reason).toBe(
      `the action grant "note-in-dm" is only for runs started from surfaces dm; this run started from ${ROOM}`,
    );
  });
});
