/**
 * `roster connection … --verify` through the real CLI and the real gateway it
 * starts: the call goes through the gateway's injection (the stand-in API sees
 * the token the vault holds), a wrong token is reported failing and `ls` says
 * so, and a TLS or DNS failure is one legible line. No Docker: nothing runs in
 * a box.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { type BearerApi, startBearerApi } from "../support/bearer-api.ts";
import { runRoster, runRosterWithInput } from "../support/cli.ts";
import { pointAtScriptedModel } from "../support/roster-root.ts";

const root = process.getuid?.() === 0;
if (!root) console.warn("skipping the connection verify test: its stand-in API binds port 443");

const TOKEN = "verify-token-4c1d";
const ADDRESS = "127.0.0.30";

describe.skipIf(!root)("roster connection --verify", () => {
  let dir: string;
  let paths: RosterPaths;
  let api: BearerApi;
  const env = () => ({ ROSTER_ROOT: dir });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "roster-verify-"));
    paths = rosterPaths({ ROSTER_ROOT: dir });
    api = await startBearerApi({ name: "api.test", address: ADDRESS, token: TOKEN, dir });
    expect((await runRoster(["init"], env())).code).toBe(0);
    await pointAtScriptedModel(paths, "http://127.0.0.1:9/v1", {
      gatewayExtra: `upstream_ca = [${JSON.stringify(api.caFile)}]\nresolve = { "api.test" = "${ADDRESS}", "mismatch.test" = "${ADDRESS}" }`,
    });
  });
  afterAll(async () => {
    await api?.upstream.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("says ok when the API takes the injected token, and failing (in ls too) when it refuses it", async () => {
    const added = await runRosterWithInput(
      [
        "connection",
        "add",
        "api",
        "--from",
        "bearer",
        "--host",
        "api.test",
        "--worker",
        "elf",
        "--verify-path",
        "/v1/me",
        "--verify",
      ],
      `${TOKEN}\n`,
      env(),
    );
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain(
      "verify api (as elf): ok: GET https://api.test/v1/me answered 200",
    );
    expect(api.upstream.seen.at(-1)?.headers.authorization).toBe(`Bearer ${TOKEN}`);

    const wrong = await runRosterWithInput(
      ["connection", "secret", "api", "--verify"],
      "not-the-token\n",
      env(),
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toContain(
      "verify api (as elf): failing: the API refused the credential: GET https://api.test/v1/me answered 401",
    );
    const ls = await runRoster(["connection", "ls"], env());
    expect(ls.stdout).toMatch(/^api {2}service {2}granted to elf {2}failing verify: /m);

    const fixed = await runRoster(
      ["connection", "secret", "api", "--secret-env", "API_TOKEN", "--verify"],
      {
        ...env(),
        API_TOKEN: TOKEN,
      },
    );
    expect(fixed.code, fixed.stderr).toBe(0);
    expect((await runRoster(["connection", "ls"], env())).stdout).toMatch(/^api .* ok: /m);
  });

  it("names a TLS failure and a DNS failure in one line", async () => {
    for (const [name, host] of [
      ["mismatch", "mismatch.test"],
      ["nowhere", "nowhere.invalid"],
    ] as const) {
      const added = await runRosterWithInput(
        [
          "connection",
          "add",
          name,
          "--from",
          "bearer",
          "--host",
          host,
          "--worker",
          "elf",
          "--verify",
        ],
        `${TOKEN}\n`,
        env(),
      );
      expect(added.code, added.stderr).toBe(1);
      const line = added.stdout.split("\n").find((text) => text.startsWith(`verify ${name}`));
      expect(line).toContain(`failing: GET https://${host}/ failed at the gateway: upstream:`);
      expect(line).toMatch(name === "mismatch" ? /ALTNAME|CERT/i : /ENOTFOUND|EAI_AGAIN/);
    }
  });

  it("refuses to verify a connection granted to nobody, and says how to grant it", async () => {
    const added = await runRosterWithInput(
      ["connection", "add", "lonely", "--from", "bearer", "--host", "api.test", "--verify"],
      `${TOKEN}\n`,
      env(),
    );
    expect(added.code).toBe(2);
    expect(added.stderr).toContain('"lonely" is granted to no worker');
    expect(added.stderr).toContain("roster connection grant lonely <worker>");
  });
});
