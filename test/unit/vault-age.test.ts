/**
 * The vault's ages and its sealing, through the real CLI and real files:
 * each secret's set time, command and expiry recorded beside it (never in
 * it, so no template renders it), `ls` marking what expires within a week,
 * a rotation with nothing to check it against refused without --force, the
 * metrics gauge of seconds to expiry carrying no value, and a sealed file
 * that is tampered with, renamed or keyless refused with its name.
 */
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { renderInjection } from "../../runner/boundary/gateway/credentials/vault.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { REFRESH, readCredentialMeta } from "../../runner/ground/vault/credential-meta.ts";
import { readVaultCredential, writeVaultCredential } from "../../runner/ground/vault/vault-file.ts";
import { ServerMetrics } from "../../runner/services/metrics/server-metrics.ts";
import { runRoster, runRosterWithInput } from "../support/cli.ts";

const SECRET = "age-secret-5e6f7a";

describe("the vault's ages and keys", () => {
  let root: string;
  let paths: RosterPaths;
  let keyFile: string;
  const env = (extra: Record<string, string> = {}) => ({ ROSTER_ROOT: root, ...extra });
  const add = (name: string, extra: string[], secret = SECRET) =>
    runRosterWithInput(
      ["connection", "add", name, "--from", "bearer", "--host", `${name}.test`, ...extra],
      `${secret}\n`,
      env(),
    );

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "roster-vault-age-"));
    paths = rosterPaths({ ROSTER_ROOT: root });
    expect((await runRoster(["init"], env())).code).toBe(0);
    keyFile = join(root, "vault.key");
    await writeFile(keyFile, Buffer.alloc(32, 7).toString("base64"), { mode: 0o600 });
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("records when and by whom each secret was set, marks what expires within a week, and exports seconds to expiry", async () => {
    expect((await add("soon", ["--expires", "3d"])).code).toBe(0);
    expect((await add("gone", ["--expires", "2020-01-01T00:00:00Z"])).code).toBe(0);
    expect((await add("later", ["--expires", "90d"])).code).toBe(0);
    expect((await add("plain", [])).code).toBe(0);

    const ls = await runRoster(["connection", "ls"], env());
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toMatch(
      /^soon .*set \d+m ago \(connection add by cli:\S+\); EXPIRES in 2d$/m,
    );
    expect(ls.stdout).toMatch(/^gone .*; EXPIRED \d+d ago$/m);
    expect(ls.stdout).toMatch(/^later .*; expires in 89d$/m);
    expect(ls.stdout).toMatch(/^plain .*set \d+m ago \(connection add by cli:\S+\)$/m);

    const rows = JSON.parse((await runRoster(["connection", "ls", "--json"], env())).stdout) as {
      name: string;
      age?: { set_by: string; expires_at?: string; expiry?: string };
    }[];
    const age = (name: string) => rows.find((row) => row.name === name)?.age;
    expect(age("soon")).toMatchObject({ expiry: "expiring" });
    expect(age("gone")).toMatchObject({
      expiry: "expired",
      expires_at: "2020-01-01T00:00:00.000Z",
    });
    expect(age("plain")?.expires_at).toBeUndefined();

    // the age lives beside the secret, never in it: no template can render it
    const stored = readVaultCredential(paths.vault, "soon") ?? {};
    expect(Object.keys(stored)).toEqual(["token"]);
    expect(
      renderInjection([{ header: "x-age", value: "{set_by}" }], stored, "soon.test").size,
    ).toBe(0);
    expect(readFileSync(join(paths.vault, "soon.meta.json"), "utf8")).not.toContain(SECRET);

    const metrics = new ServerMetrics({
      paths,
      boxes: () => ({ task: 0, session: 0, run: 0 }),
      ready: () => 0,
      sessions: () => 0,
    });
    const text = await metrics.text();
    const line = text
      .split("\n")
      .find((l) => l.startsWith('roster_credential_expires_in_seconds{credential="soon"}'));
    const seconds = Number(line?.split(" ")[1]);
    expect(seconds).toBeGreaterThan(3 * 86_400 - 600);
    expect(seconds).toBeLessThanOrEqual(3 * 86_400);
    expect(text).toMatch(/roster_credential_expires_in_seconds\{credential="gone"\} -\d+/);
    expect(text).not.toContain('credential="plain"');
    expect(text).not.toContain(SECRET);
  });

  it("refuses a bad --expires before asking for anything, and a rotation it can't check without --force", async () => {
    // written by hand: no recipe on record, so nothing says what a check would ask for
    await writeFile(
      join(paths.config, "connections", "api.toml"),
      'hosts = ["api.test"]\nmethods = ["*"]\ninject_header = "authorization"\ninject_value = "Bearer {token}"\n',
    );
    const secret = (extra: string[], value = SECRET) =>
      runRosterWithInput(["connection", "secret", "api", ...extra], `${value}\n`, env());
    const bad = await secret(["--expires", "next tuesday"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--expires next tuesday: expected an RFC 3339 time");
    expect(readVaultCredential(paths.vault, "api")).toBeUndefined();
    expect((await secret(["--expires", "2030-01-01"])).code).toBe(0);
    const stored = JSON.parse((await runRoster(["connection", "ls", "--json"], env())).stdout);
    expect(stored[0].age).toMatchObject({ expires_at: "2030-01-01T00:00:00.000Z" });
    expect(stored[0].age.set_by).toMatch(/^connection secret by cli:/);

    const refused = await runRosterWithInput(["connection", "rotate", "api"], "other\n", env());
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('"api" has no verify call');
    expect(readVaultCredential(paths.vault, "api")).toEqual({ token: SECRET });

    const forced = await runRosterWithInput(
      ["connection", "rotate", "api", "--force"],
      "other\n",
      env(),
    );
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toContain("swapped unverified (--force)");
    expect(readVaultCredential(paths.vault, "api")).toEqual({ token: "other" });
    const rows = JSON.parse((await runRoster(["connection", "ls", "--json"], env())).stdout);
    expect(rows[0].age.set_by).toMatch(/^connection rotate by cli:/);
  });

  it("seals the vault with its key, and refuses a tampered, renamed or keyless file by name", async () => {
    expect((await add("api", [])).code).toBe(0);
    expect((await add("other", [], "other-secret")).code).toBe(0);
    const keyed = { ROSTER_VAULT_KEY_FILE: keyFile };
    const sealed = await runRoster(["connection", "encrypt"], env(keyed));
    expect(sealed.code, sealed.stderr).toBe(0);
    expect(sealed.stdout).toContain("encrypted api, other");
    const file = join(paths.vault, "api.json");
    const text = readFileSync(file, "utf8");
    expect(text).not.toContain(SECRET);
    expect(readVaultCredential(paths.vault, "api", keyed)).toEqual({ token: SECRET });

    // each write a fresh IV: the same secret never gives the same bytes
    await writeVaultCredential(paths.vault, "api", { token: SECRET }, undefined, keyed);
    expect(readFileSync(file, "utf8")).not.toBe(text);

    expect(() => readVaultCredential(paths.vault, "api", {})).toThrow(
      `${file}: the vault file is encrypted and no vault key is configured`,
    );
    const wrongKey = join(root, "wrong.key");
    writeFileSync(wrongKey, "cd".repeat(32), { mode: 0o600 });
    expect(() =>
      readVaultCredential(paths.vault, "api", { ROSTER_VAULT_KEY_FILE: wrongKey }),
    ).toThrow(`${file}: the vault file does not open with the key in ${wrongKey}`);

    const envelope = JSON.parse(readFileSync(file, "utf8")) as { data: string };
    const bytes = Buffer.from(envelope.data, "base64");
    bytes[0] = (bytes[0] ?? 0) ^ 1;
    writeFileSync(file, JSON.stringify({ ...envelope, data: bytes.toString("base64") }));
    expect(() => readVaultCredential(paths.vault, "api", keyed)).toThrow("does not open");

    // a file moved to another credential's name is not that credential
    renameSync(join(paths.vault, "other.json"), join(paths.vault, "moved.json"));
    expect(() => readVaultCredential(paths.vault, "moved", keyed)).toThrow(
      `${join(paths.vault, "moved.json")}: the vault file does not open`,
    );

    const loose = join(root, "loose.key");
    writeFileSync(loose, "ab".repeat(32), { mode: 0o644 });
    const refused = await runRoster(
      ["connection", "encrypt"],
      env({ ROSTER_VAULT_KEY_FILE: loose }),
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${loose}: the vault key file is readable by others`);

    const keyless = await runRoster(["connection", "encrypt"], env());
    expect(keyless.code).toBe(2);
    expect(keyless.stderr).toContain("no vault key is configured");
  });

  it("reads the key from systemd's credentials directory", async () => {
    const credentials = await mkdtemp(join(root, "creds-"));
    writeFileSync(join(credentials, "roster-vault-key"), "ef".repeat(32), { mode: 0o400 });
    await writeVaultCredential(paths.vault, "svc", { key: SECRET }, undefined, {
      CREDENTIALS_DIRECTORY: credentials,
    });
    expect(readFileSync(join(paths.vault, "svc.json"), "utf8")).not.toContain(SECRET);
    expect(readVaultCredential(paths.vault, "svc", { CREDENTIALS_DIRECTORY: credentials })).toEqual(
      {
        key: SECRET,
      },
    );
  });

  it("keeps a signed-in token's age when the gateway refreshes it, and says when it did", async () => {
    const signedIn = new Date("2026-11-01T09:00:00Z");
    const oauth = (access: string) => ({ access, refresh: "r-1", expires: Date.now() + 3_600_000 });
    await writeVaultCredential(paths.vault, "gh", oauth("a-1"), {
      command: "login",
      operator: "cli:alice",
      now: signedIn,
    });
    const refreshedAt = new Date("2026-12-01T09:00:00Z");
    await writeVaultCredential(paths.vault, "gh", oauth("a-2"), {
      command: REFRESH,
      now: refreshedAt,
    });
    const meta = readCredentialMeta(paths.vault, "gh");
    expect(meta).toMatchObject({
      set_at: signedIn.toISOString(),
      set_by: "login by cli:alice",
      refreshed_at: refreshedAt.toISOString(),
      renews: true,
    });
  });
});
