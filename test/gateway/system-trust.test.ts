import { readFileSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRoster } from "../support/cli.ts";
import {
  type GatewayProcess,
  makeGatewayRoot,
  startGatewayProcess,
} from "../support/gateway-process.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { makeServerCertificate } from "../support/test-ca.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * The gateway trusts what the host trusts. A host whose outbound TLS passes a
 * corporate intercepting proxy has that proxy's CA in its system store only;
 * here the store is a file named by SSL_CERT_FILE in the gateway's
 * environment. With it the upstream is reached; without it the refusal names
 * the TLS reason. An `upstream_ca` upstream is reached either way.
 */
let corp: Server;
let internal: Upstream;
let root: string;
let store: string;
let gateway: GatewayProcess | undefined;
/** Every gateway started, stopped at the end whatever failed. */
const started: GatewayProcess[] = [];
let boxCa: () => string;

const ENV = () => ({ SSL_CERT_FILE: store, NODE_EXTRA_CA_CERTS: "" });
/** DOCKER_HOST at a socket that is never there: box doctor finds no engine on any machine. */
const NO_ENGINE = "unix:///nonexistent/roster-test-no-engine.sock";

beforeAll(async () => {
  // as an intercepting proxy does: the leaf and its private CA sent as a chain
  const certificate = await makeServerCertificate(["corp.test"]);
  corp = createServer(
    { key: certificate.keyPem, cert: `${certificate.certPem.trim()}\n${certificate.caPem}` },
    (_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("through the corporate proxy");
    },
  );
  await new Promise<void>((resolve) => corp.listen(0, "127.0.0.1", resolve));
  internal = await Upstream.start({ tls: true, names: ["internal.test"] });

  const made = await makeGatewayRoot("");
  root = made.root;
  const caFile = join(root, "internal-ca.pem");
  await writeFile(caFile, internal.certificate?.caPem ?? "");
  await writeFile(
    join(made.paths.config, "org.toml"),
    `
[gateway]
upstream_ca = ["${caFile}"]
resolve = { "corp.test" = "127.0.0.1", "internal.test" = "127.0.0.1" }

[[grant]]
name = "corp"
verdict = "allow"
match = { host = "corp.test" }

[[grant]]
name = "internal"
verdict = "allow"
match = { host = "internal.test" }
`,
  );
  // the host's store: another CA and the proxy's, as update-ca-certificates leaves them
  const other = await makeServerCertificate(["elsewhere.test"]);
  store = join(root, "host-store.pem");
  await writeFile(store, `${other.caPem.trim()}\n# corporate proxy\n${certificate.caPem}`);
  boxCa = () => readFileSync(join(made.paths.ca, "ca.crt"), "utf8");
}, 30_000);
afterAll(async () => {
  for (const running of started) await running.stop();
  if (corp) await new Promise<void>((resolve) => corp.close(() => resolve()));
  await internal?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

const port = () => (corp.address() as AddressInfo).port;
const through = async (url: string) => {
  if (!gateway) throw new Error("no gateway");
  return viaProxy(await gateway.proxy("elf"), url, { ca: boxCa() });
};

describe("upstream TLS trusts the host's store", () => {
  it("reaches an upstream whose CA is only in the file SSL_CERT_FILE names", async () => {
    gateway = await startGatewayProcess(root, ENV());
    started.push(gateway);
    const reply = await through(`https://corp.test:${port()}/`);
    expect(reply.status).toBe(200);
    expect(reply.body).toBe("through the corporate proxy");
    expect((await through(`https://internal.test:${internal.port}/x`)).status).toBe(200);
    await gateway.stop();
  }, 60_000);

  it("box doctor names the stores and how many certificates each holds, and with no engine says that alone", async () => {
    // no engine, whatever this machine has: the text with one is test/box/doctor-trust.test.ts
    const env = { ROSTER_ROOT: root, ...ENV(), DOCKER_HOST: NO_ENGINE };
    const doctor = await runRoster(["box", "doctor", "--json"], env);
    const report = JSON.parse(doctor.stdout) as {
      engine: { ok: boolean };
      trust: { ok: boolean; sources: { kind: string; path?: string; certificates: number }[] };
    };
    expect(report.engine.ok).toBe(false);
    expect(report.trust.ok).toBe(true);
    expect(report.trust.sources[0]?.kind).toBe("node");
    expect(report.trust.sources[0]?.certificates).toBeGreaterThan(100);
    expect(report.trust.sources).toContainEqual({ kind: "system", path: store, certificates: 2 });
    expect(report.trust.sources).toContainEqual({
      kind: "upstream_ca",
      path: join(root, "internal-ca.pem"),
      certificates: 1,
    });
    // the engine down is the one thing to fix first: the text says that alone
    const text = await runRoster(["box", "doctor"], env);
    expect(text.code).toBe(1);
    expect(text.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^-- {2}engine {3}Docker is not reachable at unix socket \/nonexistent\//,
      ),
    ]);
  }, 60_000);

  it("refuses it, naming the TLS reason, once the file is gone", async () => {
    await rm(store);
    gateway = await startGatewayProcess(root, ENV());
    started.push(gateway);
    const reply = await through(`https://corp.test:${port()}/`);
    expect(reply.status).toBe(502);
    const body = JSON.parse(reply.body) as { error: string; rule: string };
    expect(body.error).toBe("upstream: SELF_SIGNED_CERT_IN_CHAIN");
    expect(body.rule).toBe("corp");
    // the operator's own upstream_ca still holds
    expect((await through(`https://internal.test:${internal.port}/x`)).status).toBe(200);
  }, 60_000);
});
