/**
 * `roster connection add --oauth`: consent instead of a pasted key, end to end
 * against a real OpenID Connect provider (the oidc-provider library, over TLS,
 * PKCE required): the scopes shown before the link, the code exchanged at the
 * loopback, the tokens in the vault, a call through the real gateway with the
 * access token injected, a refresh, and the revocation at `rm`. A denied
 * consent and the device flow each end the way a person expects, a refused
 * sign-in leaves nothing behind, and a redirect with a tampered state is
 * refused without ending the sign-in it was meant to spoil. No Docker.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { type CliResult, ROSTER_BIN, runRoster } from "../support/cli.ts";
import { OidcBrowser } from "../support/oidc-browser.ts";
import { CLIENT, type OidcProvider, startOidcProvider } from "../support/oidc-provider.ts";
import { spawnInPty } from "../support/pty.ts";
import { pointAtScriptedModel } from "../support/roster-root.ts";

const root = process.getuid?.() === 0;
if (!root) console.warn("skipping the OAuth sign-in test: its provider binds port 443");

const ADDRESS = "127.0.0.31";
const ISSUER = "https://auth.test";

/** A sign-in under way: what it said on stderr so far, and how it ended. */
interface SignIn {
  said(): string;
  /** The first line of stderr starting with `  https://` after `prefix`. */
  line(pattern: RegExp): Promise<RegExpExecArray>;
  done: Promise<CliResult>;
}

function startSignIn(args: string[], env: NodeJS.ProcessEnv): SignIn {
  const child: ChildProcess = spawn(process.execPath, [ROSTER_BIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const waiting: Array<() => void> = [];
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
    for (const wake of waiting.splice(0)) wake();
  });
  const done = new Promise<CliResult>((resolve) =>
    child.once("close", (code) => {
      for (const wake of waiting.splice(0)) wake();
      resolve({ code: code ?? 1, stdout, stderr });
    }),
  );
  let ended = false;
  void done.then(() => {
    ended = true;
  });
  return {
    said: () => stderr,
    async line(pattern) {
      for (;;) {
        const found = pattern.exec(stderr);
        if (found) return found;
        if (ended) throw new Error(`the sign-in ended without ${pattern}: ${stderr}`);
        await new Promise<void>((wake) => waiting.push(wake));
      }
    },
    done,
  };
}

describe.skipIf(!root)("roster connection add --oauth", () => {
  let dir: string;
  let paths: RosterPaths;
  let idp: OidcProvider;
  let browser: OidcBrowser;
  const env = () => ({ ROSTER_ROOT: dir, CRM_CLIENT_SECRET: CLIENT.secret });
  const vault = (name: string) =>
    JSON.parse(readFileSync(join(paths.vault, `${name}.json`), "utf8")) as Record<string, unknown>;
  const declared = (name: string, ...more: string[]) => [
    "connection",
    "add",
    name,
    "--declare",
    "--issuer",
    ISSUER,
    "--client-id",
    CLIENT.id,
    "--client-secret-env",
    "CRM_CLIENT_SECRET",
    "--scope",
    "openid offline_access crm.read",
    "--host",
    "auth.test",
    "--worker",
    "elf",
    "--verify-path",
    idp.userinfoPath,
    ...more,
  ];
  const linkOf = async (signIn: SignIn) =>
    new URL((await signIn.line(/^ {2}(https:\/\/\S+)$/m))[1] ?? "");
  const leftNothing = (name: string) => {
    expect(existsSync(join(paths.config, "connections", `${name}.toml`))).toBe(false);
    expect(existsSync(join(paths.vault, `${name}.json`))).toBe(false);
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "roster-oauth-"));
    paths = rosterPaths({ ROSTER_ROOT: dir });
    idp = await startOidcProvider({ names: ["auth.test"], address: ADDRESS, port: 443, dir });
    browser = new OidcBrowser({
      ca: readFileSync(idp.caFile, "utf8"),
      resolve: { "auth.test": ADDRESS },
    });
    expect((await runRoster(["init"], env())).code).toBe(0);
    await pointAtScriptedModel(paths, "http://127.0.0.1:9/v1", {
      gatewayExtra: `upstream_ca = [${JSON.stringify(idp.caFile)}]\nresolve = { "auth.test" = "${ADDRESS}" }`,
    });
  });
  afterAll(async () => {
    await browser?.close();
    await idp?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("signs in by consent, calls through the gateway with the token, refreshes it, and revokes it at rm", async () => {
    const signIn = startSignIn(declared("crm", "--verify"), env());
    const link = await linkOf(signIn);
    // the scopes are shown before the link, and the link asks for PKCE with S256
    const said = signIn.said();
    expect(said.indexOf("scopes asked for: openid offline_access crm.read")).toBeGreaterThan(-1);
    expect(said.indexOf("scopes asked for")).toBeLessThan(said.indexOf(link.href));
    expect(link.searchParams.get("code_challenge_method")).toBe("S256");
    expect(link.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(link.searchParams.get("redirect_uri")).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);

    const back = await browser.authorize(link.href, "allow");
    const page = await browser.deliver(back);
    expect(page.status).toBe(200);
    expect(page.body).toContain("Signed in");
    const added = await signIn.done;
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain("verify crm (as elf): ok");

    const file = join(paths.vault, "crm.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const first = vault("crm");
    expect(first).toMatchObject({
      token_url: `${ISSUER}/token`,
      client_id: CLIENT.id,
      scope: "openid offline_access crm.read",
    });
    expect(typeof first.access).toBe("string");
    expect(typeof first.refresh).toBe("string");
    expect(first.expires).toBeGreaterThan(Date.now());
    expect(await idp.accessValid(String(first.access))).toBe(true);
    // no token is printed anywhere
    for (const token of [first.access, first.refresh])
      expect(`${added.stdout}${added.stderr}`).not.toContain(String(token));
    const ls = await runRoster(["connection", "ls", "--json"], env());
    expect(JSON.parse(ls.stdout)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: "crm", scopes: ["openid", "offline_access", "crm.read"] }),
      ]),
    );

    // the token is due: the gateway refreshes it before the call, and the provider rotates both
    await writeFile(file, JSON.stringify({ ...first, expires: Date.now() - 1000 }), {
      mode: 0o600,
    });
    const verified = await runRoster(["connection", "verify", "crm"], env());
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toContain("verify crm (as elf): ok");
    const second = vault("crm");
    expect(second.access).not.toBe(first.access);
    expect(second.refresh).not.toBe(first.refresh);
    expect(await idp.refreshValid(String(first.refresh))).toBe(false);
    const audit = readFileSync(join(paths.audit, "credentials.jsonl"), "utf8");
    expect(audit).toContain('"outcome":"refreshed"');

    const removed = await runRoster(["connection", "rm", "crm", "--yes"], env());
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain("signed out: its tokens were revoked at auth.test");
    expect(await idp.refreshValid(String(second.refresh))).toBe(false);
    expect(await idp.accessValid(String(second.access))).toBe(false);
    leftNothing("crm");
  });

  it("stores nothing when consent is denied", async () => {
    const signIn = startSignIn(declared("denied"), env());
    const back = await browser.authorize((await linkOf(signIn)).href, "deny");
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect((await browser.deliver(back)).status).toBe(400);
    const ended = await signIn.done;
    expect(ended.code).toBe(1);
    expect(ended.stderr).toContain('consent was not given ("access_denied"');
    leftNothing("denied");
  });

  it("refuses an answer whose state was tampered with and keeps waiting for its own; a stolen code is useless without the verifier", async () => {
    const signIn = startSignIn(declared("forged"), env());
    const back = await browser.authorize((await linkOf(signIn)).href, "allow");
    const code = back.searchParams.get("code") ?? "";
    // anyone on this host can send the loopback a redirect: one with another state is refused…
    const forged = new URL(back);
    forged.searchParams.set("state", "a-state-of-someone-else");
    const refused = await browser.deliver(forged);
    expect(refused.status).toBe(400);
    expect(refused.body).toContain("not for the sign-in roster is waiting for");
    const denial = new URL(back.origin + back.pathname);
    denial.searchParams.set("state", "another-stale-state");
    denial.searchParams.set("error", "access_denied");
    expect((await browser.deliver(denial)).status).toBe(400);
    await signIn.line(/state that is not this sign-in's .*: ignored; still waiting/);
    // …whoever caught the code can't spend it: the provider wants the verifier only roster held
    const spent = await browser.exchange(code, back.origin + back.pathname);
    expect(spent.status).toBe(400);
    expect(spent.error).toBe("invalid_grant");
    // …and the sign-in still takes its own answer
    const page = await browser.deliver(back);
    expect(page.status).toBe(200);
    expect(page.body).toContain("Signed in");
    const ended = await signIn.done;
    expect(ended.code, ended.stderr).toBe(0);
    expect(await idp.accessValid(String(vault("forged").access))).toBe(true);
  });

  it("signs in by the device flow: a code entered on any browser", async () => {
    const signIn = startSignIn(declared("device", "--device"), env());
    const [, uri, code] = await signIn.line(
      /open (\S+) in any browser and enter the code (\S+)[ ;]/,
    );
    await browser.deviceConsent(uri ?? "", code ?? "", "allow");
    const ended = await signIn.done;
    expect(ended.code, ended.stderr).toBe(0);
    expect(await idp.accessValid(String(vault("device").access))).toBe(true);
  });

  it("takes the address a browser on another machine ended at, pasted on the terminal", async () => {
    const pty = spawnInPty([process.execPath, ROSTER_BIN, ...declared("pasted")], env());
    try {
      const [, link] = await pty.waitFor(/ {2}(https:\/\/auth\.test\S+)\n/);
      await pty.waitFor(/paste here the address it ended at/);
      // the browser ends at the loopback of a host it can't reach: nothing arrives there
      const back = await browser.authorize(link ?? "", "allow");
      pty.write("not an address\r");
      await pty.waitFor(/that is not the address the browser ended at/);
      pty.write(`${back.href}\r`);
      expect(await pty.exited).toBe(0);
    } finally {
      pty.kill();
    }
    expect(await idp.accessValid(String(vault("pasted").access))).toBe(true);
  });

  it("names the missing client id without a terminal, and asks nothing", async () => {
    const refused = await runRoster(["connection", "add", "google", "--worker", "elf"], env());
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("missing: --client-id <id>");
    expect(refused.stderr).toContain("console.cloud.google.com");
    leftNothing("google");
  });
});
