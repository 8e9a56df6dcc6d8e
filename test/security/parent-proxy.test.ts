import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { createServer as createTlsServer, connect as tlsConnect } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitForDecision } from "../support/audit.ts";
import { isCI } from "../support/docker.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { Squid, squidInstalled } from "../support/squid.ts";
import { makeServerCertificate } from "../support/test-ca.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * The door behind a company proxy (`[gateway] upstream_proxy`): a real Squid
 * between the real gateway and an HTTPS upstream. The proof that nothing goes
 * out directly: the door's own answer for the upstream's names is 127.0.0.9,
 * where a listener counts anyone who comes (nobody may); only Squid's hosts
 * file knows the upstream is at 127.0.0.1, so every answer from it came
 * through Squid, whose access log has a line for each.
 */
const installed = squidInstalled();
let upstream: Upstream;
let decoy: Server;
const decoyPeers: string[] = [];
let open: Squid;
let guarded: Squid;
let env: GatewayEnv;
let authEnv: GatewayEnv;

const orgFor = (proxyUrl: string, caFile: string, extra = "") => `
[gateway]
upstream_proxy = "${proxyUrl}"
upstream_ca = ["${caFile}"]
upstream_no_proxy = ["direct.test"]
resolve = { "api.test" = "127.0.0.9", "raw.test" = "127.0.0.9", "ws.test" = "127.0.0.9", "direct.test" = "127.0.0.1", "sneaky.test" = "127.0.0.1" }
${extra}

[[grant]]
name = "api"
verdict = "allow"
match = { host = "api.test" }
inject = { credential = "apikey", headers = [{ header = "authorization", value = "Bearer {token}" }] }

[[grant]]
name = "ws"
verdict = "allow"
match = { host = "ws.test", headerContains = { upgrade = "websocket" } }

[[grant]]
name = "raw"
verdict = "tunnel"
match = { host = "raw.test" }

[[grant]]
name = "direct"
verdict = "allow"
match = { host = "direct.test" }

[[grant]]
name = "anything-test"
verdict = "allow"
match = { host = "*.test" }
`;

async function startEnv(squid: Squid | string, extra = "", proxyCa = ""): Promise<GatewayEnv> {
  const made = await startGatewayEnv("");
  const caFile = join(made.root, "upstream-ca.pem");
  await writeFile(caFile, `${upstream.certificate?.caPem ?? ""}\n${proxyCa}`);
  await made.writeVault("apikey", { token: "tok-123" });
  await writeFile(
    join(made.paths.config, "org.toml"),
    orgFor(typeof squid === "string" ? squid : squid.url, caFile, extra),
  );
  // the pools (and the proxy with them) are made when the gateway starts
  await made.restart();
  return made;
}

const boxCa = (target: GatewayEnv) => readFileSync(join(target.paths.ca, "ca.crt"), "utf8");

async function through(target: GatewayEnv, url: string) {
  const token = await target.token("elf");
  return viaProxy(proxyUrlFor(target, token), url, { ca: boxCa(target) });
}

/** Waits for Squid to have logged a line containing `text` (a tunnel's line comes when it closes). */
async function squidLogged(squid: Squid, text: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const line = squid.accessLog().find((entry) => entry.includes(text));
    if (line) return line;
    if (Date.now() > deadline)
      throw new Error(`squid logged no line with ${text}: ${squid.accessLog().join("\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Reads from a socket until `pattern` has arrived; resolves with all read. */
function readUntil(socket: Duplex, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const timer = setTimeout(
      () => reject(new Error(`waited for ${pattern}; got ${JSON.stringify(text)}`)),
      10_000,
    );
    const onData = (chunk: Buffer) => {
      text += chunk.toString("latin1");
      if (!pattern.test(text)) return;
      clearTimeout(timer);
      socket.off("data", onData);
      resolve(text);
    };
    socket.on("data", onData);
  });
}

/** A WebSocket handshake as a box makes it: CONNECT to the door, TLS to its leaf, GET with Upgrade. */
async function webSocketThrough(target: GatewayEnv, host: string, port: number): Promise<Duplex> {
  const token = await target.token("elf");
  const raw: Socket = connect({ host: "127.0.0.1", port: target.gateway.port });
  await new Promise((resolve) => raw.once("connect", resolve));
  const auth = Buffer.from(`${token}:x`).toString("base64");
  raw.write(
    `CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}:${port}\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`,
  );
  expect(await readUntil(raw, /\r\n\r\n/)).toMatch(/^HTTP\/1\.1 200/);
  const secure = tlsConnect({ socket: raw, servername: host, ca: boxCa(target) });
  await new Promise((resolve) => secure.once("secureConnect", resolve));
  secure.write(
    `GET /socket HTTP/1.1\r\nHost: ${host}:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
  );
  expect(await readUntil(secure, /\r\n\r\n/)).toMatch(/^HTTP\/1\.1 101/);
  return secure;
}

describe.skipIf(!installed && !isCI)("the door behind a company proxy (a real Squid)", () => {
  beforeAll(async () => {
    if (!installed) throw new Error("squid is not installed (box/with-docker.sh installs it)");
    // Connection: close, so each tunnel ends (and Squid logs it) with its answer
    upstream = await Upstream.start({
      tls: true,
      names: ["api.test", "raw.test", "ws.test", "direct.test", "sneaky.test"],
      handler: (_req, res) => {
        res.writeHead(200, { "content-type": "text/plain", connection: "close" });
        res.end("upstream");
      },
    });
    // a WebSocket's handshake answered, then every byte echoed (the door reads none of them)
    upstream.server.on("upgrade", (_req, socket: Duplex) => {
      socket.write(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
      );
      socket.on("data", (chunk: Buffer) => socket.write(chunk));
    });
    decoy = createServer((socket) => {
      decoyPeers.push(String(socket.remoteAddress));
      socket.destroy();
    });
    await new Promise<void>((resolve) => decoy.listen(upstream.port, "127.0.0.9", resolve));
    const hosts = { "api.test": "127.0.0.1", "raw.test": "127.0.0.1", "ws.test": "127.0.0.1" };
    open = await Squid.start({ hosts, ports: [upstream.port] });
    guarded = await Squid.start({ hosts, ports: [upstream.port], users: { alice: "s3cret" } });
    env = await startEnv(open);
  }, 60_000);
  afterAll(async () => {
    await env?.cleanup();
    await authEnv?.cleanup();
    await open?.stop();
    await guarded?.stop();
    if (decoy) await new Promise((resolve) => decoy.close(resolve));
    await upstream?.stop();
  });

  it("sends a request with an injected credential through Squid, never directly", async () => {
    const reply = await through(env, `https://api.test:${upstream.port}/v1/things`);
    expect(reply.status).toBe(200);
    expect(reply.body).toBe("upstream");
    const seen = upstream.seen.find((request) => request.url === "/v1/things");
    expect(seen?.headers.authorization).toBe("Bearer tok-123");
    const line = await squidLogged(open, `CONNECT api.test:${upstream.port}`);
    expect(line).toContain("TCP_TUNNEL/200");
    const audit = await waitForDecision(
      env.paths.audit,
      (record) => record.request.host === "api.test",
    );
    expect(audit).toMatchObject({ verdict: "allow", rule: "api", status: 200 });
    expect(decoyPeers).toEqual([]);
  }, 30_000);

  it("passes a raw tunnel (verdict tunnel) through Squid", async () => {
    const token = await env.token("elf");
    const reply = await viaProxy(proxyUrlFor(env, token), `https://raw.test:${upstream.port}/raw`, {
      ca: upstream.certificate?.caPem ?? "",
    });
    expect(reply.status).toBe(200);
    await squidLogged(open, `CONNECT raw.test:${upstream.port}`);
    expect(decoyPeers).toEqual([]);
  }, 30_000);

  it("passes a WebSocket upgrade through Squid", async () => {
    const socket = await webSocketThrough(env, "ws.test", upstream.port);
    socket.write("ping through squid");
    expect(await readUntil(socket, /ping through squid/)).toContain("ping through squid");
    socket.destroy();
    await squidLogged(open, `CONNECT ws.test:${upstream.port}`);
    expect(decoyPeers).toEqual([]);
  }, 30_000);

  it("answers a 502 naming Squid's 403 when it won't tunnel to a port", async () => {
    const closedPort = upstream.port === 65535 ? 1 : upstream.port + 1;
    const reply = await through(env, `https://api.test:${closedPort}/`);
    expect(reply.status).toBe(502);
    expect(JSON.parse(reply.body).error).toBe(
      `upstream: upstream proxy ${open.url} answered 403 Forbidden to CONNECT api.test:${closedPort}`,
    );
    const audit = await waitForDecision(
      env.paths.audit,
      (record) => record.request.host === "api.test" && record.status === 502,
    );
    expect(audit.note).toContain("answered 403 Forbidden");
  }, 30_000);

  it("answers a 502 naming a proxy that drops the CONNECT or never answers it", async () => {
    const held: Socket[] = [];
    const dropper = createServer((socket) => socket.once("data", () => socket.destroy()));
    const silent = createServer((socket) => void held.push(socket));
    await new Promise<void>((resolve) => dropper.listen(0, "127.0.0.1", resolve));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const url = (server: Server) =>
      `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const dropped = await startEnv(url(dropper));
    const quiet = await startEnv(url(silent), "[gateway.timeouts]\nconnect_secs = 0.5");
    try {
      const one = await through(dropped, `https://api.test:${upstream.port}/`);
      expect(one.status).toBe(502);
      expect(JSON.parse(one.body).error).toBe(
        `upstream: upstream proxy ${url(dropper)}: closed the connection without answering CONNECT api.test:${upstream.port}`,
      );
      const two = await through(quiet, `https://api.test:${upstream.port}/`);
      expect(two.status).toBe(502);
      expect(JSON.parse(two.body).error).toBe(
        `upstream: upstream proxy ${url(silent)}: no answer to CONNECT api.test:${upstream.port} in 500 ms`,
      );
    } finally {
      await dropped.cleanup();
      await quiet.cleanup();
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => dropper.close(resolve));
      await new Promise((resolve) => silent.close(resolve));
    }
  }, 30_000);

  it("speaks TLS to an https:// proxy whose CA is in upstream_ca", async () => {
    // Squid behind a TLS front, as a proxy spoken to over TLS is: the door must verify it
    const certificate = await makeServerCertificate(["localhost"]);
    let fronted = 0;
    const front = createTlsServer(
      { key: certificate.keyPem, cert: certificate.certPem },
      (client) => {
        fronted++;
        const back = connect({ host: "127.0.0.1", port: open.port });
        client.pipe(back).pipe(client);
        client.on("error", () => back.destroy());
        back.on("error", () => client.destroy());
      },
    );
    const accepted: Socket[] = [];
    front.on("connection", (socket: Socket) => accepted.push(socket));
    await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
    const proxyUrl = `https://localhost:${(front.address() as { port: number }).port}`;
    const trusted = await startEnv(proxyUrl, "", certificate.caPem);
    const untrusted = await startEnv(proxyUrl);
    try {
      const reply = await through(trusted, `https://api.test:${upstream.port}/over-tls`);
      expect(reply.status).toBe(200);
      expect(fronted).toBe(1);
      await squidLogged(open, "TCP_TUNNEL/200");
      // without the proxy's CA the door won't talk to it
      const refused = await through(untrusted, `https://api.test:${upstream.port}/unverified`);
      expect(refused.status).toBe(502);
      expect(JSON.parse(refused.body).error).toMatch(
        new RegExp(
          `^upstream: upstream proxy ${proxyUrl}: (SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)$`,
        ),
      );
      expect(upstream.seen.some((request) => request.url === "/unverified")).toBe(false);
    } finally {
      await trusted.cleanup();
      await untrusted.cleanup();
      for (const socket of accepted) socket.destroy();
      await new Promise((resolve) => front.close(resolve));
    }
    expect(decoyPeers).toEqual([]);
  }, 30_000);

  it("goes directly to a host upstream_no_proxy names, and Squid never hears of it", async () => {
    const reply = await through(env, `https://direct.test:${upstream.port}/direct`);
    expect(reply.status).toBe(200);
    expect(upstream.seen.some((request) => request.url === "/direct")).toBe(true);
    // a later request through Squid is logged; the direct one never is
    await through(env, `https://api.test:${upstream.port}/after-direct`);
    await squidLogged(open, "api.test");
    expect(open.accessLog().some((line) => line.includes("direct.test"))).toBe(false);
  }, 30_000);

  it("refuses an internal address before Squid is asked", async () => {
    const before = open.accessLog().length;
    const reply = await through(env, `https://sneaky.test:${upstream.port}/x`);
    expect(reply.status).toBe(403);
    expect(reply.body).toContain("sneaky.test resolves to 127.0.0.1");
    const audit = await waitForDecision(
      env.paths.audit,
      (record) => record.request.host === "sneaky.test",
    );
    expect(audit.verdict).toBe("deny");
    // Squid's next line is the next request's: nothing for the refused one came between
    await through(env, `https://api.test:${upstream.port}/after-sneaky`);
    const deadline = Date.now() + 10_000;
    while (open.accessLog().length === before && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const added = open.accessLog().slice(before);
    expect(added.length).toBeGreaterThan(0);
    expect(added.some((line) => line.includes("sneaky.test"))).toBe(false);
    expect(open.accessLog().some((line) => line.includes("sneaky.test"))).toBe(false);
  }, 30_000);

  it("authenticates to Squid with the vault's credential, and without one answers a 502 naming 407", async () => {
    authEnv = await startEnv(guarded, 'upstream_proxy_auth = "corp-proxy"');
    await authEnv.writeVault("corp-proxy", { user: "alice", pass: "s3cret" });
    const passed = await through(authEnv, `https://api.test:${upstream.port}/authed`);
    expect(passed.status).toBe(200);
    expect(upstream.seen.find((request) => request.url === "/authed")?.headers.authorization).toBe(
      "Bearer tok-123",
    );
    // the proxy's credential is the proxy's: never passed on to the upstream
    expect(
      upstream.seen.find((request) => request.url === "/authed")?.headers["proxy-authorization"],
    ).toBeUndefined();
    expect(await squidLogged(guarded, "alice")).toContain("TCP_TUNNEL/200");

    // a wrong password: refused by Squid, and the answer says whose credential
    await authEnv.writeVault("corp-proxy", { user: "alice", pass: "wrong" });
    const wrong = await through(authEnv, `https://api.test:${upstream.port}/wrong`);
    expect(wrong.status).toBe(502);
    expect(JSON.parse(wrong.body).error).toBe(
      `upstream: upstream proxy ${guarded.url} answered 407 Proxy Authentication Required to CONNECT api.test:${upstream.port}: it refused the vault credential "corp-proxy" (upstream_proxy_auth)`,
    );

    // no credential configured at all
    await authEnv.cleanup();
    authEnv = await startEnv(guarded);
    const refused = await through(authEnv, `https://api.test:${upstream.port}/no-auth`);
    expect(refused.status).toBe(502);
    const body = JSON.parse(refused.body) as { error: string; rule: string };
    expect(body.error).toBe(
      `upstream: upstream proxy ${guarded.url} answered 407 Proxy Authentication Required to CONNECT api.test:${upstream.port}: it wants a credential ([gateway] upstream_proxy_auth)`,
    );
    expect(body.rule).toBe("api");
    const audit = await waitForDecision(
      authEnv.paths.audit,
      (record) => record.request.host === "api.test",
    );
    expect(audit).toMatchObject({ verdict: "allow", rule: "api", status: 502 });
    expect(audit.note).toContain("answered 407");
    expect(upstream.seen.some((request) => request.url === "/no-auth")).toBe(false);
    expect(decoyPeers).toEqual([]);
  }, 60_000);
});
