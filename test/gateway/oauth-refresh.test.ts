import { readFileSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { makeGatewayRoot, startGatewayProcess } from "../support/gateway-process.ts";
import { CLIENT, OAuthServer } from "../support/oauth-server.ts";
import { viaProxy } from "../support/proxy-clients.ts";

/**
 * OAuth credentials that refresh, through the real gateway against a real
 * OAuth 2.0 server (the library, over TLS): the gateway swaps an access token
 * about to expire for a new one once, however many requests wait for it, and
 * a refresh the provider refuses is a legible 503 naming the credential.
 */
let oauth: OAuthServer;
let env: GatewayEnv;
let token: string;

const boxCa = () => readFileSync(join(env.paths.ca, "ca.crt"), "utf8");
const vault = (name: string) =>
  JSON.parse(readFileSync(join(env.paths.vault, `${name}.json`), "utf8")) as Record<
    string,
    unknown
  >;
const credentialAudit = () =>
  readFileSync(join(env.paths.audit, "credentials.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);

async function storeOAuth(
  name: string,
  tokens: { access: string; refresh: string; expires: number },
) {
  await env.writeVault(name, {
    access: tokens.access,
    refresh: tokens.refresh,
    token_url: `https://auth.test:${oauth.port}/token`,
    client_id: CLIENT.id,
    client_secret: CLIENT.secret,
  });
  // writeVault takes strings; the expiry is a number, as the gateway writes it
  const file = join(env.paths.vault, `${name}.json`);
  await writeFile(file, JSON.stringify({ ...vault(name), expires: tokens.expires }), {
    mode: 0o600,
  });
}

const ORG = (caFile: string) => `
[gateway]
upstream_ca = ["${caFile}"]
resolve = { "auth.test" = "127.0.0.1", "api.test" = "127.0.0.1" }

[[grant]]
name = "crm-api"
verdict = "allow"
match = { host = "api.test", pathPrefix = "/api/crm" }
inject = { credential = "crm", headers = [{ header = "authorization", value = "Bearer {access}" }] }

[[grant]]
name = "mail-api"
verdict = "allow"
match = { host = "api.test", pathPrefix = "/api/mail" }
inject = { credential = "mail", headers = [{ header = "authorization", value = "Bearer {access}" }] }
`;

const call = (path: string) =>
  viaProxy(proxyUrlFor(env, token), `https://api.test:${oauth.port}${path}`, { ca: boxCa() });

beforeAll(async () => {
  oauth = await OAuthServer.start(["auth.test", "api.test"]);
  env = await startGatewayEnv("");
  await writeFile(join(env.root, "oauth-ca.pem"), oauth.certificate.caPem);
  await env.writeOrg(ORG(join(env.root, "oauth-ca.pem")));
  await env.restart(); // upstream CAs are read at start
  token = await env.token("elf", "run-oauth-1");
}, 30_000);
afterAll(async () => {
  await env?.cleanup();
  await oauth?.stop();
});

describe("an OAuth credential in the vault", () => {
  it("is refreshed once, a minute before it expires, however many requests are waiting", async () => {
    // signed in a minute and a bit ago: the token lives 63 s more
    const first = await oauth.issue(63_000);
    await storeOAuth("crm", first);
    for (let i = 0; i < 3; i++) expect((await call(`/api/crm/early-${i}`)).status).toBe(200);
    expect(oauth.tokenRequests).toBe(0);
    expect(oauth.served.every((access) => access === first.access)).toBe(true);

    // mid-run it comes within a minute of its expiry, and 100 requests arrive at once
    await new Promise((resolve) => setTimeout(resolve, first.expires - 60_000 - Date.now() + 200));
    const replies = await Promise.all(
      Array.from({ length: 100 }, (_, i) => call(`/api/crm/burst-${i}`)),
    );
    expect(replies.map((reply) => reply.status)).toEqual(Array(100).fill(200));
    expect(oauth.tokenRequests).toBe(1);

    const stored = vault("crm");
    expect(stored.access).not.toBe(first.access);
    expect(stored.refresh).not.toBe(first.refresh); // the server rotated it
    expect(stored.client_secret).toBe(CLIENT.secret);
    expect(Number(stored.expires)).toBeGreaterThan(Date.now() + 3000_000);
    // every request of the burst carried the new token, and the provider accepted it
    expect(oauth.served.slice(-100)).toEqual(Array(100).fill(stored.access));

    const audit = credentialAudit();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      credential: "crm",
      outcome: "refreshed",
      expires: stored.expires,
    });
    const written = readFileSync(join(env.paths.audit, "credentials.jsonl"), "utf8");
    for (const secret of [
      first.access,
      first.refresh,
      stored.access,
      stored.refresh,
      CLIENT.secret,
    ])
      expect(written).not.toContain(String(secret));

    // fresh now: later requests go with it, and nobody asks the endpoint again
    expect((await call("/api/crm/after")).status).toBe(200);
    expect(oauth.tokenRequests).toBe(1);
  }, 60_000);

  it("whose refresh token was revoked is a 503 naming it, and nothing reaches the API", async () => {
    const tokens = await oauth.issue(-1000); // already expired
    oauth.revoke(tokens.refresh);
    await storeOAuth("mail", tokens);
    const before = { requests: oauth.tokenRequests, served: oauth.served.length };

    const reply = await call("/api/mail/inbox");
    expect(reply.status).toBe(503);
    expect(reply.headers["x-roster-verdict"]).toBe("credential-outage");
    expect(reply.headers["x-roster-rule"]).toBe("mail-api");
    const body = JSON.parse(reply.body) as { error: string; rule: string; hint: string };
    expect(body.error).toContain('credential "mail" could not be refreshed');
    expect(body.error).toContain("invalid_grant");
    expect(body.rule).toBe("mail-api");
    expect(body.hint).toContain("data/vault/mail.json");
    expect(oauth.tokenRequests).toBe(before.requests + 1);
    expect(oauth.served.length).toBe(before.served);

    // the refusal is remembered for a while: the provider is not asked on every request
    expect((await call("/api/mail/inbox")).status).toBe(503);
    expect(oauth.tokenRequests).toBe(before.requests + 1);
    expect(vault("mail").refresh).toBe(tokens.refresh); // left as it was for the operator
    expect(credentialAudit().at(-1)).toMatchObject({ credential: "mail", outcome: "failed" });
    expect(JSON.stringify(credentialAudit())).not.toContain(tokens.refresh);
  }, 30_000);

  it("is whole after the gateway is killed in the middle of refreshing it: the old token or the new", async () => {
    const { root, paths } = await makeGatewayRoot("");
    const caFile = join(root, "oauth-ca.pem");
    await writeFile(caFile, oauth.certificate.caPem);
    await writeFile(join(paths.config, "org.toml"), ORG(caFile));
    await mkdir(paths.vault, { recursive: true, mode: 0o700 });
    const file = join(paths.vault, "crm.json");
    const seen = { old: 0, new: 0 };
    try {
      // killed as the token endpoint's answer leaves, then a little later each round:
      // before the answer is read, while the file is written, after it is replaced
      for (const delayMs of [0, 1, 2, 4, 8, 16]) {
        const tokens = await oauth.issue(-1000);
        const credential = {
          access: tokens.access,
          refresh: tokens.refresh,
          expires: tokens.expires,
          token_url: `https://auth.test:${oauth.port}/token`,
          client_id: CLIENT.id,
          client_secret: CLIENT.secret,
        };
        await writeFile(file, JSON.stringify(credential), { mode: 0o600 });
        const gateway = await startGatewayProcess(root);
        const asked = oauth.tokenRequests;
        oauth.onTokenAnswered = () => {
          setTimeout(() => gateway.child.kill("SIGKILL"), delayMs);
        };
        const reply = viaProxy(
          await gateway.proxy("elf"),
          `https://api.test:${oauth.port}/api/crm/x`,
          {
            ca: readFileSync(join(paths.ca, "ca.crt"), "utf8"),
          },
        ).catch(() => undefined);
        await reply;
        // a gateway that never asked the endpoint is not left behind (and the count below fails)
        const backstop = setTimeout(() => gateway.child.kill("SIGKILL"), 5000);
        await gateway.exited;
        clearTimeout(backstop);
        oauth.onTokenAnswered = undefined;
        expect(gateway.child.signalCode).toBe("SIGKILL");
        expect(oauth.tokenRequests).toBe(asked + 1);

        const text = readFileSync(file, "utf8");
        const stored = JSON.parse(text) as typeof credential; // whole: it parses
        if (stored.access === tokens.access) {
          expect(stored).toEqual(credential);
          seen.old += 1;
        } else {
          expect(stored.refresh).not.toBe(tokens.refresh);
          expect(stored.expires).toBeGreaterThan(Date.now());
          expect(stored.client_secret).toBe(CLIENT.secret);
          seen.new += 1;
        }
      }
      expect(seen.old + seen.new).toBe(6);
    } finally {
      oauth.onTokenAnswered = undefined;
      await rm(root, { recursive: true, force: true });
    }
  }, 120_000);
});
