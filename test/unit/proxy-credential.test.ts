/**
 * A user-and-password credential stored with `roster connection secret
 * <name> --field user=…`, the password read as the secret (stdin,
 * --secret-env, or a prompt that shows nothing): what `[gateway]
 * upstream_proxy_auth` names. Through the real CLI and real files, read back
 * by the parent proxy's own reader; the password is on no command line, in
 * no output and not in the record of age.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSecureContext } from "node:tls";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ParentProxy } from "../../runner/boundary/gateway/upstream/parent-proxy.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { metaFile } from "../../runner/ground/vault/credential-meta.ts";
import {
  readVaultCredential,
  vaultFile,
  writeVaultCredential,
} from "../../runner/ground/vault/vault-file.ts";
import { ROSTER_BIN, runRoster, runRosterWithInput } from "../support/cli.ts";
import { spawnInPty } from "../support/pty.ts";

const PASS = "proxy-pass-8f3k2";
const NEXT = "proxy-pass-next-7q1w";

describe("the parent proxy's credential, stored by connection secret", () => {
  let root: string;
  let paths: RosterPaths;
  const env = (extra: Record<string, string> = {}) => ({ ROSTER_ROOT: root, ...extra });
  const secret = (args: string[], input: string, extra: Record<string, string> = {}) =>
    runRosterWithInput(["connection", "secret", ...args], input, env(extra));
  /** What the door would send the proxy, read from the vault the way the gateway reads it. */
  const authorization = (extra: NodeJS.ProcessEnv = {}) =>
    new ParentProxy(
      {
        url: "http://proxy.corp:3128",
        noProxy: [],
        credential: {
          name: "corp-proxy",
          read: () => readVaultCredential(paths.vault, "corp-proxy", { ...process.env, ...extra }),
        },
        connectTimeoutMs: 1000,
      },
      () => createSecureContext(),
    ).authorization();
  const basic = (user: string, pass: string) =>
    `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "roster-proxy-credential-"));
    paths = rosterPaths({ ROSTER_ROOT: root });
    expect((await runRoster(["init"], env())).code).toBe(0);
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("stores user and pass from stdin as the proxy reads them, and a new password keeps the user", async () => {
    const stored = await secret(["corp-proxy", "--field", "user=alice", "--expires", "90d"], PASS);
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.stdout).toMatch(
      /^stored the secret of "corp-proxy" \(its pass, beside user\) in /,
    );
    expect(`${stored.stdout}${stored.stderr}`).not.toContain(PASS);

    expect(readVaultCredential(paths.vault, "corp-proxy")).toEqual({ user: "alice", pass: PASS });
    expect(authorization()).toBe(basic("alice", PASS));
    expect(statSync(vaultFile(paths.vault, "corp-proxy")).mode & 0o777).toBe(0o600);

    // the record of age: who and when, never the password
    const meta = readFileSync(metaFile(paths.vault, "corp-proxy"), "utf8");
    expect(meta).not.toContain(PASS);
    expect(JSON.parse(meta)).toMatchObject({
      set_by: expect.stringMatching(/^connection secret by cli:\S+$/),
      expires_at: expect.any(String),
    });

    // a new password alone (as a rotation would be): the user stays
    const again = await secret(["corp-proxy", "--secret-env", "PROXY_PASS"], "", {
      PROXY_PASS: NEXT,
    });
    expect(again.code, again.stderr).toBe(0);
    expect(`${again.stdout}${again.stderr}`).not.toContain(NEXT);
    expect(authorization()).toBe(basic("alice", NEXT));
    for (const file of readdirSync(paths.vault).filter((name) => name.endsWith(".meta.json")))
      expect(readFileSync(join(paths.vault, file), "utf8")).not.toMatch(/proxy-pass/);
  });

  it("seals it with a vault key, and the proxy's reader opens it with that key", async () => {
    const keyFile = join(root, "vault.key");
    await writeFile(keyFile, Buffer.alloc(32, 9).toString("base64"), { mode: 0o600 });
    const stored = await secret(["corp-proxy", "--field", "user=alice"], `${PASS}\n`, {
      ROSTER_VAULT_KEY_FILE: keyFile,
    });
    expect(stored.code, stored.stderr).toBe(0);
    expect(readFileSync(vaultFile(paths.vault, "corp-proxy"), "utf8")).not.toContain(PASS);
    expect(authorization({ ROSTER_VAULT_KEY_FILE: keyFile })).toBe(basic("alice", PASS));
  });

  it("asks for the password on a terminal without showing it", async () => {
    const pty = spawnInPty(
      [process.execPath, ROSTER_BIN, "connection", "secret", "corp-proxy", "--field", "user=bob"],
      env(),
    );
    try {
      await pty.waitFor(/secret for corp-proxy's pass \(not shown\): /);
      pty.write(`${PASS}\r`);
      expect(await pty.exited).toBe(0);
    } finally {
      pty.kill();
    }
    expect(pty.output).toContain('stored the secret of "corp-proxy"');
    expect(pty.output).not.toContain(PASS);
    expect(authorization()).toBe(basic("bob", PASS));
  });

  it("refuses, before asking, a name that is nothing yet, a password as a field, a model key, and --verify", async () => {
    const nothing = await secret(["corp-proxy"], PASS);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain(
      'no connection named "corp-proxy" (connections/corp-proxy.toml) and no vault credential "corp-proxy"; nothing stored',
    );
    expect(nothing.stderr).toContain("roster connection secret corp-proxy --field user=…");

    const asField = await secret(
      ["corp-proxy", "--field", "user=alice", "--field", `pass=${PASS}`],
      "x",
    );
    expect(asField.code).toBe(2);
    expect(asField.stderr).toContain(
      "--field pass: a field is lower-case letters, digits or '_', and not \"pass\" (that is the secret, never on the command line)",
    );

    await writeVaultCredential(paths.vault, "anthropic", { key: "model-key-1" });
    const modelKey = await secret(["anthropic", "--field", "user=alice"], PASS);
    expect(modelKey.code).toBe(2);
    expect(modelKey.stderr).toContain(
      'the vault credential "anthropic" is no connection\'s and holds no pass field (it holds key)',
    );
    expect(readVaultCredential(paths.vault, "anthropic")).toEqual({ key: "model-key-1" });

    const verify = await secret(["corp-proxy", "--field", "user=alice", "--verify"], PASS);
    expect(verify.code).toBe(2);
    expect(verify.stderr).toContain('--verify: "corp-proxy" is no connection');
    expect(readVaultCredential(paths.vault, "corp-proxy")).toBeUndefined();
  });

  it("stores a field beside a connection's secret, which stays where its file injects it", async () => {
    const added = await runRosterWithInput(
      ["connection", "add", "api", "--from", "bearer", "--host", "api.test"],
      "first-token\n",
      env(),
    );
    expect(added.code, added.stderr).toBe(0);
    const stored = await secret(["api", "--field", "team=blue"], "second-token\n");
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.stdout).toContain("(its token, beside team)");
    expect(readVaultCredential(paths.vault, "api")).toEqual({
      token: "second-token",
      team: "blue",
    });
    const asField = await secret(["api", "--field", "token=x"], "y");
    expect(asField.code).toBe(2);
  });
});
