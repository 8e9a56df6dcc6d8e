import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostCa } from "../../runner/boundary/gateway/trust/host-trust.ts";
import { OS_BUNDLES, pemBlocks } from "../../runner/boundary/gateway/trust/trust-store.ts";
import { startEmailDesk, submitAction } from "../support/action-host.ts";
import { ROSTER_BIN } from "../support/cli.ts";
import type { GatewayEnv } from "../support/gateway-env.ts";
import type { SmtpSink } from "../support/smtp.ts";

/**
 * `roster` starts Node with NODE_EXTRA_CA_CERTS set aside (its first lines) and
 * puts it back for what it starts; the executors trust the host's store
 * explicitly — the one the gateway verifies its upstreams against: Node's
 * roots and the system store (SSL_CERT_FILE or NODE_EXTRA_CA_CERTS, else the
 * OS bundle). So a mail server signed by a CA named only there is still
 * trusted when the command is run as a user runs it, as a command of its own.
 */
const run = promisify(execFile);
let env: GatewayEnv;
let smtp: SmtpSink;
let dir: string;

beforeAll(async () => {
  ({ env, smtp } = await startEmailDesk());
  dir = await mkdtemp(join(tmpdir(), "roster-trust-"));
  // the credential names no CA of its own: only the environment's file can vouch for the server
  const { ca: _ca, ...credential } = smtp.vaultCredential("elf@roster.test");
  await env.writeVault("smtp", credential);
});
afterAll(async () => {
  await env?.cleanup();
  await smtp?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function fileGate(): Promise<string> {
  const reply = await submitAction(env, await env.token("elf"), {
    intent: "email-send",
    payload: { to: ["lead@example.test"], subject: "numbers", body: "the numbers" },
    rationale: "asked for",
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(202);
  return String(reply.body.gate_id);
}

/** `roster approvals approve <id> --json` run by its shebang, as a shell would. */
async function approve(id: string, extra: NodeJS.ProcessEnv) {
  const { NODE_EXTRA_CA_CERTS: _unset, ...base } = process.env;
  try {
    const { stdout } = await run(ROSTER_BIN, ["approvals", "approve", id, "--json"], {
      env: { ...base, ROSTER_ROOT: env.root, ...extra },
    });
    return JSON.parse(stdout) as { state: string; error?: string };
  } catch (error) {
    const { stdout } = error as { stdout?: string };
    return JSON.parse(stdout ?? "{}") as { state: string; error?: string };
  }
}

describe("the executors' trust when roster defers NODE_EXTRA_CA_CERTS", () => {
  it("sends through a server whose CA only NODE_EXTRA_CA_CERTS names, and fails without it", async () => {
    const without = await approve(await fileGate(), {});
    expect(without.state).toBe("failed");
    expect(without.error).toMatch(/certificate|self.signed|verify/i);
    expect(smtp.received).toHaveLength(0);

    const caFile = join(dir, "corporate-ca.pem");
    await writeFile(caFile, smtp.caPem);
    const trusted = await approve(await fileGate(), { NODE_EXTRA_CA_CERTS: caFile });
    expect(trusted.state, trusted.error).toBe("executed");
    expect(smtp.received).toHaveLength(1);
  });

  it("sends through a server whose CA is only in the host's system store (SSL_CERT_FILE)", async () => {
    const caFile = join(dir, "system-bundle.pem");
    await writeFile(caFile, smtp.caPem);
    const trusted = await approve(await fileGate(), { SSL_CERT_FILE: caFile });
    expect(trusted.state, trusted.error).toBe("executed");
    expect(smtp.received).toHaveLength(2);
  });

  it("is Node's roots plus the named file, else the OS bundle", async () => {
    const caFile = join(dir, "one.pem");
    await writeFile(caFile, smtp.caPem);
    const [serverCa] = pemBlocks(smtp.caPem);
    const ca = hostCa({ NODE_EXTRA_CA_CERTS: caFile });
    expect(ca).toHaveLength(rootCertificates.length + 1);
    expect(ca).toContain(serverCa);
    // no variable, or one naming nothing: the OS bundle joins Node's roots, as the gateway reads it
    const bundle = OS_BUNDLES.find((path) => existsSync(path));
    const osStore = hostCa({ NODE_EXTRA_CA_CERTS: join(dir, "missing.pem") });
    if (bundle) expect(osStore.length).toBeGreaterThan(rootCertificates.length);
    expect(osStore).not.toContain(serverCa);
    expect(hostCa({})).toEqual(osStore);
  });
});
