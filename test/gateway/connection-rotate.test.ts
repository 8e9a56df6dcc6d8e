/**
 * `roster connection rotate` and a sealed vault through the real CLI and the
 * real gateway it starts: a new secret the API refuses is never swapped in
 * (the old one still gets through the door), one it takes is; a vault sealed
 * with its key is read back by the gateway (the API sees the injected token),
 * and without the key the gateway serves nothing and says which file. No
 * Docker: nothing runs in a box.
 */
import { readFileSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { runRoster, runRosterWithInput } from "../support/cli.ts";
import { pointAtScriptedModel } from "../support/roster-root.ts";
import { Upstream } from "../support/upstream.ts";

const root = process.getuid?.() === 0;
if (!root) console.warn("skipping the connection rotate test: its stand-in API binds port 443");

const OLD = "rotate-old-7a1c";
const NEW = "rotate-new-2b9e";
const ADDRESS = "127.0.0.59";

describe.skipIf(!root)("roster connection rotate, and a sealed vault", () => {
  let dir: string;
  let paths: RosterPaths;
  let api: { upstream: Upstream };
  let token = OLD;
  let keyFile: string;
  const env = (extra: Record<string, string> = {}) => ({ ROSTER_ROOT: dir, ...extra });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "roster-rotate-"));
    paths = rosterPaths({ ROSTER_ROOT: dir });
    // the API takes whichever token the test says is current
    const upstream = await Upstream.start({
      tls: true,
      names: ["rot.test"],
      host: ADDRESS,
      port: 443,
      handler: (req, res) => {
        const ok = req.headers.authorization === `Bearer ${token}`;
        res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
        res.end(JSON.stringify(ok ? { ok: true } : { error: "token revoked at the provider" }));
      },
    });
    api = { upstream };
    const caFile = join(dir, "rot-ca.pem");
    await writeFile(caFile, upstream.certificate?.caPem ?? "");
    keyFile = join(dir, "vault.key");
    await writeFile(keyFile, `${"ab".repeat(32)}\n`, { mode: 0o600 });
    await chmod(keyFile, 0o600);
    expect((await runRoster(["init"], env())).code).toBe(0);
    await pointAtScriptedModel(paths, "http://127.0.0.1:9/v1", {
      gatewayExtra: `upstream_ca = [${JSON.stringify(caFile)}]\nresolve = { "rot.test" = "${ADDRESS}" }`,
    });
    const added = await runRosterWithInput(
      ["connection", "add", "rot", "--from", "bearer", "--host", "rot.test"].concat([
        "--worker",
        "elf",
        "--verify-path",
        "/v1/me",
        "--verify",
      ]),
      `${OLD}\n`,
      env(),
    );
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain("ok: GET https://rot.test/v1/me answered 200");
  });
  afterAll(async () => {
    await api?.upstream.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("keeps the old secret live when the new one fails its check, saying what the API said", async () => {
    const failed = await runRosterWithInput(["connection", "rotate", "rot"], `${NEW}\n`, env());
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stdout).toContain('kept the old secret of "rot" (still live)');
    expect(failed.stdout).toContain("answered 401");
    expect(failed.stdout).toContain("token revoked at the provider");
    // the check went through the door with the candidate
    expect(api.upstream.seen.at(-1)?.headers.authorization).toBe(`Bearer ${NEW}`);
    // the stored secret is the old one, and it still works through the door
    expect(readFileSync(join(paths.vault, "rot.json"), "utf8")).toContain(OLD);
    const verify = await runRoster(["connection", "verify", "rot"], env());
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(api.upstream.seen.at(-1)?.headers.authorization).toBe(`Bearer ${OLD}`);
  });

  it("swaps the new secret in when the API takes it, and records the rotation", async () => {
    token = NEW;
    const rotated = await runRoster(
      ["connection", "rotate", "rot", "--secret-env", "NEW_TOKEN", "--expires", "3d", "--json"],
      env({ NEW_TOKEN: NEW }),
    );
    expect(rotated.code, rotated.stderr).toBe(0);
    const outcome = JSON.parse(rotated.stdout) as { swapped: boolean; check: { ok: boolean } };
    expect(outcome).toMatchObject({ swapped: true, check: { ok: true } });
    expect(readFileSync(join(paths.vault, "rot.json"), "utf8")).toContain(NEW);
    const ls = await runRoster(["connection", "ls"], env());
    expect(ls.stdout).toMatch(
      /^rot .* ok: .*set \d+m ago \(connection rotate by cli:\S+\); EXPIRES in 2d$/m,
    );
  });

  it("reads a sealed vault back at the door, and without the key says which file", async () => {
    const sealed = await runRoster(
      ["connection", "encrypt"],
      env({ ROSTER_VAULT_KEY_FILE: keyFile }),
    );
    expect(sealed.code, sealed.stderr).toBe(0);
    expect(sealed.stdout).toContain("encrypted rot");
    const text = readFileSync(join(paths.vault, "rot.json"), "utf8");
    expect(text).not.toContain(NEW);
    expect(text).toContain('"alg":"aes-256-gcm"');

    const before = api.upstream.seen.length;
    const verify = await runRoster(
      ["connection", "verify", "rot"],
      env({ ROSTER_VAULT_KEY_FILE: keyFile }),
    );
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(api.upstream.seen.length).toBe(before + 1);
    expect(api.upstream.seen.at(-1)?.headers.authorization).toBe(`Bearer ${NEW}`);

    const keyless = await runRoster(["connection", "verify", "rot"], env());
    expect(keyless.code).not.toBe(0);
    expect(keyless.stdout + keyless.stderr).toContain(
      `${join(paths.vault, "rot.json")}: the vault file is encrypted and no vault key is configured`,
    );
    expect(api.upstream.seen.length).toBe(before + 1);
  });
});
