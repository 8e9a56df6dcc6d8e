import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRoster } from "../support/cli.ts";
import { testEngine } from "../support/docker.ts";
import { makeGatewayRoot } from "../support/gateway-process.ts";
import { makeServerCertificate } from "../support/test-ca.ts";

/**
 * `roster box doctor` with an engine that answers lists the stores a gateway
 * started from this environment verifies upstream TLS against, each with its
 * certificates: Node's roots, the host's store (here the file SSL_CERT_FILE
 * names) and org.toml's upstream_ca. The same report without an engine, and
 * the gateway actually using those stores, are test/gateway/system-trust.test.ts
 * (the host lane, which has no engine).
 */
const engine = await testEngine();

describe.skipIf(!engine)("box doctor's trust lines, with an engine", () => {
  let root: string;
  let store: string;
  let upstreamCa: string;

  beforeAll(async () => {
    const made = await makeGatewayRoot("");
    root = made.root;
    upstreamCa = join(root, "internal-ca.pem");
    await writeFile(upstreamCa, (await makeServerCertificate(["internal.test"])).caPem);
    await writeFile(
      join(made.paths.config, "org.toml"),
      `[gateway]\nupstream_ca = ["${upstreamCa}"]\n`,
    );
    // the host's store: two CAs, as update-ca-certificates leaves them
    const one = await makeServerCertificate(["corp.test"]);
    const two = await makeServerCertificate(["elsewhere.test"]);
    store = join(root, "host-store.pem");
    await writeFile(store, `${one.caPem.trim()}\n# corporate proxy\n${two.caPem}`);
  });
  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("names each store and how many certificates it holds", async () => {
    const doctor = await runRoster(["box", "doctor"], {
      ROSTER_ROOT: root,
      SSL_CERT_FILE: store,
      NODE_EXTRA_CA_CERTS: "",
    });
    const lines = doctor.stdout.split("\n");
    expect(lines[0], doctor.stdout).toMatch(/^ok {2}engine {3}\S/);
    const trust = lines.findIndex((line) => line.startsWith("ok  trust "));
    expect(trust, doctor.stdout).toBeGreaterThan(0);
    expect(lines[trust]).toMatch(
      /^ok {2}trust {4}upstream TLS is verified against Node's bundled roots \(\d{3,} certificates\)$/,
    );
    expect(lines.slice(trust + 1, trust + 3)).toEqual([
      `             + system ${store} (2 certificates)`,
      `             + upstream_ca ${upstreamCa} (1 certificate)`,
    ]);
  });
});
