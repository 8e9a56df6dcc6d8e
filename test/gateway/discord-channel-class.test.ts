import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordClass } from "../../runner/records/channels/surface-class.ts";
import { waitForDecision } from "../support/audit.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { viaProxy } from "../support/proxy-clients.ts";

/**
 * A Discord connection's edge naming a class of rooms, through the real
 * gateway: a box's call to a channel's path is judged by the class the bot's
 * listener recorded for that channel from Discord's permissions. A public
 * edge reaches a public room, not a private one nor one whose class was
 * never read; a private edge the other way round. Discord itself is not
 * reached (nothing listens where discord.com resolves): the decision is the
 * gateway's, on its audit line.
 */
const GUILD = "1015381923845000041";
const HALL = "1451951375079000041";
const STAFF = "1451951375079000042";
const UNREAD = "1451951375079000043";

let env: GatewayEnv;
const before = process.env.ROSTER_ROOT;

beforeAll(async () => {
  env = await startGatewayEnv('[gateway]\nresolve = { "discord.com" = "127.0.0.1" }\n');
  // the deployment whose recorded classes the door reads, as a server's own environment names it
  process.env.ROSTER_ROOT = env.root;
  await recordClass(env.paths, `discord-${GUILD}-${HALL}`, "public");
  await recordClass(env.paths, `discord-${GUILD}-${STAFF}`, "private");
  for (const worker of ["pub", "priv"]) {
    await mkdir(join(env.paths.config, "workers", worker), { recursive: true });
    await writeFile(
      join(env.paths.config, "workers", worker, "worker.toml"),
      `name = "${worker}"\n`,
    );
  }
  await mkdir(join(env.paths.config, "connections"), { recursive: true });
  await env.writeVault("discord", { token: "bot-token" });
  await writeFile(
    join(env.paths.config, "connections/discord.toml"),
    'provider = "discord"\nhosts = ["discord.com"]\n\n[grant.pub]\nsurfaces = ["public"]\n\n[grant.priv]\nsurfaces = ["private"]\n',
  );
  // the gateway polls for changes; give it past its check interval
  await new Promise((resolve) => setTimeout(resolve, 600));
});
afterAll(async () => {
  if (before === undefined) delete process.env.ROSTER_ROOT;
  else process.env.ROSTER_ROOT = before;
  await env?.cleanup();
});

const ca = () => readFileSync(join(env.paths.ca, "ca.crt"), "utf8");

/** What the door decided for one worker's post into one channel, from its audit line. */
async function decided(worker: string, channel: string): Promise<[unknown, unknown]> {
  const token = await env.token(worker);
  const path = `/api/v10/channels/${channel}/messages`;
  await viaProxy(proxyUrlFor(env, token), `https://discord.com${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"content":"hi"}',
    ca: ca(),
  }).catch(() => undefined);
  const line = await waitForDecision(
    env.paths.audit,
    (one) => one.request.path === path && one.subject === `org/${worker}`,
  );
  return [line.verdict, line.rule];
}

describe("a Discord edge's public and private classes at the door", () => {
  it("a public edge reaches a public room's path, and refuses a private or unread room's", async () => {
    expect(await decided("pub", HALL)).toEqual(["allow", "connection:discord:class-public"]);
    expect(await decided("pub", STAFF)).toEqual([
      "deny",
      "connection:discord:deny-unscoped-channels",
    ]);
    expect(await decided("pub", UNREAD)).toEqual([
      "deny",
      "connection:discord:deny-unscoped-channels",
    ]);
  });

  it("a private edge reaches the private room only", async () => {
    expect(await decided("priv", STAFF)).toEqual(["allow", "connection:discord:class-private"]);
    expect((await decided("priv", HALL))[0]).toBe("deny");
  });
});
