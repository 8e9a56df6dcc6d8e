import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRoots } from "../../runner/cli/does/init.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { writeVaultCredential } from "../../runner/ground/vault/vault-file.ts";
import { type RunningConsole, startConsole } from "../../runner/services/console/serve.ts";
import { runRoster, runRosterWithInput } from "../support/cli.ts";

/**
 * The console's connections page and the overview's count, over connections
 * the real CLI added with --expires, served by the real console over HTTP:
 * what expires within 7 days is marked, what has expired says so, what
 * expires in a month is not marked, and no secret value is on either page.
 */
const SECRETS = ["soon-secret-4a1b", "later-secret-9c2d", "gone-secret-7e3f", "proxy-pass-1x2y"];

let root: string;
let paths: RosterPaths;
let web: RunningConsole;
let cookie = "";
let token = "";

const env = () => ({ ROSTER_ROOT: root });

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "roster-console-connections-"));
  paths = rosterPaths({ ROSTER_ROOT: root });
  await initRoots(paths);
  const add = async (name: string, expires: string, secret: string) => {
    const added = await runRosterWithInput(
      [
        "connection",
        "add",
        name,
        "--from",
        "bearer",
        "--host",
        `${name}.test`,
        "--worker",
        "elf",
        "--expires",
        expires,
      ],
      `${secret}\n`,
      env(),
    );
    expect(added.code, added.stderr).toBe(0);
  };
  await add("soon", "3d", SECRETS[0] ?? "");
  await add("later", "30d", SECRETS[1] ?? "");
  await add("gone", "2020-01-01T00:00:00Z", SECRETS[2] ?? "");
  // a credential no connection names (the parent proxy's), expired
  await writeVaultCredential(
    paths.vault,
    "corp-proxy",
    { user: "alice", pass: SECRETS[3] ?? "" },
    { command: "login", operator: "cli:ann", expiresAt: new Date(Date.now() - 86_400_000) },
  );
  web = await startConsole({
    paths,
    listen: { host: "127.0.0.1", port: 0 },
    workers: () => ["elf"],
    sessions: async () => [],
  });
  const login = await fetch(web.loginUrl, { redirect: "manual" });
  cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  token = /#session=([\w-]+)$/.exec(login.headers.get("location") ?? "")?.[1] ?? "";
}, 120_000);

afterAll(async () => {
  await web?.close();
  await rm(root, { recursive: true, force: true });
});

async function pageOf(path: string): Promise<string> {
  const response = await fetch(`${web.url}${path}`, {
    headers: { cookie, "x-console-session": token },
  });
  expect(response.status, path).toBe(200);
  return await response.text();
}

/** A table row's cells as text, by its data attribute. */
function rowOf(page: string, attribute: string, name: string): string {
  const row = new RegExp(`<tr ${attribute}="${name}">([\\s\\S]*?)</tr>`).exec(page)?.[1];
  if (row === undefined) throw new Error(`no row ${attribute}="${name}" in the page`);
  return row;
}

describe("the console's connections page", () => {
  it("marks a credential expiring within 7 days and an expired one, not one a month off", async () => {
    const page = await pageOf("/connections");
    expect(page).toContain('<a href="/connections" aria-current="page">Connections</a>');

    const soon = rowOf(page, "data-connection", "soon");
    expect(soon).toMatch(/set \d+m ago \(connection add by cli:\S+\)/);
    expect(soon).toMatch(/data-expiry="expiring" class="state pending">EXPIRES in 2d</);
    const later = rowOf(page, "data-connection", "later");
    expect(later).toMatch(/data-expiry="ok">expires in 29d</);
    expect(later).not.toMatch(/EXPIRE|state (pending|deny)/);
    const gone = rowOf(page, "data-connection", "gone");
    expect(gone).toMatch(/data-expiry="expired" class="state deny">EXPIRED \d+d ago</);
    expect(gone).toContain("elf");

    // a credential no connection names is listed with its age too
    const proxy = rowOf(page, "data-credential", "corp-proxy");
    expect(proxy).toMatch(/set \d+m ago \(login by cli:ann\)/);
    expect(proxy).toMatch(/data-expiry="expired" class="state deny">EXPIRED 1d ago</);
    expect(page).toContain('data-expiring="1" data-expired="2"');

    for (const secret of SECRETS) expect(page).not.toContain(secret);
  });

  it("gives the overview the count, linking to the page", async () => {
    const page = await pageOf("/");
    expect(page).toMatch(
      /<p class="credentials" data-expiring="1" data-expired="2">Credentials: <span class="deny">2 expired<\/span>, <span class="pending">1 expiring within 7 days<\/span> — <a href="\/connections">/,
    );
    for (const secret of SECRETS) expect(page).not.toContain(secret);
  });

  it("agrees with connection ls, word for word", async () => {
    const ls = await runRoster(["connection", "ls"], env());
    expect(ls.code, ls.stderr).toBe(0);
    const page = await pageOf("/connections");
    for (const name of ["soon", "later", "gone"]) {
      const expiry = />((?:EXPIRES|EXPIRED|expires) [^<]+)</.exec(
        rowOf(page, "data-connection", name),
      )?.[1];
      expect(ls.stdout).toMatch(new RegExp(`^${name} .*; ${expiry}$`, "m"));
    }
  });
});
